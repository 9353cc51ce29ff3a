package policies_test

// The proof that the classes the policy stops are real: each script here hides a
// command (creating the file cg-marker) that bash runs although no command of the
// script names it, through an evaluating expansion or an option that runs a program.
// The test checks that the default policy refuses each one (deny, or ask where the
// value is known only at run time), then runs it in the linux sandbox and checks that
// the hidden command did run. Where the sandbox cannot be built here, the scripts run in
// plain bash instead (bash --norc --noprofile, an empty environment but PATH and HOME,
// in a temporary directory): the payloads only create that file.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/cmdgate/cmdgate/parse"
	"github.com/cmdgate/cmdgate/policies"
)

const marker = "cg-marker"

// proofCase is a script that runs a hidden command, and the rule that stops it.
type proofCase struct {
	script string
	rule   string
	tools  []string // programs the script needs besides bash
}

var evaluationProofs = []proofCase{
	// prompt expansion, with the value assigned earlier in escaped forms
	{`x='\140touch cg-marker\140'; echo "${x@P}"`, "escape.evaluated_expansion", nil},
	{`x='$(touch cg-marker)'; echo ${x@P}`, "escape.evaluated_expansion", nil},
	{`x=$'\x24(touch cg-marker)'; echo ${x@P}`, "escape.evaluated_expansion", nil},
	{`printf -v y '\140touch cg-marker\140'; echo ${y@P}`, "escape.evaluated_expansion", nil},
	{`printf -v y '%s' '$(touch cg-marker)'; echo ${y@P}`, "escape.evaluated_expansion", nil},
	{`read -r y <<< '\140touch cg-marker\140'; echo ${y@P}`, "escape.evaluated_expansion", nil},
	// arithmetic in every context, indirect expansion, namerefs, variable names
	{`read -r v <<< 'x[$(touch cg-marker)]'; [[ $v -eq 1 ]]`, "escape.evaluated_expansion", nil},
	{`a='x[$(touch cg-marker)]'; echo $((a))`, "escape.evaluated_expansion", nil},
	{`a='x[$(touch cg-marker)]'; (( a ))`, "escape.evaluated_expansion", nil},
	{`a='x[$(touch cg-marker)]'; let b=a+1`, "escape.evaluated_expansion", nil},
	{`a='x[$(touch cg-marker)]'; for ((i = a; i < 0; i++)); do :; done`, "escape.evaluated_expansion", nil},
	{`x='a[$(touch cg-marker)]'; echo ${!x}`, "escape.evaluated_expansion", nil},
	{`i='x[$(touch cg-marker)]'; z=(a); echo ${z[i]}`, "escape.evaluated_expansion", nil},
	{`i='x[$(touch cg-marker)]'; z=(); z[i]=1`, "escape.evaluated_expansion", nil},
	{`i='x[$(touch cg-marker)]'; s=abc; echo ${s:i:1}`, "escape.evaluated_expansion", nil},
	{`i='x[$(touch cg-marker)]'; declare -i n; n=i`, "escape.evaluated_expansion", nil},
	{`i='x[$(touch cg-marker)]'; RANDOM=$i`, "escape.evaluated_expansion", nil},
	{`declare -n r='x[$(touch cg-marker)]'; echo $r`, "escape.evaluated_expansion", nil},
	{`read 'x[$(touch cg-marker)]' <<< 1`, "escape.evaluated_expansion", nil},
	{`test -v 'x[$(touch cg-marker)]'`, "escape.evaluated_expansion", nil},
	{`for v in 'x[$(touch cg-marker)]'; do echo $((v)); done`, "escape.evaluated_expansion", nil},
	// compositions: behind a wrapper, in sh -c, in a function body, from an env prefix
	{`x='\140touch cg-marker\140'; timeout 5 echo "${x@P}"`, "escape.evaluated_expansion", nil},
	{`bash -c 'x="\140touch cg-marker\140"; echo "${x@P}"'`, "escape.evaluated_expansion", nil},
	{`f() { local a='x[$(touch cg-marker)]'; echo $((a)); }; f`, "escape.evaluated_expansion", nil},
	{`x='\140touch cg-marker\140' bash -c 'echo "${x@P}"'`, "escape.evaluated_expansion", nil},
	// values known only at run time
	{`printf '%s\n' 'x[$(touch cg-marker)]' > v.txt; read -r v < v.txt; [[ $v -gt 0 ]]`, "dynamic.evaluated_value", nil},
	{`printf '%s\n' 'x[$(touch cg-marker)]' > v.txt; read -r v < v.txt; echo ${v@P}`, "dynamic.evaluated_value", nil},
}

// prog is a program the option proofs hand to a tool: it creates the marker and
// passes its input on.
const prog = `printf '#!/bin/sh\ntouch cg-marker\ncat\n' > p; chmod +x p; mkdir -p src; echo x > src/f; `

// gitProg is the upload-pack the git proofs give: it creates the marker and exits (git
// then gives up on the clone).
const gitProg = `printf '#!/bin/sh\ntouch cg-marker\n' > q; chmod +x q; `

var optionProofs = []proofCase{
	{prog + `tar -I./p -cf a.tgz src`, "escape.tar_exec", []string{"tar"}},
	{prog + `tar -cvI./p -f a.tgz src`, "escape.tar_exec", []string{"tar"}},
	{prog + `tar cIf ./p a.tgz src`, "escape.tar_exec", []string{"tar"}},
	{prog + `tar --use-compress-prog=./p -cf a.tgz src`, "escape.tar_exec", []string{"tar"}},
	{prog + `/usr/bin/tar --use=./p -cf a.tgz src`, "escape.tar_exec", []string{"tar"}},
	{prog + `tar -cf a.tgz src --use-compress-program ./p`, "escape.tar_exec", []string{"tar"}},
	{prog + `tar --checkpoint=1 --checkpoint-act=exec=./p -cf a.tar src`, "escape.tar_exec", []string{"tar"}},
	{prog + `tar -cf a.tar src; tar -x --to-c=./p -f a.tar`, "escape.tar_exec", []string{"tar"}},
	{prog + `seq 1 200000 > big; sort --compress-p ./p -S 100K -T . big > /dev/null`, "escape.sort_compress_program", []string{"sort", "seq"}},
	{prog + `seq 1 200000 > big; sort -S 100K -T . big --com=./p > /dev/null`, "escape.sort_compress_program", []string{"sort", "seq"}},
	{`echo x > f; sed -n --expr='1e touch cg-marker' f`, "escape.sed_exec", []string{"sed"}},
	{`echo '1e touch cg-marker' > s.sed; echo x > f; sed --fi=s.sed f`, "escape.sed_script_file", []string{"sed"}},
	{`env --split-s='touch cg-marker'`, "escape.env_split", []string{"env"}},
	{`env -iS'touch cg-marker'`, "escape.env_split", []string{"env"}},
	{gitProg + `git init -q r && git clone -q --upload-pa=./q r d`, "escape.git_exec", []string{"git"}},
	{gitProg + `git init -q r && git clone -q -u./q r d`, "escape.git_exec", []string{"git"}},
	{`find . -maxdepth 0 -exec sh -c 'touch cg-marker' \;`, "escape.find_exec", []string{"find"}},
	{`find . -maxdepth 0 -execdir /bin/sh -c 'touch cg-marker' {} +`, "escape.find_exec", []string{"find"}},
	{`echo x | xargs -I{} sh -c 'touch cg-marker'`, "escape.xargs_exec", []string{"xargs"}},
}

// TestProofsRunInSandbox decides each proof script (under both profiles: not allowed,
// with its rule), then runs it and checks that its hidden command ran.
func TestProofsRunInSandbox(t *testing.T) {
	bash := testenv.NeedCommand(t, "bash")
	run := sandboxRunner(t, bash)
	engines := map[string]*policies.Engine{}
	for _, p := range []string{policies.ProfileStrict, policies.ProfileSandboxed} {
		e, err := policies.New(t.Context(), policies.WithConfig(policies.Config{Profile: p}))
		if err != nil {
			t.Fatal(err)
		}
		engines[p] = e
	}
	cases := append(append([]proofCase{}, evaluationProofs...), optionProofs...)
	for i, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			for _, tool := range c.tools {
				testenv.NeedCommand(t, tool)
			}
			dir := run.dir(t, i)
			for profile, e := range engines {
				d, err := e.Decide(t.Context(), parse.Script(c.script, parse.Options{Cwd: dir, Workspace: dir}))
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, r := range d.Reasons {
					found = found || r.Rule == c.rule
				}
				if d.Action == policies.ActionAllow || !found {
					t.Errorf("%s: Decide(%q) = %s %v, want it refused by %s", profile, c.script, d.Action, d.Reasons, c.rule)
				}
			}
			out := run.run(t, dir, c.script)
			if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
				t.Errorf("%s: the hidden command did not run (%v): the case proves nothing\n%s", c.script, err, out)
			}
		})
	}
}

// runner runs scripts in the linux sandbox (e non-nil) or in plain bash.
type runner struct {
	bash string
	e    *linux.Executor
	ws   string
}

// sandboxRunner builds the linux sandbox on a fresh workspace; where it cannot be built
// (no user namespaces, no Landlock), the scripts run in plain bash.
func sandboxRunner(t *testing.T, bash string) *runner {
	t.Helper()
	r := &runner{bash: bash}
	helper, dir, err := testenv.BuildHelper()
	if err != nil {
		t.Logf("no cmdgate-sandbox (%v): the proofs run in plain bash", err)
		return r
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e, err := linux.New(linux.Options{Workspace: t.TempDir(), Helper: helper})
	if err != nil {
		t.Logf("linux.New: %v: the proofs run in plain bash", err)
		return r
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := e.Probe(ctx); err != nil {
		t.Logf("the linux sandbox cannot be built here (%v): the proofs run in plain bash", err)
		return r
	}
	r.e, r.ws = e, e.Workspace()
	return r
}

// dir is the directory case i runs in: a directory of the sandbox's workspace, or a
// temporary one.
func (r *runner) dir(t *testing.T, i int) string {
	t.Helper()
	if r.e == nil {
		d, err := os.MkdirTemp("", "cmdgate-proof-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	d := filepath.Join(r.ws, fmt.Sprintf("case-%03d", i))
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func (r *runner) run(t *testing.T, dir, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if r.e != nil {
		res, err := r.e.Run(ctx, executor.Spec{Script: script, Dir: dir, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("Run(%q): %v", script, err)
		}
		return res.Stdout + res.Stderr
	}
	cmd := exec.CommandContext(ctx, r.bash, "--norc", "--noprofile", "-c", script)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}
	out, _ := cmd.CombinedOutput()
	return string(out)
}
