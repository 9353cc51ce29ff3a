package audit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/parse"
)

// TestInputTemplateMatchesInput: a record made with an input template is prepared to
// the same bytes as the record with the whole input, whatever the secrets in the input,
// the id, the reasons and the detail.
func TestInputTemplateMatchesInput(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), Options{})
	opts := parse.Options{Cwd: "/srv/ws", Workspace: "/srv/ws"}
	scripts := []string{
		"go test ./... && git status",
		`curl -H "Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789" https://example.com`,
		"GITHUB_TOKEN=s3cr3t-value-here make release",
		"mysql -u root -pHunter2isMyPassw0rd db < dump.sql",
		"git clone https://alice:topsecretpw@example.com/repo.git",
		"echo 'unterminated",
	}
	ids := []string{
		"01J9ZQ3V8M2K4N6P8R0T2W4Y6A",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789", // a secret's shape: masked in the input
		"req-s3cr3t-value-here",                    // holds a secret the input has
		"plain id with spaces and = signs",
	}
	reasonSets := [][]Reason{
		nil,
		{{Rule: "forbidden.command", Message: "sudo is forbidden"}},
		{{Rule: "secrets.token", Message: "the command sends token sk-live-abcdefghijklmnopqrstuvwx"}},
		// Secrets of the input that the message's own masking would not see.
		{{Rule: "db.password", Message: "logs in with Hunter2isMyPassw0rd, or s3cr3t-value-here, as topsecretpw"}},
	}
	details := []json.RawMessage{nil, json.RawMessage(`{"endpoint":"decide","sandbox":"process"}`),
		json.RawMessage(`{"password":"pw-in-detail"}`), json.RawMessage(`{"note":"s3cr3t-value-here"}`)}
	templated := 0
	for _, script := range scripts {
		doc := parse.Script(script, opts)
		doc.Principal = parse.Principal{Name: "agent-1", Role: "agent"}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := s.PrepareInput(raw)
		if err != nil {
			t.Fatalf("PrepareInput(%q): %v", script, err)
		}
		for _, id := range ids {
			withID := *doc
			withID.Request.ID = id
			rawID, _ := json.Marshal(&withID)
			for _, reasons := range reasonSets {
				for _, detail := range details {
					base := Record{Kind: KindDecision, Principal: Principal{Name: "agent-1", Role: "agent"},
						RequestID: id, Decision: "deny", Reasons: reasons, Revision: "rev", Detail: detail}
					whole, tr := base, base
					whole.Input, tr.InputTemplate = rawID, tmpl
					want, err := s.prepare(whole)
					if err != nil {
						t.Fatalf("prepare(%q, id %q): %v", script, id, err)
					}
					got, err := s.prepare(tr)
					if err != nil {
						t.Fatalf("prepare(template of %q, id %q): %v", script, id, err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%q, id %q, reasons %v, detail %s: the template's record differs:\n got %+v\nwant %+v", script, id, reasons, detail, got, want)
					}
					if tmpl.idStands(id) && (len(reasons) == 0 || reasons[0].Rule != "secrets.token") && !strings.Contains(string(detail), "password") {
						templated++
					}
				}
			}
		}
	}
	if templated == 0 {
		t.Error("no case used the template itself")
	}
}

// TestInputTemplateAppend: a record appended with a template is stored with its id in
// the input, and the chain verifies.
func TestInputTemplateAppend(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), Options{})
	doc := parse.Script("make test", parse.Options{Cwd: "/ws", Workspace: "/ws"})
	raw, _ := json.Marshal(doc)
	tmpl, err := s.PrepareInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"req-1", "req-2"} {
		rec, err := s.Append(t.Context(), Record{Kind: KindDecision, RequestID: id, Decision: "allow", InputTemplate: tmpl})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(t.Context(), rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		var in parse.Document
		if err := json.Unmarshal(got.Input, &in); err != nil || in.Request.ID != id || in.Request.Raw != "make test" || got.InputTemplate != nil {
			t.Errorf("stored input %s (%v), want request id %s", got.Input, err, id)
		}
	}
	if _, err := s.Append(t.Context(), Record{Kind: KindDecision, RequestID: "x", Input: raw, InputTemplate: tmpl}); err == nil {
		t.Error("a record with both an input and a template was appended")
	}
	if rep, err := s.Verify(t.Context(), VerifyOptions{}); err != nil || !rep.OK {
		t.Errorf("Verify = %+v, %v", rep, err)
	}
}

func TestPrepareInputRefuses(t *testing.T) {
	t.Parallel()
	s := openTest(t, t.TempDir(), Options{MaxInputBytes: 4096})
	named := openTest(t, t.TempDir(), Options{Mask: MaskOptions{Names: append(DefaultSecretNames(), "ID")}})
	for _, tc := range []struct {
		store *Store
		input string
		want  error
	}{
		{s, `{"request":{"id":"req-1"}}`, ErrNoTemplate},
		{s, `{"request":{}}`, ErrNoTemplate},
		{s, `{"request":"x"}`, ErrNoTemplate},
		{s, `[]`, ErrNoTemplate},
		{named, `{"request":{"id":""}}`, ErrNoTemplate},
	} {
		if _, err := tc.store.PrepareInput(json.RawMessage(tc.input)); !errors.Is(err, tc.want) {
			t.Errorf("PrepareInput(%s) = %v, want %v", tc.input, err, tc.want)
		}
	}
	var re *RecordError
	for _, bad := range []string{`{"request":{"id":""}`, `{"request":{"id":"","x":"` + strings.Repeat("a", 5000) + `"}}`, "{\"a\":\"\xff\"}"} {
		if _, err := s.PrepareInput(json.RawMessage(bad)); !errors.As(err, &re) {
			t.Errorf("PrepareInput(%.40q) = %v, want a RecordError", bad, err)
		}
	}
}
