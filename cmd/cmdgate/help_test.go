package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every command and subcommand answers -h and --help with its own usage and flags on
// stdout, exit status 0, and nothing on stderr.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	cases := [][]string{{}} // cmdgate itself
	for _, c := range commands() {
		cases = append(cases, []string{c.name})
	}
	subs := map[string][]string{
		"token":   {"create", "list", "revoke"},
		"audit":   {"query", "verify", "export", "pubkey", "append"},
		"policy":  {"test", "prompt", "eval"},
		"sandbox": {"run", "check"},
		"cache":   {"list", "clear"},
		"task":    {"create", "list", "show", "rm"},
	}
	for cmd, ss := range subs {
		for _, s := range ss {
			cases = append(cases, []string{cmd, s})
		}
	}
	for _, words := range cases {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string(nil), words...), flag)
			var stdout, stderr bytes.Buffer
			m := &Main{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
			code := m.Run(t.Context(), args)
			name := strings.Join(args, " ")
			if code != exitOK || stderr.Len() != 0 {
				t.Errorf("cmdgate %s: exit %d, stderr %q; want 0 and nothing", name, code, stderr.String())
			}
			out := stdout.String()
			want := "usage: cmdgate"
			if len(words) > 0 {
				want = "cmdgate " + words[0]
			}
			if !strings.Contains(out, want) {
				t.Errorf("cmdgate %s: stdout %q lacks %q", name, out, want)
			}
			// A subcommand with flags lists them; the top levels list the subcommands.
			if len(words) == 2 && !strings.Contains(out, "  -") {
				t.Errorf("cmdgate %s: no flags listed:\n%s", name, out)
			}
			if strings.Contains(out, "DESIGN.md") || strings.Contains(out, "seed ") {
				t.Errorf("cmdgate %s: the help points at documents users do not have:\n%s", name, out)
			}
		}
	}
}
