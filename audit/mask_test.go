package audit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMaskText(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		// Assignments to secret-looking names.
		{"FOO_TOKEN=abc123 make", "FOO_TOKEN=**** make"},
		{"export GITHUB_TOKEN='a b c'; make", "export GITHUB_TOKEN='****'; make"},
		{`DB_PASSWORD="p w" ./run`, `DB_PASSWORD="****" ./run`},
		{"aws_secret_access_key=AbC/dEf+1 x", "aws_secret_access_key=**** x"},
		{"API_KEY=k1&other=1", "API_KEY=****&other=1"},
		// Options with = and with a separate value.
		{"mysql --password=hunter2 db", "mysql --password=**** db"},
		{"mysql --db-password=hunter2", "mysql --db-password=****"},
		{"tool --token s3cr3t-value https://x", "tool --token **** https://x"},
		{`tool --client-secret "a b" run`, `tool --client-secret "****" run`},
		{"java -Dpassword=x1 -jar a.jar", "java -Dpassword=**** -jar a.jar"},
		// Headers.
		{`curl -H "Authorization: Bearer abc.def" https://x`, `curl -H "Authorization: ****" https://x`},
		{`curl -H 'Cookie: a=b; c=d' https://x`, `curl -H 'Cookie: ****' https://x`},
		{"Proxy-Authorization: Basic dXNlcjpwYXNz\nHost: x", "Proxy-Authorization: ****\nHost: x"},
		{"X-Api-Key: abc", "X-Api-Key: ****"},
		// An unquoted header value runs to the end of the line: more is masked than needed.
		{"wget --header=Authorization:Bearer_tok https://x", "wget --header=Authorization:****"},
		// Bare schemes.
		{"Bearer eyJhbGciOi.payload.sig", "Bearer ****"},
		{"auth Basic dXNlcjpwYXNzd29yZA==", "auth Basic ****"},
		// URLs.
		{"git clone https://user:pa55word@github.com/x.git", "git clone https://user:****@github.com/x.git"},
		{"git clone https://ghtoken123@github.com/x.git", "git clone https://****@github.com/x.git"},
		{"psql 'postgres://u:pw@db:5432/app?sslmode=require&password=pw2'", "psql 'postgres://u:****@db:5432/app?sslmode=require&password=****'"},
		{"curl 'https://api.x/v1?access_token=abc&page=2'", "curl 'https://api.x/v1?access_token=****&page=2'"},
		// JSON inside text.
		{`curl -d '{"user":"bob","password":"x1"}' https://x`, `curl -d '{"user":"bob","password":"****"}' https://x`},
		// Known token formats.
		{"echo ghp_abcdefghijklmnopqrstuvwxyz0123456789 | gh auth login", "echo ghp_**** | gh auth login"},
		{"AKIAABCDEFGHIJKLMNOP", "AKIA****"},
		{"key xoxb-1234567890-abcdefghijkl", "key xoxb-****"},
		// Private keys.
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----****-----END OPENSSH PRIVATE KEY-----"},
		// Left alone.
		{"rm -rf build && make -j4 test", "rm -rf build && make -j4 test"},
		{"PATH=/usr/bin:/bin ls -la", "PATH=/usr/bin:/bin ls -la"},
		{"git commit -m 'fix: cache handling'", "git commit -m 'fix: cache handling'"},
		{"https://github.com/cmdgate/cmdgate", "https://github.com/cmdgate/cmdgate"},
		{"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----"},
		{"task-manager --skip-tests", "task-manager --skip-tests"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := m.MaskText(tc.in); got != tc.want {
			t.Errorf("MaskText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMaskJSON(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, in, want string }{
		{"env values of secret names, whole subtree",
			`{"env":{"FOO":"bar","GH_TOKEN":"t1","NESTED_SECRET":{"a":["x",2,null,true]}}}`,
			`{"env":{"FOO":"bar","GH_TOKEN":"****","NESTED_SECRET":{"a":["****","****",null,true]}}}`},
		{"argv option followed by its value, and everywhere else the value occurs",
			`{"argv":["tool","--token","abcd1234","run"],"operands":[{"text":"abcd1234","path":"/ws/abcd1234"}],"raw":"tool --token abcd1234 run"}`,
			`{"argv":["tool","--token","****","run"],"operands":[{"path":"/ws/****","text":"****"}],"raw":"tool --token **** run"}`},
		{"configured flags: sshpass -p",
			`{"argv":["sshpass","-p","pw9x","ssh","host"],"raw":"sshpass -p pw9x ssh host"}`,
			`{"argv":["sshpass","-p","****","ssh","host"],"raw":"sshpass -p **** ssh host"}`},
		{"configured flags: mysql -pSECRET",
			`{"argv":["/usr/bin/mysql","-u","root","-phunter2","db"],"raw":"mysql -u root -phunter2 db"}`,
			`{"argv":["/usr/bin/mysql","-u","root","-p****","db"],"raw":"mysql -u root -p**** db"}`},
		{"configured flags apply to their command only",
			`{"argv":["mkdir","-p","build"]}`,
			`{"argv":["mkdir","-p","build"]}`},
		{"curl -u user:password",
			`{"argv":["curl","-u","bob:pw1234","https://x"]}`,
			`{"argv":["curl","-u","****","https://x"]}`},
		{"short values are replaced where a whole string equals them",
			`{"argv":["tool","--password","pw","x"],"operands":[{"text":"pw"},{"text":"pwx"}]}`,
			`{"argv":["tool","--password","****","x"],"operands":[{"text":"****"},{"text":"pwx"}]}`},
		{"numbers under secret keys",
			`{"pin_code":1234,"db_password":98765}`,
			`{"db_password":"****","pin_code":1234}`},
		{"canonical output: sorted keys, no blanks, numbers",
			`{ "b" : 1.0, "a" : [1e2, -0, 0.5, 1E-7] }`,
			`{"a":[100,0,0.5,1e-7],"b":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.MaskJSON([]byte(tc.in))
			if err != nil {
				t.Fatalf("MaskJSON(%s) = %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("MaskJSON(%s) =\n%s\nwant\n%s", tc.in, got, tc.want)
			}
		})
	}
}

func TestMaskOptions(t *testing.T) {
	t.Parallel()
	m, err := NewMasker(MaskOptions{Names: append(DefaultSecretNames(), "*ACCOUNT_NO*"), Flags: []string{"deploy:-k"}, ValuePrefixes: []string{"acme_"}})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"ACCOUNT_NO=12345 x":                 "ACCOUNT_NO=**** x",
		"GH_TOKEN=abc":                       "GH_TOKEN=****",
		"acme_0123456789abcdefghij":          "acme_****",
		"ghp_abcdefghijklmnopqrstuvwxyz0123": "ghp_abcdefghijklmnopqrstuvwxyz0123", // prefixes replaced
	} {
		if got := m.MaskText(in); got != want {
			t.Errorf("MaskText(%q) = %q, want %q", in, got, want)
		}
	}
	got, err := m.MaskJSON([]byte(`{"argv":["deploy","-k","kkk1","x"]}`))
	if err != nil || string(got) != `{"argv":["deploy","-k","****","x"]}` {
		t.Errorf("MaskJSON(deploy -k) = %s, %v", got, err)
	}
	none, err := NewMasker(MaskOptions{Names: []string{}, Flags: []string{}, ValuePrefixes: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := none.MaskText("GH_TOKEN=abc"); got != "GH_TOKEN=abc" {
		t.Errorf("MaskText with no names = %q, want it unchanged", got)
	}
	for _, bad := range []MaskOptions{{Names: []string{""}}, {Flags: []string{"curl:u"}}, {ValuePrefixes: []string{"x"}}} {
		if _, err := NewMasker(bad); err == nil {
			t.Errorf("NewMasker(%+v) = nil error, want an error", bad)
		}
	}
}

// TestSecretsNeverReachTheDataDirectory puts a distinct secret in every place a record
// can carry one and checks that none of them appears in any file of the data directory:
// the database, its WAL and shared memory while the store is open, and everything after
// it is closed. The free-text index is in the database, so it is covered too.
func TestSecretsNeverReachTheDataDirectory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	secret := func(i int) string { return fmt.Sprintf("Sx%02dqzvK7wLp", i) }
	type place struct {
		name string
		rec  func(s string) Record
	}
	input := func(doc string) json.RawMessage { return json.RawMessage(doc) }
	dec := func(in string) Record {
		return Record{Kind: KindDecision, Principal: Principal{"agent", "agent"}, Input: input(in), Decision: "deny"}
	}
	places := []place{
		{"env map", func(s string) Record { return dec(`{"commands":[{"env":{"FOO_TOKEN":"` + s + `"}}]}`) }},
		{"env assignment in raw", func(s string) Record { return dec(`{"request":{"raw":"MY_SECRET=` + s + ` ./deploy"}}`) }},
		{"assignment argv word", func(s string) Record { return dec(`{"commands":[{"argv":["env","API_KEY=` + s + `","run"]}]}`) }},
		{"--password=", func(s string) Record { return dec(`{"commands":[{"argv":["mysql","--password=` + s + `"]}]}`) }},
		{"--token value pair, echoed in operands and raw", func(s string) Record {
			return dec(`{"request":{"raw":"gh --token ` + s + ` api"},"commands":[{"argv":["gh","--token","` + s + `","api"],"operands":[{"text":"` + s + `","path":"/ws/` + s + `"}]}]}`)
		}},
		{"Authorization header in argv", func(s string) Record {
			return dec(`{"commands":[{"argv":["curl","-H","Authorization: Bearer ` + s + `","https://x"]}]}`)
		}},
		{"Cookie header in raw", func(s string) Record { return dec(`{"request":{"raw":"curl -H 'Cookie: sid=` + s + `' https://x"}}`) }},
		{"credentials in a URL", func(s string) Record {
			return dec(`{"commands":[{"argv":["git","clone","https://bob:` + s + `@example.com/r.git"]}]}`)
		}},
		{"token as URL user", func(s string) Record {
			return dec(`{"request":{"raw":"git push https://` + s + `@example.com/r.git"}}`)
		}},
		{"password in a query string", func(s string) Record { return dec(`{"request":{"raw":"curl 'https://x/?user=a&password=` + s + `'"}}`) }},
		{"mysql -pSECRET", func(s string) Record {
			return dec(`{"commands":[{"argv":["mysql","-p` + s + `"]}],"request":{"raw":"mysql -p` + s + `"}}`)
		}},
		{"sshpass -p SECRET", func(s string) Record {
			return dec(`{"commands":[{"argv":["sshpass","-p","` + s + `","ssh","h"]}],"request":{"raw":"sshpass -p ` + s + ` ssh h"}}`)
		}},
		{"JSON body with a password", func(s string) Record {
			return dec(`{"request":{"raw":"curl -d '{\"password\":\"` + s + `\"}' https://x"}}`)
		}},
		{"redirect target named by the secret", func(s string) Record {
			return dec(`{"commands":[{"argv":["tool","--api-key","` + s + `"],"redirects":[{"target":"` + s + `.log"}]}]}`)
		}},
		{"reason message", func(s string) Record {
			r := dec(`{"request":{"raw":"x"}}`)
			r.Reasons = []Reason{{Rule: "r.x", Message: "refused: command sets GITHUB_TOKEN=" + s}}
			return r
		}},
		{"execution error", func(s string) Record {
			return Record{Kind: KindExecution, DecisionID: "01J00000000000000000000000", Execution: &Execution{Error: "exec failed: Authorization: Bearer " + s}}
		}},
		{"detail member", func(s string) Record {
			return Record{Kind: KindAuthFailure, Detail: input(`{"presented_token":"` + s + `","remote":"127.0.0.1"}`)}
		}},
		{"detail text", func(s string) Record {
			return Record{Kind: KindPolicyLoad, Detail: input(`{"error":"bundle fetch failed: https://u:` + s + `@bundles.example/b.tar.gz"}`)}
		}},
	}
	dir := t.TempDir()
	s := openTest(t, dir, Options{CheckpointEvery: 5})
	for i, p := range places {
		if _, err := s.Append(ctx, p.rec(secret(i))); err != nil {
			t.Fatalf("Append(%s) = %v", p.name, err)
		}
	}
	// Make the search index hold the records too.
	grepDir := func(when string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range places {
				if bytes.Contains(data, []byte(secret(i))) || bytes.Contains(bytes.ToLower(data), []byte(strings.ToLower(secret(i)))) {
					t.Errorf("%s: the secret of %q is in %s", when, p.name, e.Name())
				}
			}
		}
	}
	if err := s.flushIndex(ctx); err != nil {
		t.Fatal(err)
	}
	grepDir("while open")
	page, err := s.Query(ctx, Query{Limit: MaxLimit})
	if err != nil || len(page.Records) != len(places) {
		t.Fatalf("Query() = %d records, %v", len(page.Records), err)
	}
	out, _ := json.Marshal(page)
	for i, p := range places {
		if bytes.Contains(out, []byte(secret(i))) {
			t.Errorf("the secret of %q is in the query output", p.name)
		}
	}
	if !bytes.Contains(out, []byte(Marker)) {
		t.Errorf("query output has no %s marker", Marker)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	grepDir("after close")
}

// prefixSpansByIndex is the straightforward form of prefixSpans (one strings.Index
// pass per prefix), which the one-scan form must match.
func prefixSpansByIndex(m *Masker, s string) []span {
	var spans []span
	for _, p := range m.prefixes {
		for off := 0; ; {
			i := strings.Index(s[off:], p)
			if i < 0 {
				break
			}
			i += off
			off = i + len(p)
			if i > 0 && (isNameByte(s[i-1]) && s[i-1] != '.' || s[i-1] == '+' || s[i-1] == '/') {
				continue
			}
			e := off
			for e < len(s) && isTokenByte(s[e]) {
				e++
			}
			if e-off >= minValueLen {
				spans = append(spans, span{off, e})
				off = e
			}
		}
	}
	return spans
}

func FuzzPrefixSpans(f *testing.F) {
	for _, s := range []string{
		"token ghp_abcdefghijklmnopqrstuvwxyz0123 and sk-sk-sk-abcdefghijklmnopqrstu",
		"xghp_abcdefghijklmnop ghp_ghp_abcdefghijklmnopqrs /AKIAABCDEFGHIJKLMNOP",
		"sk_live_abcdefghijklmnopqrstuv,sk-abcdefghijklmnopqrstuvwxyz eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0",
		"", "ghp_", "sk-sk-",
	} {
		f.Add(s)
	}
	m, err := NewMasker(MaskOptions{ValuePrefixes: append(DefaultValuePrefixes(), "sk-sk", "ab")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := m.prefixSpans(s, nil), prefixSpansByIndex(m, s)
		cmpSpans := func(a, b span) int { return cmp.Or(a.start-b.start, a.end-b.end) }
		slices.SortFunc(got, cmpSpans)
		slices.SortFunc(want, cmpSpans)
		if !slices.Equal(got, want) {
			t.Errorf("prefixSpans(%q) = %v, want %v", s, got, want)
		}
	})
}
