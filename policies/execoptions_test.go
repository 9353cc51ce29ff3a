package policies

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cmdgate/cmdgate/parse"
)

// execSpelling is what a tool accepts as the spellings of one exec-capable option of
// data.cmdgate.lists.exec_options, written from the tool's usage (and checked against
// the installed tools by TestExecOptionsRunInTools).
type execSpelling struct {
	tool, sub string // the tool key, and the subcommand the option belongs to ("" none)
	name      string // the canonical name, as exec_options lists it
	short     string // the short name without "-" ("" none)
	long      []string
	abbrev    bool     // the tool accepts unambiguous prefixes of long names (GNU getopt, git, nopt)
	exact     []string // other options a prefix would name exactly (not this one)
	flag      string   // a value-less short option of the tool, for clusters
	value     string   // a value that makes the option run a program
	operands  string   // the rest of an ordinary command line
	stop      bool     // the tool's options end at its first operand
	old       bool     // tar: the old style (first word without a dash)
}

var execSpellings = []execSpelling{
	{tool: "tar", name: "--use-compress-program", short: "I", long: []string{"--use-compress-program"}, abbrev: true, flag: "v", value: "sh", operands: "-cf a.tar src", old: true},
	{tool: "tar", name: "--info-script", short: "F", long: []string{"--info-script", "--new-volume-script"}, abbrev: true, flag: "v", value: "sh", operands: "-cf a.tar src", old: true},
	{tool: "tar", name: "--checkpoint-action", long: []string{"--checkpoint-action"}, abbrev: true, exact: []string{"--checkpoint"}, value: "exec=sh", operands: "--checkpoint=1 -cf a.tar src"},
	{tool: "tar", name: "--to-command", long: []string{"--to-command"}, abbrev: true, value: "sh", operands: "-xf a.tar"},
	{tool: "tar", name: "--rsh-command", long: []string{"--rsh-command"}, abbrev: true, value: "sh", operands: "-tf h:a.tar"},
	{tool: "tar", name: "--rmt-command", long: []string{"--rmt-command"}, abbrev: true, value: "sh", operands: "-tf h:a.tar"},
	{tool: "zip", name: "--unzip-command", short: "TT", long: []string{"--unzip-command"}, abbrev: true, flag: "q", value: "sh", operands: "-T z.zip f"},
	{tool: "sort", name: "--compress-program", long: []string{"--compress-program"}, abbrev: true, flag: "r", value: "sh", operands: "-S 1K f"},
	{tool: "split", name: "--filter", long: []string{"--filter"}, abbrev: true, flag: "d", value: "sh", operands: "f"},
	{tool: "rsync", name: "--rsh", short: "e", long: []string{"--rsh"}, abbrev: true, flag: "a", value: "sh", operands: "a h:b"},
	{tool: "rsync", name: "--rsync-path", long: []string{"--rsync-path"}, abbrev: true, flag: "a", value: "sh", operands: "a h:b"},
	{tool: "ssh", name: "-o", short: "o", flag: "4", value: "ProxyCommand=sh", operands: "h"},
	{tool: "ssh", name: "-F", short: "F", flag: "4", value: "cfg", operands: "h"},
	{tool: "ssh", name: "-I", short: "I", flag: "4", value: "lib.so", operands: "h"},
	{tool: "scp", name: "-S", short: "S", flag: "3", value: "sh", operands: "a h:b"},
	{tool: "scp", name: "-D", short: "D", flag: "3", value: "sh", operands: "a h:b"},
	{tool: "scp", name: "-F", short: "F", flag: "3", value: "cfg", operands: "a h:b"},
	{tool: "scp", name: "-o", short: "o", flag: "3", value: "LocalCommand=sh", operands: "a h:b"},
	{tool: "sftp", name: "-S", short: "S", flag: "4", value: "sh", operands: "h"},
	{tool: "sftp", name: "-D", short: "D", flag: "4", value: "sh", operands: "h"},
	{tool: "sftp", name: "-F", short: "F", flag: "4", value: "cfg", operands: "h"},
	{tool: "sftp", name: "-b", short: "b", flag: "4", value: "batch", operands: "h"},
	{tool: "sftp", name: "-o", short: "o", flag: "4", value: "proxycommand=sh", operands: "h"},
	{tool: "git", name: "--exec-path", long: []string{"--exec-path"}, value: "/tmp", operands: "status", stop: true},
	{tool: "git", name: "--ext-diff", long: []string{"--ext-diff"}, sub: "diff", operands: "HEAD"},
	{tool: "git", sub: "clone", name: "--upload-pack", short: "u", long: []string{"--upload-pack"}, abbrev: true, flag: "q", value: "sh", operands: "r d"},
	{tool: "git", sub: "clone", name: "--template", long: []string{"--template"}, abbrev: true, flag: "q", value: "/tmp/t", operands: "r d"},
	{tool: "git", sub: "init", name: "--template", long: []string{"--template"}, abbrev: true, flag: "q", value: "/tmp/t", operands: "d"},
	{tool: "git", sub: "fetch", name: "--upload-pack", long: []string{"--upload-pack"}, abbrev: true, flag: "q", value: "sh", operands: "origin"},
	{tool: "git", sub: "pull", name: "--upload-pack", long: []string{"--upload-pack"}, abbrev: true, flag: "q", value: "sh", operands: "origin"},
	{tool: "git", sub: "ls-remote", name: "--upload-pack", long: []string{"--upload-pack", "--exec"}, abbrev: true, flag: "q", value: "sh", operands: "origin"},
	{tool: "git", sub: "fetch-pack", name: "--upload-pack", long: []string{"--upload-pack", "--exec"}, abbrev: true, flag: "q", value: "sh", operands: "h:r"},
	{tool: "git", sub: "archive", name: "--exec", long: []string{"--exec"}, abbrev: true, flag: "v", value: "sh", operands: "--remote=h:r HEAD"},
	{tool: "git", sub: "push", name: "--receive-pack", long: []string{"--receive-pack", "--exec"}, abbrev: true, flag: "q", value: "sh", operands: "origin main"},
	{tool: "git", sub: "send-pack", name: "--receive-pack", long: []string{"--receive-pack", "--exec"}, abbrev: true, flag: "q", value: "sh", operands: "h:r main"},
	{tool: "git", sub: "grep", name: "--open-files-in-pager", short: "O", long: []string{"--open-files-in-pager"}, abbrev: true, flag: "n", value: "sh", operands: "TODO"},
	{tool: "git", sub: "rebase", name: "--exec", short: "x", long: []string{"--exec"}, abbrev: true, flag: "q", value: "sh", operands: "main"},
	{tool: "git", sub: "difftool", name: "--extcmd", short: "x", long: []string{"--extcmd"}, abbrev: true, flag: "y", value: "sh", operands: "HEAD"},
	{tool: "sed", name: "--file", short: "f", long: []string{"--file"}, abbrev: true, flag: "n", value: "s.sed", operands: "f"},
	{tool: "awk", name: "--file", short: "f", long: []string{"--file"}, abbrev: true, flag: "b", value: "p.awk", operands: "f", stop: true},
	{tool: "awk", name: "--exec", short: "E", long: []string{"--exec"}, abbrev: true, flag: "b", value: "p.awk", operands: "f", stop: true},
	{tool: "awk", name: "--include", short: "i", long: []string{"--include"}, abbrev: true, flag: "b", value: "p.awk", operands: "1 f", stop: true},
	{tool: "awk", name: "--load", short: "l", long: []string{"--load"}, abbrev: true, flag: "b", value: "ext", operands: "1 f", stop: true},
	{tool: "env", name: "--split-string", short: "S", long: []string{"--split-string"}, abbrev: true, flag: "i", value: "sh", stop: true},
	{tool: "make", name: "--eval", short: "E", long: []string{"--eval"}, abbrev: true, flag: "s", value: "X:=1", operands: "all"},
	{tool: "curl", name: "--config", short: "K", long: []string{"--config"}, abbrev: true, flag: "s", value: "c.txt", operands: "https://x.example/"},
	{tool: "wget", name: "--config", long: []string{"--config"}, abbrev: true, flag: "q", value: "c.txt", operands: "https://x.example/"},
	{tool: "wget", name: "--use-askpass", long: []string{"--use-askpass"}, abbrev: true, flag: "q", value: "sh", operands: "https://x.example/"},
	{tool: "wget", name: "--execute", short: "e", long: []string{"--execute"}, abbrev: true, flag: "q", value: "use_askpass=sh", operands: "https://x.example/"},
	{tool: "rg", name: "--pre", long: []string{"--pre"}, value: "sh", operands: "TODO ."},
	{tool: "rg", name: "--hostname-bin", long: []string{"--hostname-bin"}, value: "sh", operands: "TODO ."},
	{tool: "go", name: "-toolexec", long: []string{"-toolexec", "--toolexec"}, value: "sh", sub: "build", operands: "./..."},
	{tool: "go", name: "-exec", long: []string{"-exec", "--exec"}, value: "sh", sub: "test", operands: "./..."},
	{tool: "go", name: "-vettool", long: []string{"-vettool", "--vettool"}, value: "sh", sub: "vet", operands: "./..."},
	{tool: "cargo", name: "--config", long: []string{"--config"}, value: "target.x.runner=sh", sub: "test"},
	{tool: "npm", name: "--script-shell", long: []string{"--script-shell"}, abbrev: true, value: "sh", sub: "test"},
	{tool: "man", name: "--pager", short: "P", long: []string{"--pager"}, abbrev: true, flag: "a", value: "sh", operands: "ls"},
	{tool: "man", name: "--html", short: "H", long: []string{"--html"}, value: "sh", operands: "ls"},
	{tool: "man", name: "--gxditview", short: "X", long: []string{"--gxditview"}, value: "sh", operands: "ls"},
	{tool: "man", name: "--config-file", short: "C", long: []string{"--config-file"}, abbrev: true, flag: "a", value: "cfg", operands: "ls"},
}

// optional reports the options whose value is only taken after "=" or attached.
var optionalValue = map[string]bool{"--open-files-in-pager": true, "--html": true, "--gxditview": true, "--exec-path": true}

// spellingsOf returns the words (after the tool and its subcommand) that spell s, with
// the operands of an ordinary command line around them.
func spellingsOf(s execSpelling) []string {
	v := s.value
	var opts []string
	if s.short != "" {
		opts = append(opts, "-"+s.short+v)
		if v == "" || !optionalValue[s.name] {
			if v != "" {
				opts = append(opts, "-"+s.short+" "+v)
			}
			if s.flag != "" {
				opts = append(opts, "-"+s.flag+s.short+v)
				if v != "" {
					opts = append(opts, "-"+s.flag+s.short+" "+v)
				}
			}
		}
	}
	longs := slices.Clone(s.long)
	if s.abbrev {
		for _, l := range s.long {
			for n := 3; n < len(l); n++ {
				if !slices.Contains(s.exact, l[:n]) {
					longs = append(longs, l[:n])
				}
			}
		}
	}
	for _, l := range longs {
		if v == "" {
			opts = append(opts, l)
			continue
		}
		opts = append(opts, l+"="+v)
		if !optionalValue[s.name] {
			opts = append(opts, l+" "+v)
		}
	}
	var out []string
	if s.old { // tar's old style: the letters first, their values after in order
		out = append(out, fmt.Sprintf("c%sf %s a.tar src", s.short, v), fmt.Sprintf("%sc %s -f a.tar src", s.short, v))
	}
	for _, o := range opts {
		out = append(out, strings.TrimSpace(o+" "+s.operands))
		if !s.stop && s.operands != "" {
			out = append(out, s.operands+" "+o)
		}
	}
	return out
}

// invocations run a tool's command line: by name, by path, behind wrappers, through a
// shell, in a function body.
var invocations = []string{"%s", "/usr/bin/%s", "/bin/%s", "timeout 5 %s", "nice -n 5 %s",
	"env A=1 %s", "bash -c '%s'", "sh -c \"%s\"", "f() { %s; }; f", "time %s"}

// TestExecOptionSpellings writes every exec-capable option of the bundle
// (data.cmdgate.lists.exec_options) in every spelling its tool accepts (short, attached,
// in a cluster, tar's old style, long with "=" or two words, every abbreviation, after
// the operands), run by name, by path, behind a wrapper, through a shell or in a
// function body chosen at random, and checks that the default policy denies each with
// the option's rule under both profiles. The bundle cannot list an option this test
// does not spell.
func TestExecOptionSpellings(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("bundle", "cmdgate", "lists", "data.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lists struct {
		ExecOptions map[string]struct {
			Rule        string                    `yaml:"rule"`
			Options     map[string]any            `yaml:"options"`
			Subcommands map[string]map[string]any `yaml:"subcommands"`
		} `yaml:"exec_options"`
	}
	if err := yaml.Unmarshal(raw, &lists); err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{}
	for tool, spec := range lists.ExecOptions {
		rules[tool] = spec.Rule
		for name := range spec.Options {
			if !spelled(tool, "", name) {
				t.Errorf("exec_options.%s lists %s, which execSpellings does not spell", tool, name)
			}
		}
		for sub, opts := range spec.Subcommands {
			for name := range opts {
				if !spelled(tool, sub, name) {
					t.Errorf("exec_options.%s.subcommands.%s lists %s, which execSpellings does not spell", tool, sub, name)
				}
			}
		}
	}
	engines := map[string]*Engine{}
	for _, p := range []string{ProfileStrict, ProfileSandboxed} {
		e, err := New(t.Context(), WithConfig(Config{Profile: p}))
		if err != nil {
			t.Fatal(err)
		}
		engines[p] = e
	}
	r := rand.New(rand.NewPCG(3, 5))
	n := 0
	for _, s := range execSpellings {
		rule := rules[s.tool]
		if rule == "" {
			t.Errorf("execSpellings spells %s %s, which exec_options does not list", s.tool, s.name)
			continue
		}
		for _, words := range spellingsOf(s) {
			line := s.tool
			if s.tool == "git" && s.sub == "" {
				line += " " + words // git's own options come before the subcommand
			} else {
				if s.sub != "" {
					line += " " + s.sub
				}
				line += " " + words
			}
			script := fmt.Sprintf(invocations[r.IntN(len(invocations))], line)
			n++
			for profile, e := range engines {
				d, err := e.Decide(t.Context(), parse.Script(script, corpusOptions))
				if err != nil {
					t.Fatalf("Decide(%q): %v", script, err)
				}
				if d.Action != ActionDeny || !hasRule(d.Reasons, rule) {
					t.Errorf("%s: Decide(%q) = %s, want deny with %s\n%s", profile, script, d.Action, rule, formatReasons(d.Reasons))
				}
			}
		}
	}
	t.Logf("%d spellings of %d options", n, len(execSpellings))
}

// spelled reports whether execSpellings spells the option name of tool: one of the
// tool's own options (sub "", which may be written after a subcommand), or one of sub's.
func spelled(tool, sub, name string) bool {
	for _, s := range execSpellings {
		if s.tool == tool && s.name == name && (sub == "" || s.sub == sub) {
			return true
		}
	}
	return false
}
