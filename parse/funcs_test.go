package parse

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// funcScripts are scripts whose calls `NAME LABEL` (each label once in the text) the
// differential test runs in bash: the functions print "F NAME LABEL", the programs of the
// same names "P NAME LABEL".
var funcScripts = []string{
	`f() { echo "F f $1"; }; f 1; f 2`,
	`f 1; f() { echo "F f $1"; }; f 2`,
	`if true; then f() { echo "F f $1"; }; fi; f 1`,
	`if false; then f() { echo "F f $1"; }; fi; f 1`,
	`if false; then f() { echo "F f $1"; }; else f 1; fi; f 2`,
	`f() { echo "F f $1"; } && f 1; g() { echo "F g $1"; } | g 2; g 3`,
	`f() { echo "F f $1"; } || f 1; f 2`,
	`true && f() { echo "F f $1"; }; f 1; false && g() { echo "F g $1"; }; g 2`,
	`for i in 1 2; do f 1; f() { echo "F f $1"; }; f 2; done; f 3`,
	`while false; do f() { echo "F f $1"; }; done; f 1`,
	`case x in x) f() { echo "F f $1"; }; f 1;; esac; f 2`,
	`(f() { echo "F f $1"; }; f 1); f 2; g() { echo "F g $1"; }; (g 3)`,
	`f() { echo "F f $1"; }; f 1 | cat; echo "$(f 2)"; f 3 & wait`,
	`echo $(f() { echo "F f $1"; }); f 1; g() { echo "F g $1"; } & wait; g 2`,
	`f() { echo "F f $1"; }; unset -f f; f 1`,
	`f() { echo "F f $1"; }; unset f; f 1`,
	`f() { echo "F f $1"; }; unset -v f; f 1`,
	`f() { echo "F f $1"; }; (unset -f f); f 1`,
	`f() { echo "F f $1"; }; eval 'unset -f f'; f 1`,
	`f() { echo "F f $1"; }; eval 'f 1'; eval 'g() { echo "F g $1"; }'; g 2`,
	`f() { echo "F f $1"; }; X='unset -f f'; eval "$X"; f 1`,
	`f() { echo "F f $1"; }; trap 'unset -f f' DEBUG; f 1`,
	`f() { echo "F f $1"; }; command f 1; exec f 2`,
	`f() { echo "F f $1"; }; "f" 1; \f 2; ./f 3`,
	`f() { echo "F f $1"; }; bash -c 'f 1'; bash -c 'g() { echo "F g $1"; }; g 2'`,
	`f() { echo "F f $1"; }; export -f f; bash -c 'f 1'`,
	`f() { echo "F f $1"; }; g() { f 1; g2 2; }; g2() { echo "F g2 $1"; }; g 3`,
	`f() { echo "F f $1"; }; g() { f 1; }; unset -f f; g 2`,
	`f() { echo "F f $1"; }; trap 'f 1' EXIT; trap 'g 2' EXIT; g() { echo "F g $1"; }`,
	`f() { echo "F f $1"; }; time f 1`,
	`sudo() { echo "F sudo $1"; }; sudo 1`,
	`echo() { builtin echo "F echo $1"; }; echo 1`,
	`set -o posix; f() { echo "F f $1"; }; f 1; a-b() { echo "F a-b $1"; }; a-b 2`,
	`f() { echo "F f $1"; }; source /dev/null; f 1`,
	`f() { echo "F f $1"; }; C=f; $C 1; f 2`,
	`f() { echo "F f $1"; }; mapfile -C 'unset -f f; :' -c 1 a <<< x; f 1`,
	`f() { echo "F f $1"; }; { f() { echo "F f2 $1"; }; }; f 1`,
	`f() { f() { echo "F f2 $1"; }; echo "F f $1"; }; f 1; f 2`,
	`! f() { echo "F f $1"; }; f 1`,
	`f() { echo "F f $1"; } > /dev/stdout; f 1`,
	`function f { echo "F f $1"; }; f 1; function g() { echo "F g $1"; }; g 2`,
	`cat /dev/null | f() { echo "F f $1"; }; f 1`,
	`case y in x) f() { echo "F f $1"; };; y) f 1;; esac`,
	`coproc { f() { echo "F f $1"; }; }; f 1`,
	`f() { echo "F f $1"; }; C=unset; $C -f f; f 1`,
	`f() { echo "F f $1"; }; echo 'unset -f f' > x.sh; source ./x.sh; f 1`,
	`f() { echo "F f $1"; }; echo 'f() { echo "P f $1"; }' > x.sh; . ./x.sh; f 1`,
	`f() { echo "F f $1"; }; readarray -C 'unset -f f; :' -c 1 a <<< x; f 1`,
	`f() { echo "F f $1"; }; builtin unset -f f; f 1; g() { echo "F g $1"; }; command unset g; g 2`,
	`f() { echo "F f $1"; }; trap -- 'unset -f f' DEBUG; f 1`,
	`f() { echo "F f $1"; }; g() { unset -f f; }; g; f 1`,
	`f() { echo "F f $1"; }; eval 'eval "unset -f f"'; f 1`,
	`f() { echo "F f $1"; }; U=-f; unset $U f; f 1`,
	`f() { echo "F f $1"; }; unset 'f'; f 1; g() { echo "F g $1"; }; unset -fv g; g 2`,
}

// funcNames are the names random scripts define and call; each also exists as a program.
var funcNames = []string{"f", "g", "sudo", "echo"}

// randomFuncScript builds a script of definitions, calls (with a fresh label each),
// unsets and control flow around them.
func randomFuncScript(r *rand.Rand, label *int) string {
	var stmt func(depth int) string
	call := func() string {
		*label++
		n := funcNames[r.IntN(len(funcNames))]
		return fmt.Sprintf("%s %d", n, *label)
	}
	stmt = func(depth int) string {
		k := r.IntN(16)
		if depth > 2 {
			k %= 4
		}
		n := funcNames[r.IntN(len(funcNames))]
		switch k {
		case 0, 1:
			return call()
		case 2:
			return fmt.Sprintf(`%s() { builtin echo "F %s $1"; }`, n, n)
		case 3:
			return [...]string{"unset -f ", "unset ", "unset -v "}[r.IntN(3)] + n
		case 4:
			return fmt.Sprintf("if %s; then %s; else %s; fi", [2]string{"true", "false"}[r.IntN(2)], stmt(depth+1), stmt(depth+1))
		case 5:
			return fmt.Sprintf("%s %s %s", [2]string{"true", "false"}[r.IntN(2)], [2]string{"&&", "||"}[r.IntN(2)], stmt(depth+1))
		case 6:
			return fmt.Sprintf("for i in 1 2; do %s; %s; done", stmt(depth+1), stmt(depth+1))
		case 7:
			return fmt.Sprintf("( %s; %s )", stmt(depth+1), stmt(depth+1))
		case 8:
			return fmt.Sprintf("{ %s; %s; }", stmt(depth+1), stmt(depth+1))
		case 9:
			return fmt.Sprintf("%s | cat", stmt(depth+1))
		case 10:
			return fmt.Sprintf(`builtin echo "$( %s )"`, stmt(depth+1))
		case 11:
			q, _ := syntax.Quote(stmt(depth+1), syntax.LangBash)
			return "eval " + q
		case 12:
			q, _ := syntax.Quote(stmt(depth+1), syntax.LangBash)
			return "bash -c " + q
		case 13:
			q, _ := syntax.Quote(stmt(depth+1), syntax.LangBash)
			return "trap " + q + " EXIT"
		case 14:
			return fmt.Sprintf(`%s() { builtin echo "F %s $1"; %s; }`, n, n, stmt(depth+1))
		default:
			return fmt.Sprintf("%s && %s", stmt(depth+1), stmt(depth+1))
		}
	}
	parts := make([]string, 2+r.IntN(5))
	for i := range parts {
		parts[i] = stmt(0)
	}
	return strings.Join(parts, "; ")
}

// TestBashFunctionCalls checks Command.FunctionCall against bash: wherever the parser says
// a call runs a function, every time bash ran that call it ran the function. (Calls the
// parser leaves unmarked may run either: unsure is checked as a program.)
func TestBashFunctionCalls(t *testing.T) {
	bash := testenv.NeedCommand(t, "bash")
	bin := t.TempDir()
	for _, n := range append([]string{"a-b"}, funcNames...) {
		prog := fmt.Sprintf("#!/bin/sh\necho \"P %s $1\"\n", n)
		if err := os.WriteFile(filepath.Join(bin, n), []byte(prog), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scripts := append([]string{}, funcScripts...)
	r := rand.New(rand.NewPCG(3, 4))
	for range 400 {
		label := 100
		scripts = append(scripts, randomFuncScript(r, &label))
	}
	var mu sync.Mutex
	marked, function := 0, 0
	const batch = 40
	for start := 0; start < len(scripts); start += batch {
		group := scripts[start:min(start+batch, len(scripts))]
		t.Run(fmt.Sprintf("scripts%d", start), func(t *testing.T) {
			t.Parallel()
			for _, src := range group {
				m, f := checkFunctionCalls(t, bash, bin, src)
				mu.Lock()
				marked, function = marked+m, function+f
				mu.Unlock()
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("%d calls ran a function in bash; the parser marked %d of them", function, marked)
	})
}

// checkFunctionCalls runs src in bash and compares; it returns how many labelled calls
// the parser marked and how many ran only the function in bash.
func checkFunctionCalls(t *testing.T, bash, bin, src string) (marked, function int) {
	t.Helper()
	doc := Script(src, Options{Cwd: "/w", Workspace: "/w"})
	if doc.Error != nil {
		t.Fatalf("Script(%q): error %+v", src, *doc.Error)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", src)
	cmd.Dir = t.TempDir()
	// FUNCNEST stops a function that calls itself.
	cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=" + bin + ":/usr/bin:/bin", "FUNCNEST=8"}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	_ = cmd.Run() // a failing script still printed what ran
	if ctx.Err() != nil {
		t.Fatalf("bash %q: %v", src, ctx.Err())
	}
	ran := map[string][]string{} // label -> what ran each time: F (a function), P, builtin
	for line := range strings.Lines(stdout.String()) {
		f := strings.Fields(line)
		if len(f) == 3 && (f[0] == "F" || f[0] == "P") {
			ran[f[2]] = append(ran[f[2]], f[0])
		} else if len(f) == 1 {
			ran[f[0]] = append(ran[f[0]], "builtin")
		}
	}
	for _, c := range doc.Commands {
		if len(c.Argv) != 2 {
			continue
		}
		if _, err := strconv.Atoi(c.Argv[1]); err != nil {
			continue
		}
		runs := ran[c.Argv[1]]
		allF := len(runs) > 0
		for _, r := range runs {
			allF = allF && r == "F"
		}
		if allF {
			function++
			if c.FunctionCall {
				marked++
			}
		}
		if c.FunctionCall && len(runs) > 0 && !allF {
			t.Errorf("Script(%q): command %d %q has function_call, but bash ran %q", src, c.Index, c.Argv, runs)
		}
	}
	return marked, function
}
