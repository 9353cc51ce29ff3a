package parse

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// evalSummary is what TestEvaluations compares of an evaluation.
type evalSummary struct {
	Kind, Text    string
	Names, Values []string
	Dynamic       bool
	Command       int
	InFunction    bool
	Via           string
}

func summarize(es []Evaluation) []evalSummary {
	out := []evalSummary{}
	for _, e := range es {
		out = append(out, evalSummary{e.Kind, e.Text, e.Names, e.Values, e.Dynamic, e.Command, e.Context.Function, strings.Join(e.Via, " ")})
	}
	return out
}

func ev(kind, text string, names, values []string, dyn bool, cmd int) evalSummary {
	if names == nil {
		names = []string{}
	}
	if values == nil {
		values = []string{}
	}
	return evalSummary{Kind: kind, Text: text, Names: names, Values: values, Dynamic: dyn, Command: cmd}
}

func strs(s ...string) []string { return s }

// TestEvaluations checks the evaluations parse records: each operator, what it reads,
// and the values resolved through the script's assignments.
func TestEvaluations(t *testing.T) {
	t.Parallel()
	fn := func(e evalSummary) evalSummary { e.InFunction = true; return e }
	via := func(e evalSummary, v string) evalSummary { e.Via = v; return e }
	tests := []struct {
		script string
		want   []evalSummary
	}{
		// prompt expansion: the value assigned earlier, escaped
		{`x='\140id\140'; echo ${x@P}`, []evalSummary{ev("prompt", "${x@P}", strs("x"), strs(`\140id\140`), false, 0)}},
		{`echo "${PS1@P}"`, []evalSummary{ev("prompt", "${PS1@P}", strs("PS1"), nil, true, 0)}},
		{`x=$'\x60id\x60'; echo ${x@P}`, []evalSummary{ev("prompt", "${x@P}", strs("x"), strs("`id`"), false, 0)}},
		{`printf -v y '\140id\140'; echo ${y@P}`, []evalSummary{ev("prompt", "${y@P}", strs("y"), strs(`\140id\140`, "`id`"), false, 1)}},
		{`read -r y <<< '$(id)'; echo ${y@P}`, []evalSummary{ev("prompt", "${y@P}", strs("y"), strs("$(id)"), false, 1)}},
		{`read -r y < f; echo ${y@P}`, []evalSummary{ev("prompt", "${y@P}", strs("y"), nil, true, 1)}},
		{`echo ${@@P}`, []evalSummary{ev("prompt", "${@@P}", nil, nil, true, 0)}},
		// escape decoding is recorded, the other transformations are not
		{`x=a; echo ${x@E} ${x@Q} ${x@A} ${x@a} ${x@U} ${x@K}`, []evalSummary{ev("escape", "${x@E}", strs("x"), strs("a"), false, 0)}},
		// indirect expansion; keys and name lists are not
		{`echo ${!x}`, []evalSummary{ev("indirect", "${!x}", strs("x"), nil, true, 0)}},
		{`for v in HOME 'a[i]'; do echo "${!v:-}"; done`, []evalSummary{ev("indirect", "${!v:-}", strs("i", "v"), strs("HOME", "a[i]"), true, 0)}},
		{`a=(x y); echo ${!a[@]} ${!a*} ${#a[@]} ${!#}`, []evalSummary{ev("indirect", "${!#}", nil, nil, false, 0)}},
		// arithmetic: names read, numbers assigned, the specials
		{`a='x[$(id)]'; echo $((a))`, []evalSummary{ev("arithmetic", "$((a))", strs("a", "id", "x"), strs("x[$(id)]"), true, 0)}},
		{`x=3; echo $((x + 1)) $[x]`, []evalSummary{ev("arithmetic", "$((x + 1))", strs("x"), strs("3"), false, 0), ev("arithmetic", "$[x]", strs("x"), strs("3"), false, 0)}},
		{`for ((i = 0; i < 3; i++)); do :; done`, []evalSummary{ev("arithmetic", "i = 0", nil, nil, false, -1), ev("arithmetic", "i < 3", strs("i"), nil, false, -1), ev("arithmetic", "i++", strs("i"), nil, false, -1)}},
		{`[[ $# -eq 0 && $? -ne 1 ]]`, []evalSummary{ev("arithmetic", "$# -eq 0", nil, nil, false, -1), ev("arithmetic", "$? -ne 1", nil, nil, false, -1)}},
		{`[[ $v -gt 1 || $v == x ]]; [ "$v" -eq 1 ]; test "$v" -lt 2`, []evalSummary{ev("arithmetic", "$v -gt 1", strs("v"), nil, true, -1)}},
		{`[[ 'a[$(id)]' -le 1 ]]`, []evalSummary{ev("arithmetic", "'a[$(id)]' -le 1", strs("a", "id"), strs("a[$(id)]"), true, -1)}},
		{`n=$(nproc); (( n > 1 )); let m=n+1`, []evalSummary{ev("arithmetic", "(( n > 1 ))", strs("n"), nil, true, -1), ev("arithmetic", "m=n+1", strs("n"), nil, true, 1)}},
		{`echo $(( $(nproc) * 2 ))`, []evalSummary{ev("arithmetic", "$(( $(nproc) * 2 ))", nil, nil, true, 0)}},
		{`i=0; while [ $i -lt 3 ]; do i=$((i + 1)); n="${#a[@]}"; echo $((i * n)); done`, []evalSummary{ev("arithmetic", "$((i + 1))", strs("i"), strs("0"), false, -1), ev("arithmetic", "$((i * n))", strs("i", "n"), strs("0"), false, 1)}},
		{`x=y; y=0x1f; echo $((x))`, []evalSummary{ev("arithmetic", "$((x))", strs("x", "y"), strs("0x1f", "y"), false, 0)}},
		{`RANDOM=$x`, []evalSummary{ev("arithmetic", "$x", strs("x"), nil, true, -1)}},
		// subscripts of indexed arrays and substring offsets; not of associative arrays
		{`a=(1 2); i=1; echo ${a[i]} ${a[0]} ${a[@]}`, []evalSummary{ev("arithmetic", "${a[i]}", strs("i"), strs("1"), false, 0), ev("arithmetic", "${a[0]}", nil, nil, false, 0)}},
		{`s=abc; echo ${s:o:2}`, []evalSummary{ev("arithmetic", "${s:o:2}", strs("o"), nil, true, 0)}},
		{`a[$k]=1; b=([$k]=2)`, []evalSummary{ev("arithmetic", "$k", strs("k"), nil, true, -1), ev("arithmetic", "$k", strs("k"), nil, true, -1)}},
		{`declare -A m; m[$k]=1; echo ${m[$k]}`, []evalSummary{}},
		// integer variables and namerefs
		{`declare -i n; n=$v; n=3`, []evalSummary{ev("arithmetic", "$v", nil, nil, true, -1), ev("arithmetic", "3", nil, strs("3"), false, -1)}},
		{`declare -n r=x; r=2; declare -n q="$1"`, []evalSummary{ev("nameref", "x", nil, strs("x"), false, 0), ev("nameref", "2", nil, strs("2"), false, -1), ev("nameref", "$1", nil, nil, true, 1)}},
		// variable names builtins evaluate
		{`read "$n"; printf -v 'a[$(id)]' x`, []evalSummary{ev("name", "$n", nil, nil, true, 0), ev("name", "a[$(id)]", strs("id"), strs("a[$(id)]"), true, 1)}},
		{`test -v "$n"; [[ -v $n ]]; wait -p "$p" -n; declare "$n=1"; export "$n=1"`, []evalSummary{ev("name", "$n", nil, nil, true, 0), ev("name", "$n", strs("n"), nil, true, -1), ev("name", "$p", nil, nil, true, 1), ev("name", "$n=1", nil, nil, true, 2)}},
		// compositions: inside a wrapper, sh -c, a function body
		{`timeout 5 echo ${x@P}`, []evalSummary{ev("prompt", "${x@P}", strs("x"), nil, true, 0)}},
		{`x='\140id\140' bash -c 'echo ${x@P}'`, []evalSummary{via(ev("prompt", "${x@P}", strs("x"), strs(`\140id\140`), false, 1), "bash")}},
		{`f() { echo $(( $1 )); }; f 'a[$(id)]'`, []evalSummary{fn(ev("arithmetic", "$(( $1 ))", nil, nil, true, 0))}},
		// anything may be assigned after source or a command with a run-time name
		{`x=3; source ./env.sh; echo $((x))`, []evalSummary{ev("arithmetic", "$((x))", strs("x"), strs("3"), true, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			doc := Script(tt.script, goldenOptions)
			if doc.Error != nil {
				t.Fatalf("Script(%q): %v", tt.script, doc.Error)
			}
			if diff := cmp.Diff(tt.want, summarize(doc.Evaluations)); diff != "" {
				t.Errorf("Script(%q) evaluations (-want +got):\n%s", tt.script, diff)
			}
		})
	}
}

// evaluatesCode reports what the default policy reads in an evaluation: code in a value
// it holds, or a value known only at run time.
func evaluatesCode(e Evaluation) bool {
	code := regexp.MustCompile("[$`]")
	if e.Kind == "prompt" {
		code = regexp.MustCompile("[$`\\\\]")
	}
	for _, v := range e.Values {
		if code.MatchString(v) {
			return true
		}
	}
	return e.Dynamic
}

// bashEvalCases are scripts whose construct bash evaluates (runs: the command
// substitution hidden in a value runs, creating the file MARKER) or not. For each, parse must
// record an evaluation that holds code or is dynamic exactly when bash runs it.
var bashEvalCases = []struct {
	script string
	runs   bool
}{
	{`x='\140touch MARKER\140'; echo ${x@P}`, true},
	{`x='$(touch MARKER)'; echo ${x@P}`, true},
	{`x=$'\x60touch MARKER\x60'; echo "${x@P}"`, true},
	{`printf -v y '\140touch MARKER\140'; echo ${y@P}`, true},
	{`read -r y <<< '$(touch MARKER)'; echo ${y@P}`, true},
	{`x='$(touch MARKER)'; y=${x@E}; echo ${x@Q} ${x@A} ${x@a} ${x@K} ${x@U} ${x@L}`, false},
	{`x='\140touch MARKER\140'; echo ${x@E}`, false},
	{`x='a[$(touch MARKER)]'; echo ${!x}`, true},
	{`x='a[$(touch MARKER)]'; echo ${!x:-d}`, true},
	{`a=(1 2); echo ${!a[@]} ${!a*} ${#a[@]}`, false},
	{`a='x[$(touch MARKER)]'; echo $((a))`, true},
	{`a='x[$(touch MARKER)]'; echo $[a]`, true},
	{`a='x[$(touch MARKER)]'; (( a ))`, true},
	{`a='x[$(touch MARKER)]'; let b=a+1`, true},
	{`a='x[$(touch MARKER)]'; for ((i = a; i < 0; i++)); do :; done`, true},
	{`a='x[$(touch MARKER)]'; [[ $a -eq 1 ]]`, true},
	{`a='x[$(touch MARKER)]'; [[ a -ne 1 ]]`, true},
	{`a='x[$(touch MARKER)]'; [ "$a" -eq 1 ]; test "$a" -lt 1`, false},
	{`a='x[$(touch MARKER)]'; [[ $a == 1 ]]`, false},
	{`read -r v <<< 'x[$(touch MARKER)]'; [[ $v -eq 1 ]]`, true},
	{`i='x[$(touch MARKER)]'; z=(a); echo ${z[i]}`, true},
	{`i='x[$(touch MARKER)]'; z=(); z[i]=1`, true},
	{`i='x[$(touch MARKER)]'; z=([i]=1)`, true},
	{`i='x[$(touch MARKER)]'; declare -A z; z[$i]=1; echo ${z[$i]}`, false},
	{`i='x[$(touch MARKER)]'; s=abc; echo ${s:i:1}`, true},
	{`i='x[$(touch MARKER)]'; declare -i n; n=i`, true},
	{`i='x[$(touch MARKER)]'; RANDOM=$i`, true},
	{`declare -n r='x[$(touch MARKER)]'; echo $r`, true},
	{`read 'x[$(touch MARKER)]' <<< 1`, true},
	{`printf -v 'x[$(touch MARKER)]' 1`, true},
	{`test -v 'x[$(touch MARKER)]'`, true},
	{`declare 'x[$(touch MARKER)]=1'`, true},
	{`export 'x[$(touch MARKER)]=1'; unset 'x[$(touch MARKER)]'`, false},
	{`x=3; echo $((x + 1)); for ((i = 0; i < 2; i++)); do echo ${a[i]}; done; [[ $# -eq 0 ]]`, false},
}

// TestEvaluationsBash checks the evaluations against bash: in each case bash runs the
// hidden command (creating the file MARKER) exactly when parse records an evaluation that
// holds code or is known only at run time, the class the policy stops.
func TestEvaluationsBash(t *testing.T) {
	bash := testenv.NeedCommand(t, "bash")
	for _, tc := range bashEvalCases {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			// Not t.TempDir: its name holds the test's, which the script would quote.
			dir, err := os.MkdirTemp("", "cmdgate-eval-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			marker := filepath.Join(dir, "marker")
			script := strings.ReplaceAll(tc.script, "MARKER", marker)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", script)
			cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
			cmd.Run() // the exit status does not matter: the marker does
			_, err = os.Stat(marker)
			if ran := err == nil; ran != tc.runs {
				t.Fatalf("bash -c %q: ran the hidden command %v, want %v", script, ran, tc.runs)
			}
			marked := false
			for _, e := range Script(script, goldenOptions).Evaluations {
				marked = marked || (e.Kind != "escape" && evaluatesCode(e))
			}
			if marked != tc.runs {
				t.Errorf("Script(%q): an evaluation of code %v, want %v (bash runs it: %v)", script, marked, tc.runs, tc.runs)
			}
		})
	}
}
