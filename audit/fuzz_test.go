package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCanonicalJSON: parseJSON accepts only valid JSON; what it accepts canonicalizes
// to a document that means the same, parses again and is a fixed point; what valid JSON
// it refuses, it refuses for one of its documented strictness rules.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `null`, `{"b":1,"a":[true,false,null,"x"]}`, `1e400`, `{"a":1,"a":2}`,
		`"\ud800"`, `"\ud83d\ude00"`, `[1.0,-0,1e-7,123456789012345678901234]`, `{"\ue000":1,"😀":2}`,
		"\"\\u0000\\n\\t\"", `[[[[[[]]]]]]`, `{"a":"\u00e9"}`, ` 1 `, `01`, `"\x7f"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseJSON(data, maxJSONDepth)
		if err != nil {
			if json.Valid(data) {
				msg := err.Error()
				if !strings.Contains(msg, "duplicate") && !strings.Contains(msg, "surrogate") &&
					!strings.Contains(msg, "out of range") && !strings.Contains(msg, "nesting") &&
					!strings.Contains(msg, "UTF-8") {
					t.Fatalf("parseJSON(%q) = %v, but it is valid JSON", data, err)
				}
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("parseJSON(%q) accepted invalid JSON", data)
		}
		c := appendCanonical(nil, &v)
		v2, err := parseJSON(c, maxJSONDepth)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", c, data, err)
		}
		if c2 := appendCanonical(nil, &v2); !bytes.Equal(c, c2) {
			t.Fatalf("canonicalization is not a fixed point: %q -> %q -> %q", data, c, c2)
		}
		var a, b any
		if json.Unmarshal(data, &a) == nil && json.Unmarshal(c, &b) == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("canonical form changes the meaning: %q -> %q", data, c)
		}
	})
}

// FuzzMask: masking never panics, keeps valid UTF-8 valid, and produces valid JSON from
// valid JSON.
func FuzzMask(f *testing.F) {
	for _, s := range []string{"FOO_TOKEN=abc make", `curl -H "Authorization: Bearer x" https://u:p@h/?password=1`,
		"-----BEGIN RSA PRIVATE KEY-----\nabc", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "--token", "=:=:", "Bearer", "https://@",
		`{"argv":["sshpass","-p"]}`, `{"argv":["mysql","-p"],"env":{"X_KEY":[1,{"a":"b"}]}}`} {
		f.Add(s)
	}
	m, err := NewMasker(MaskOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := m.MaskText(s)
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("MaskText(%q) = %q: invalid UTF-8", s, out)
		}
		if json.Valid([]byte(s)) {
			if doc, err := m.MaskJSON([]byte(s)); err == nil && !json.Valid(doc) {
				t.Fatalf("MaskJSON(%q) = %q: invalid JSON", s, doc)
			}
		}
	})
}
