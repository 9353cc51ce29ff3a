package handover

import (
	"os"
	"path/filepath"
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

// TestFindHelperPath: with none beside the running program (the test binary),
// cmdgate-sandbox is found in the first absolute directory of PATH that holds it as
// an executable regular file; relative directories and the rest are passed over.
func TestFindHelperPath(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(self), HelperName)); err == nil {
		t.Skipf("%s lies beside the test binary", HelperName)
	}
	root := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	write := func(d string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(d, HelperName), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	plain, isDir, good, later := dir("plain"), dir("isdir"), dir("good"), dir("later")
	write(plain, 0o644) // not executable
	if err := os.Mkdir(filepath.Join(isDir, HelperName), 0o755); err != nil {
		t.Fatal(err)
	}
	write(good, 0o755)
	write(later, 0o755)
	t.Chdir(root)
	write(dir("rel"), 0o755)

	t.Setenv("PATH", "rel:"+plain+"::"+isDir+":"+good+"/:"+later)
	if got, err := FindHelper(); err != nil || got != filepath.Join(good, HelperName) {
		t.Errorf("FindHelper() = %q, %v; want %q", got, err, filepath.Join(good, HelperName))
	}
	for _, path := range []string{"", "rel", plain + ":" + isDir, ":::"} {
		t.Setenv("PATH", path)
		if got, err := FindHelper(); err == nil {
			t.Errorf("PATH=%q: FindHelper() = %q; want an error", path, got)
		}
	}
}
