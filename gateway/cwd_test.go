package gateway

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspaceResolve(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{ws + "/src/pkg", ws + "/wsprefix", outside, base + "/ws-sibling"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(ws+"/file.txt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, ws+"/escape")         // a symlink leading out
	mustSymlink(t, ws+"/src", ws+"/inner")        // a symlink staying in
	mustSymlink(t, "../outside", ws+"/relescape") // a relative symlink leading out
	mustSymlink(t, ws+"/nowhere", ws+"/dangling")

	w, err := NewWorkspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	real := w.Root()
	for _, tc := range []struct {
		cwd, want, code string
	}{
		{"", real, ""},
		{".", real, ""},
		{"src", real + "/src", ""},
		{"src/pkg", real + "/src/pkg", ""},
		{`src\pkg`, real + "/src/pkg", ""},
		{`.\src\.\pkg\`, real + "/src/pkg", ""},
		{real + "/src", real + "/src", ""},
		{"src/../src/pkg", real + "/src/pkg", ""},
		{"inner/pkg", real + "/src/pkg", ""},
		{"..", "", CodeInvalidArgument},
		{"../outside", "", CodeInvalidArgument},
		{`..\outside`, "", CodeInvalidArgument},
		{"src/../../outside", "", CodeInvalidArgument},
		{"/", "", CodeInvalidArgument},
		{"/etc", "", CodeInvalidArgument},
		{base + "/ws-sibling", "", CodeInvalidArgument},
		{"escape", "", CodeInvalidArgument},
		{"escape/..", real, ""}, // lexical: escape/.. is the workspace itself
		{"relescape", "", CodeInvalidArgument},
		{"missing", "", CodeNotDirectory},
		{"dangling", "", CodeNotDirectory},
		{"file.txt", "", CodeNotDirectory},
		{"src\x00/pkg", "", CodeInvalidArgument},
		{"src/\xff", "", CodeInvalidArgument},
		{strings.Repeat("a/", 3000), "", CodeInvalidArgument},
	} {
		got, err := w.Resolve(tc.cwd)
		var e *Error
		switch {
		case tc.code == "" && (err != nil || got != tc.want):
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.cwd, got, err, tc.want)
		case tc.code != "" && (!errors.As(err, &e) || e.Code != tc.code):
			t.Errorf("Resolve(%q) = %q, %v; want code %s", tc.cwd, got, err, tc.code)
		}
	}
}

func TestNewWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{dir + "/f", dir + "/missing"} {
		if _, err := NewWorkspace(bad); err == nil {
			t.Errorf("NewWorkspace(%q) succeeded", bad)
		}
	}
	var zero Workspace
	if _, err := zero.Resolve("."); err == nil {
		t.Error("zero Workspace resolved a cwd")
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
