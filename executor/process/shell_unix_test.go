//go:build !windows

package process

import "testing"

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"ls", "-la", "src/main.go"}, `'ls' -la src/main.go`},
		{[]string{"echo", "a b", "", "it's"}, `'echo' 'a b' '' 'it'\''s'`},
		{[]string{"FOO=bar", "x=y", "~", "*.go"}, `'FOO=bar' 'x=y' '~' '*.go'`},
		{[]string{"printf", "%s\n", "$(id)"}, "'printf' '%s\n' '$(id)'"},
	}
	for _, tt := range tests {
		if got := quote(tt.argv); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
