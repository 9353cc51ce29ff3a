package process

import "testing"

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"git", "status", "--short"}, `& 'git' 'status' '--short'`},
		{[]string{"echo", "it's", "", "$env:PATH"}, `& 'echo' 'it''s' '' '$env:PATH'`},
		{[]string{"echo", "\u2018curly\u2019"}, "& 'echo' '\u2018\u2018curly\u2019\u2019'"},
	}
	for _, tt := range tests {
		if got := quote(tt.argv); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
