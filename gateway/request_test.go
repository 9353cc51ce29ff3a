package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// memberBodies are request bodies, valid and not, that objectMembers must read exactly
// as json.Decoder does (decodeMembers): the same members with the same values, or the
// same error.
var memberBodies = []string{
	`{"command":"ls -la"}`,
	` {"command" : "ls" , "cwd":"src"}` + "\n\t",
	`{}`, `{ }`, `{"argv":[]}`,
	`{"argv":["grep","-rn","a\"b","\\","}{]["],"timeout_ms":1500,"stdin":"x\ny"}`,
	`{"comm\u0061nd":"echo hi"}`,           // an escaped name
	`{"command":"caf\u00e9 \ud83d\ude00"}`, // escapes, a surrogate pair
	`{"command":"naïve 日本"}`,               // raw UTF-8
	`{"command":"\ud800"}`,                 // an unpaired surrogate
	`{"command":"a\u0000b"}`,               // NUL
	`{"command":null}`, `{"command":true,"argv":false}`, `{"timeout_ms":-0.5e3}`,
	`{"argv":[{"a":[1,{"b":"]}"}]}],"cwd":"x"}`,
	`{"command":"ls","command":"rm"}`, // repeated
	`{"bogus":1}`, `{"command":"ls","Command":"x"}`,
	`{"command":"ls"} {"command":"rm"}`, `{"command":"ls"}x`, `[{"command":"ls"}]`, `"ls"`, `42`, `null`,
	`{"command":"ls"`, `{"command":}`, `{"command" "ls"}`, `{command:"ls"}`, `{"command":"ls",}`,
	`{"command":"ls` + "\x01" + `"}`, "{\"command\":\"\xff\"}",
	strings.Repeat(`{"argv":`, 20) + `1` + strings.Repeat(`}`, 20),
	strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
}

func TestObjectMembersMatchesDecoder(t *testing.T) {
	fast := 0
	for _, body := range memberBodies {
		raw := []byte(body)
		checkMembersMatch(t, raw)
		_, ok := splitObject(raw)
		if valid := json.Valid(raw); valid && ok != (bytes.TrimSpace(raw)[0] == '{') {
			t.Errorf("%q: splitObject ok %v for valid JSON", raw, ok)
		}
		if ok {
			fast++
		}
	}
	if fast < 15 {
		t.Errorf("only %d bodies took the fast path", fast)
	}
}

// checkMembersMatch fails t when objectMembers and decodeMembers read raw differently.
func checkMembersMatch(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := objectMembers(raw, requestFields)
	want, wantErr := decodeMembers(raw, requestFields)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%q: error %v, the decoder's %v", raw, gotErr, wantErr)
	}
	if len(got) != len(want) {
		t.Fatalf("%q: %d members, the decoder's %d", raw, len(got), len(want))
	}
	for i := range got {
		if got[i].name != want[i].name || !bytes.Equal(got[i].value, want[i].value) {
			t.Fatalf("%q: member %d is %q=%s, the decoder's %q=%s", raw, i, got[i].name, got[i].value, want[i].name, want[i].value)
		}
		if v := got[i].value; len(v) > 0 && v[0] == '"' {
			s, err := decodeString(got[i].name, v)
			var plain string
			if uerr := json.Unmarshal(v, &plain); err == nil && (uerr != nil || s != plain) {
				t.Fatalf("%q: member %s decodes to %q, json.Unmarshal to %q (%v)", raw, got[i].name, s, plain, uerr)
			}
		}
	}
}

// The values objectMembers returns are its own: the caller may reuse the body.
func TestObjectMembersCopiesValues(t *testing.T) {
	raw := []byte(`{"command":"ls","argv":["a"]}`)
	members, err := objectMembers(raw, requestFields)
	if err != nil || len(members) != 2 {
		t.Fatalf("objectMembers: %v, %d members", err, len(members))
	}
	copy(raw, bytes.Repeat([]byte("x"), len(raw)))
	if string(members[0].value) != `"ls"` || string(members[1].value) != `["a"]` {
		t.Fatalf("values changed with the body: %s %s", members[0].value, members[1].value)
	}
}

func FuzzObjectMembers(f *testing.F) {
	for _, body := range memberBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkMembersMatch(t, raw)
	})
}

// BenchmarkObjectMembers is the members of an everyday exec body read as requests are
// (objectMembers) beside json.Decoder token by token (decodeMembers), the way they were
// read before.
func BenchmarkObjectMembers(b *testing.B) {
	raw := []byte(`{"command":"grep -rn TODO src | head -20 && go test ./...","cwd":"gateway","timeout_ms":60000}`)
	for _, c := range []struct {
		name string
		read func([]byte, map[string]string) ([]member, error)
	}{{"split", objectMembers}, {"decoder", decodeMembers}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.read(raw, requestFields); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
