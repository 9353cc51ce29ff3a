package parse

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantOpt builds an expected option.
func wantOpt(name, value string, argi int) Option {
	return Option{Name: name, Value: value, Argi: argi}
}

func dynOpt(name, value string, argi int) Option {
	return Option{Name: name, Value: value, Argi: argi, Dynamic: true}
}

// TestOptions checks the options of the first command of each script: every spelling a
// tool accepts gives the canonical name and the value.
func TestOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		want   []Option
	}{
		// tar: short attached, separate, in a cluster, old style, long with = or two
		// words, abbreviated, after the operands, by an absolute path
		{"tar -Iprog -cf a.tgz d", []Option{wantOpt("--use-compress-program", "prog", 1), wantOpt("--create", "", 2), wantOpt("--file", "a.tgz", 2)}},
		{"tar -I prog -cf a.tgz d", []Option{wantOpt("--use-compress-program", "prog", 1), wantOpt("--create", "", 3), wantOpt("--file", "a.tgz", 3)}},
		{"tar -cvIprog -f a.tgz d", []Option{wantOpt("--create", "", 1), wantOpt("--verbose", "", 1), wantOpt("--use-compress-program", "prog", 1), wantOpt("--file", "a.tgz", 2)}},
		{"tar cIf prog a.tgz d", []Option{wantOpt("--create", "", 1), wantOpt("--use-compress-program", "prog", 1), wantOpt("--file", "a.tgz", 1)}},
		{"tar --use-compress-program=prog -cf a d", []Option{wantOpt("--use-compress-program", "prog", 1), wantOpt("--create", "", 2), wantOpt("--file", "a", 2)}},
		{"tar --use-compress-program prog -cf a d", []Option{wantOpt("--use-compress-program", "prog", 1), wantOpt("--create", "", 3), wantOpt("--file", "a", 3)}},
		{"tar --use-compress-prog=prog x", []Option{wantOpt("--use-compress-program", "prog", 1)}},
		{"tar --use prog x", []Option{wantOpt("--use-compress-program", "prog", 1)}},
		{"tar -cf a d --checkpoint-act=exec=sh", []Option{wantOpt("--create", "", 1), wantOpt("--file", "a", 1), wantOpt("--checkpoint-action", "exec=sh", 4)}},
		{"tar --checkpoint=1 x", []Option{wantOpt("--checkpoint", "1", 1)}},
		{"tar --new-volume-script=s x", []Option{wantOpt("--info-script", "s", 1)}},
		{"/usr/bin/tar -F s x", []Option{wantOpt("--info-script", "s", 1)}},
		// an ambiguous abbreviation names every candidate
		{"tar --che=x", []Option{wantOpt("--check-device", "x", 1), wantOpt("--check-links", "x", 1), wantOpt("--checkpoint", "x", 1), wantOpt("--checkpoint-action", "x", 1)}},
		// run-time parts
		{`tar -I"$P" x`, []Option{dynOpt("--use-compress-program", "$P", 1)}},
		{`tar -$X x`, []Option{dynOpt("-$X", "", 1)}},
		{`tar --$X=1 x`, []Option{dynOpt("--$X=1", "", 1)}},
		{"tar -cf a -- -Ix", []Option{wantOpt("--create", "", 1), wantOpt("--file", "a", 1)}},
		// git: its own options (exact, ending at the subcommand), then the subcommand's
		{"git -c core.pager=less log", []Option{wantOpt("-c", "core.pager=less", 1)}},
		{"git -ccore.pager=less log", []Option{wantOpt("-c", "core.pager=less", 1)}},
		{"git -C /tmp --exec-path=/x status -s", []Option{wantOpt("-C", "/tmp", 1), wantOpt("--exec-path", "/x", 3), wantOpt("-s", "", 5)}},
		{"git --exec-pa=/x status", []Option{wantOpt("--exec-pa", "/x", 1)}},
		{"git clone -u prog r", []Option{wantOpt("--upload-pack", "prog", 2)}},
		{"git clone -uprog r", []Option{wantOpt("--upload-pack", "prog", 2)}},
		{"git clone --upload-pa=prog r", []Option{wantOpt("--upload-pack", "prog", 2)}},
		{"git clone --u prog r", []Option{wantOpt("--upload-pack", "prog", 2)}},
		{"git clone -q r d -c core.sshCommand=x", []Option{wantOpt("--quiet", "", 2), wantOpt("--config", "core.sshCommand=x", 5)}},
		{"git grep -Oprog x", []Option{wantOpt("--open-files-in-pager", "prog", 2)}},
		{"git grep -O x", []Option{wantOpt("--open-files-in-pager", "", 2)}},
		{"git rebase -xcmd main", []Option{wantOpt("--exec", "cmd", 2)}},
		{"git log --ext-diff -p", []Option{wantOpt("--ext-diff", "", 2), wantOpt("-p", "", 3)}},
		// find: single-dash words; -exec's command is not find's
		{"find . -name '*.go' -exec rm -rf {} ;", []Option{wantOpt("-name", "*.go", 2), wantOpt("-exec", "rm", 4)}},
		{"find . -execdir sh -c x {} + -print", []Option{wantOpt("-execdir", "sh", 2), wantOpt("-print", "", 8)}},
		// zip: two-letter options
		{"zip -TT prog z f", []Option{wantOpt("--unzip-command", "prog", 1)}},
		{"zip -TTprog z f", []Option{wantOpt("--unzip-command", "prog", 1)}},
		{"zip -qTT prog -T z f", []Option{wantOpt("--quiet", "", 1), wantOpt("--unzip-command", "prog", 1), wantOpt("--test", "", 3)}},
		{"zip z f --unzip-c prog", []Option{wantOpt("--unzip-command", "prog", 3)}},
		{"zip -ds 10 z f", []Option{wantOpt("--dot-size", "10", 1)}},
		// ssh: BSD getopt; options after the destination too
		{"ssh -oProxyCommand=x h", []Option{wantOpt("-o", "ProxyCommand=x", 1)}},
		{"ssh -4o ProxyCommand=x h", []Option{wantOpt("-4", "", 1), wantOpt("-o", "ProxyCommand=x", 1)}},
		{"ssh h -o 'ProxyCommand x'", []Option{wantOpt("-o", "ProxyCommand x", 2)}},
		// Go flags
		{"go build -toolexec=x ./...", []Option{wantOpt("-toolexec", "x", 2)}},
		{"go test --toolexec x -run T ./...", []Option{wantOpt("-toolexec", "x", 2), wantOpt("-run", "T", 4)}},
		// options end at the first operand: the command a wrapper runs
		{"env -i -S 'a b' A=1 tar -Ix", []Option{wantOpt("--ignore-environment", "", 1), wantOpt("--split-string", "a b", 2)}},
		{"xargs -I{} tar -Ix {}", []Option{wantOpt("-I", "{}", 1)}},
		{"timeout -s KILL 5 tar -Ix", []Option{wantOpt("--signal", "KILL", 1)}},
		{"awk -f prog.awk -v x=1 file -f y", []Option{wantOpt("--file", "prog.awk", 1), wantOpt("--assign", "x=1", 3)}},
		{"bash -o pipefail -c 'x' -z", []Option{wantOpt("-o", "pipefail", 1), wantOpt("-c", "", 3)}},
		// sed, sort, make
		{"sed --expr=1e f", []Option{wantOpt("--expression", "1e", 1)}},
		{"sed -ne1e f", []Option{wantOpt("--quiet", "", 1), wantOpt("--expression", "1e", 1)}},
		{"sort --compress-p prog f", []Option{wantOpt("--compress-program", "prog", 1)}},
		{"make --ev='$(x)' all", []Option{wantOpt("--eval", "$(x)", 1)}},
		// a tool parse has no table for: long options keep their value, clusters split
		{"frob --out=x -ab --in y", []Option{wantOpt("--out", "x", 1), wantOpt("-a", "", 2), wantOpt("-b", "", 2), wantOpt("--in", "", 3)}},
		{"ls", []Option{}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			doc := Script(tt.script, goldenOptions)
			if doc.Error != nil || len(doc.Commands) == 0 {
				t.Fatalf("Script(%q): error %v, %d commands", tt.script, doc.Error, len(doc.Commands))
			}
			if diff := cmp.Diff(tt.want, doc.Commands[0].Options); diff != "" {
				t.Errorf("Script(%q) options (-want +got):\n%s", tt.script, diff)
			}
		})
	}
}

// spellable is an option and the ways its tool lets it be written.
type spellable struct {
	tool   string
	canon  string
	short  string   // the short name without "-" ("" when none)
	long   []string // every long name, with "--" (or "-" for single-dash tools)
	prefix int      // the shortest unambiguous length of the first long name ("--" included), 0 when the tool does not abbreviate
	flag   string   // a value-less short option of the tool, to build clusters
	before string   // words between the tool and the option (a subcommand)
}

var spellables = []spellable{
	{tool: "tar", canon: "--use-compress-program", short: "I", long: []string{"--use-compress-program"}, prefix: 5, flag: "v"},
	{tool: "tar", canon: "--info-script", short: "F", long: []string{"--info-script", "--new-volume-script"}, prefix: 4, flag: "v"},
	{tool: "tar", canon: "--to-command", long: []string{"--to-command"}, prefix: 6, flag: "v"},
	{tool: "sort", canon: "--compress-program", long: []string{"--compress-program"}, prefix: 5, flag: "r"},
	{tool: "zip", canon: "--unzip-command", short: "TT", long: []string{"--unzip-command"}, prefix: 6, flag: "q"},
	{tool: "sed", canon: "--expression", short: "e", long: []string{"--expression"}, prefix: 5, flag: "n"},
	{tool: "git", canon: "--upload-pack", short: "u", long: []string{"--upload-pack"}, prefix: 3, flag: "q", before: "clone"},
	{tool: "git", canon: "--exec", short: "x", long: []string{"--exec"}, prefix: 5, flag: "q", before: "rebase"},
	{tool: "env", canon: "--split-string", short: "S", long: []string{"--split-string"}, prefix: 4, flag: "i"},
	{tool: "ssh", canon: "-o", short: "o", flag: "4"},
	{tool: "make", canon: "--eval", short: "E", long: []string{"--eval"}, prefix: 4, flag: "s"},
	{tool: "go", canon: "-toolexec", long: []string{"-toolexec"}, before: "build"},
}

// spellings returns every spelling of s with value v, as shell words after the tool.
func spellings(s spellable, v string) []string {
	var out []string
	if s.short != "" {
		out = append(out, "-"+s.short+v, "-"+s.short+" "+v, "-"+s.flag+s.short+" "+v, "-"+s.flag+s.short+v)
	}
	for _, l := range s.long {
		out = append(out, l+"="+v, l+" "+v)
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--") {
			out = append(out, "-"+l+"="+v, "-"+l+" "+v) // Go flags take two dashes too
		}
	}
	if s.prefix > 0 {
		l := s.long[0]
		for n := s.prefix; n < len(l); n++ {
			out = append(out, l[:n]+"="+v, l[:n]+" "+v)
		}
	}
	return out
}

// TestOptionSpellings builds every spelling of options of many tools, by path or not,
// before or after operands, and checks they all give the one canonical entry.
func TestOptionSpellings(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	for _, s := range spellables {
		for _, sp := range spellings(s, "P") {
			for _, path := range []string{s.tool, "/usr/bin/" + s.tool} {
				pre := path
				if s.before != "" {
					pre += " " + s.before
				}
				scripts := []string{pre + " " + sp + " operand"}
				if s.tool != "env" && s.tool != "go" { // env's options end at its command
					scripts = append(scripts, pre+" operand "+sp)
				}
				script := scripts[r.IntN(len(scripts))]
				t.Run(script, func(t *testing.T) {
					doc := Script(script, goldenOptions)
					if doc.Error != nil {
						t.Fatalf("Script(%q): %v", script, doc.Error)
					}
					found := false
					for _, o := range doc.Commands[0].Options {
						if o.Name == s.canon && o.Value == "P" {
							found = true
						}
					}
					if !found {
						t.Errorf("Script(%q) options = %v, want {%s P}", script, doc.Commands[0].Options, s.canon)
					}
				})
			}
		}
	}
}

// TestOptionsWrapped: a wrapped tool's options are its own, read with its table.
func TestOptionsWrapped(t *testing.T) {
	t.Parallel()
	for _, script := range []string{
		"timeout 5 tar -Iprog x", "env A=1 tar --use=prog x", "nice -n 5 /bin/tar cIf prog a d",
		"bash -c 'tar -cIprog -f a d'", "sudo -u x tar -I prog x", "xargs tar -Iprog",
		"f() { tar -I prog x; }",
	} {
		doc := Script(script, goldenOptions)
		found := false
		for _, c := range doc.Commands {
			for _, o := range c.Options {
				found = found || (c.Name == "tar" && o.Name == "--use-compress-program" && o.Value == "prog")
			}
		}
		if !found {
			t.Errorf("Script(%q): no tar --use-compress-program prog in %s", script, fmt.Sprint(doc.Commands))
		}
	}
}
