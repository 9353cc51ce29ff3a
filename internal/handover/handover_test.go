package handover

import (
	"slices"
	"testing"
)

// TestArgs: the runs handed over, and what cmdgate-sandbox gets for them; everything
// else stays with cmdgate.
func TestArgs(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sandbox", "run", "--", "true"}, []string{"run", "--", "true"}},
		{[]string{"sandbox", "run", "--workspace", "/w", "--cwd=/w/src", "--", "ls", "-la", "--", "x"},
			[]string{"run", "-workspace=/w", "-cwd=/w/src", "--", "ls", "-la", "--", "x"}},
		{[]string{"sandbox", "run", "-c", "echo -n x=y", "-timeout", "90s", "--network"},
			[]string{"run", "-c=echo -n x=y", "-timeout=90s", "-network"}},
		{[]string{"sandbox", "run", "--network=false", "-c=-x"}, []string{"run", "-c=-x"}},
		{[]string{"sandbox", "run", "--network=1", "--c", "true"}, []string{"run", "-network", "-c=true"}},
	} {
		got, ok := Args(tc.args, none)
		if !ok || !slices.Equal(got, tc.want) {
			t.Errorf("Args(%q) = %q, %v; want %q", tc.args, got, ok, tc.want)
		}
	}
	for _, args := range [][]string{
		nil,
		{"sandbox"},
		{"sandbox", "check"},
		{"serve"},
		{"sandbox", "run"},       // neither -c nor argv
		{"sandbox", "run", "--"}, // an empty argv
		{"sandbox", "run", "-c", "x", "--", "true"}, // both
		{"sandbox", "run", "true"},                  // positional: cmdgate takes it
		{"sandbox", "run", "--json", "--", "true"},  // the envelope is cmdgate's
		{"sandbox", "run", "--config", "f", "--", "true"},
		{"sandbox", "run", "-config=f", "--", "true"},
		{"sandbox", "run", "-h"},
		{"sandbox", "run", "--help"},
		{"sandbox", "run", "--bogus", "--", "true"},
		{"sandbox", "run", "---c", "x"},
		{"sandbox", "run", "-", "x"},
		{"sandbox", "run", "-c"},                           // a flag without its value
		{"sandbox", "run", "--timeout", "5", "--", "true"}, // no unit: cmdgate says
		{"sandbox", "run", "--timeout=0s", "--", "true"},
		{"sandbox", "run", "--timeout=-1s", "--", "true"},
		{"sandbox", "run", "--network=maybe", "--", "true"},
	} {
		if got, ok := Args(args, none); ok {
			t.Errorf("Args(%q) = %q, true; want it left to cmdgate", args, got)
		}
	}
	env := func(k string) string {
		if k == "CMDGATE_CONFIG" {
			return "/etc/cmdgate.yaml"
		}
		return ""
	}
	if got, ok := Args([]string{"sandbox", "run", "--", "true"}, env); ok {
		t.Errorf("with $CMDGATE_CONFIG: Args = %q, true; want it left to cmdgate", got)
	}
}
