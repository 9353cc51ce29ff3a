package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		wantPos  []string
		wantData string
	}{
		{[]string{"a", "--data", "d", "b"}, []string{"a", "b"}, "d"},
		{[]string{"--data=d", "a"}, []string{"a"}, "d"},
		{[]string{"a", "--", "--data", "x"}, []string{"a", "--data", "x"}, ""},
		{[]string{"--", "-c", "x"}, []string{"-c", "x"}, ""},
		{nil, nil, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		data := fs.String("data", "", "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.wantPos) || *data != tc.wantData {
			t.Errorf("parseInterspersed(%q) = %q, data %q, %v; want %q, data %q", tc.args, pos, *data, err, tc.wantPos, tc.wantData)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"a", "--nope"}); err == nil {
		t.Error("parseInterspersed accepted an unknown flag after an operand")
	}
}
