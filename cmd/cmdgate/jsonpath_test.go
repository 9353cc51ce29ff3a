package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONPath is the scripts' jsonpath command, which reads the last stdout: exactly
// one JSON object on one line, in valid UTF-8 (anything else fails the script).
//
//	jsonpath PATH            the value at PATH exists (! : it does not)
//	jsonpath PATH VALUE      the value at PATH is VALUE (! : it is not): a string as it
//	                         is, any other value as JSON (3, true, null, [])
//	jsonpath -set VAR PATH   sets $VAR to the value at PATH, written so
//
// PATH is dot-separated object members and array indexes; len is an array's length.
func cmdJSONPath(ts *testscript.TestScript, neg bool, args []string) {
	out := ts.ReadFile("stdout")
	if !utf8.ValidString(out) || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		ts.Fatalf("jsonpath: stdout is not one line of valid UTF-8: %q", out)
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || dec.More() {
		ts.Fatalf("jsonpath: stdout is not one JSON object (%v): %q", err, out)
	}
	set := len(args) == 3 && args[0] == "-set"
	if !set && len(args) != 1 && len(args) != 2 || set && neg {
		ts.Fatalf("usage: jsonpath PATH [VALUE] | jsonpath -set VAR PATH")
	}
	path := args[0]
	if set {
		path = args[2]
	}
	var v any = doc
	found := true
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v, found = x[seg]
		case []any:
			if seg == "len" {
				v = json.Number(strconv.Itoa(len(x)))
				continue
			}
			i, err := strconv.Atoi(seg)
			found = err == nil && i >= 0 && i < len(x)
			if found {
				v = x[i]
			}
		default:
			found = false
		}
		if !found {
			break
		}
	}
	text := func(v any) string {
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch {
	case set:
		if !found {
			ts.Fatalf("jsonpath: no %s in %s", path, out)
		}
		ts.Setenv(args[1], text(v))
	case len(args) == 1:
		if found == neg {
			ts.Fatalf("jsonpath: %s exists: %v, want %v", path, found, !neg)
		}
	default:
		if !found && !neg {
			ts.Fatalf("jsonpath: no %s in %s", path, out)
		}
		if found && (text(v) == args[1]) == neg {
			ts.Fatalf("jsonpath: %s is %s (want %s%s)", path, text(v), map[bool]string{true: "not "}[neg], args[1])
		}
	}
}
