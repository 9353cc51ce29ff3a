package jobs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newJob(t testing.TB, s *Store, at time.Time, principal, state string) *Job {
	t.Helper()
	j := &Job{ID: NewID(at), State: state, Principal: principal, Argv: []string{"true"}, Cwd: "/ws", StartedAt: at.UTC()}
	if state != Running {
		end := at.Add(time.Second).UTC()
		j.FinishedAt = &end
		if state == Exited {
			zero := 0
			j.ExitCode = &zero
		}
	}
	if err := s.Create(j); err != nil {
		t.Fatal(err)
	}
	return j
}

// Ids are 32 hex characters that sort by creation time.
func TestIDs(t *testing.T) {
	t.Parallel()
	a, b := NewID(time.UnixMilli(1_700_000_000_000)), NewID(time.UnixMilli(1_700_000_000_001))
	if !ValidID(a) || !ValidID(b) || idTime(a) >= idTime(b) || a == NewID(time.UnixMilli(1_700_000_000_000)) || a[:6] == b[:6] {
		t.Errorf("ids %s %s", a, b)
	}
	for _, bad := range []string{"", "abc", strings.Repeat("g", 32), strings.ToUpper(a), a + "0"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
}

// Seed 003's root order: --root, CMDGATE_JOB_ROOT, $XDG_DATA_HOME/cmdgate/jobs,
// ~/.local/share/cmdgate/jobs.
func TestResolveRoot(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	all := map[string]string{RootEnv: "/from/env", "XDG_DATA_HOME": "/xdg", "HOME": "/u/me"}
	for _, c := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"/from/flag", all, "/from/flag"},
		{"", all, "/from/env"},
		{"", map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/u/me"}, "/xdg/cmdgate/jobs"},
		{"", map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/u/me"}, "/u/me/.local/share/cmdgate/jobs"},
		{"", map[string]string{"HOME": "/u/me"}, "/u/me/.local/share/cmdgate/jobs"},
	} {
		if got, err := ResolveRoot(c.flag, env(c.env)); err != nil || got != c.want {
			t.Errorf("ResolveRoot(%q, %v) = %q, %v; want %q", c.flag, c.env, got, err, c.want)
		}
	}
}

// A unique prefix of 6 or more characters names a job; a shorter one is invalid, a
// shared one ambiguous, an unknown one not found, and a job the caller may not see is
// not found either (its existence does not leak).
func TestResolve(t *testing.T) {
	t.Parallel()
	s := &Store{Root: t.TempDir()}
	at := time.Now()
	a := newJob(t, s, at, "alice", Running)
	// b shares a's first 12 characters.
	b := &Job{ID: a.ID[:12] + NewID(at)[12:], State: Running, Principal: "bob", Argv: []string{"true"}, Cwd: "/ws", StartedAt: at.UTC()}
	if err := s.Create(b); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, want string
	}{
		{a.ID, ""}, {a.ID[:20], ""}, {strings.ToUpper(a.ID[:20]), ""},
		{a.ID[:12], CodeAmbiguous}, {a.ID[:5], CodeInvalidInput}, {"zzzzzzzz", CodeInvalidInput},
		{"ffffffffffff", CodeNotFound}, {a.ID + "0", CodeInvalidInput},
	} {
		j, err := s.Resolve(c.id, nil)
		if code(err) != c.want || (c.want == "" && (j == nil || j.ID != a.ID)) {
			t.Errorf("Resolve(%q) = %v, %v; want code %q", c.id, j, err, c.want)
		}
	}
	onlyAlice := func(j *Job) bool { return j.Principal == "alice" }
	if _, err := s.Resolve(b.ID, onlyAlice); code(err) != CodeNotFound {
		t.Errorf("alice resolving bob's job: %v; want job_not_found", err)
	}
	if j, err := s.Resolve(a.ID[:12], onlyAlice); err != nil || j.ID != a.ID {
		t.Errorf("alice resolving a prefix she alone can see: %v, %v", j, err)
	}
}

// list: newest first, the limit with truncated, the state filter, a corrupted job
// directory counted in skipped, a missing root listing nothing.
func TestList(t *testing.T) {
	t.Parallel()
	s := &Store{Root: t.TempDir()}
	base := time.Now().Add(-time.Hour)
	var jobs []*Job
	for i, st := range []string{Exited, Running, Killed, Exited, Failed} {
		jobs = append(jobs, newJob(t, s, base.Add(time.Duration(i)*time.Minute), "alice", st))
	}
	broken := newJob(t, s, base.Add(10*time.Minute), "alice", Running)
	if err := os.WriteFile(filepath.Join(s.Dir(broken.ID), MetaFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := s.List(0, "", nil)
	if err != nil || len(l.Jobs) != 5 || l.Skipped != 1 || l.Truncated || l.Root != s.Root {
		t.Fatalf("List() = %+v, %v", l, err)
	}
	for i, j := range l.Jobs {
		if j.ID != jobs[4-i].ID {
			t.Errorf("List()[%d] = %s, want %s (newest first)", i, j.ID, jobs[4-i].ID)
		}
	}
	if l, _ := s.List(2, "", nil); len(l.Jobs) != 2 || !l.Truncated || l.Jobs[0].ID != jobs[4].ID {
		t.Errorf("List(2) = %+v", l)
	}
	if l, _ := s.List(5, "", nil); len(l.Jobs) != 5 || l.Truncated {
		t.Errorf("List(5) = %d jobs, truncated %v", len(l.Jobs), l.Truncated)
	}
	if l, _ := s.List(0, Exited, nil); len(l.Jobs) != 2 || l.Jobs[0].ID != jobs[3].ID {
		t.Errorf("List(exited) = %+v", l)
	}
	if _, err := s.List(0, "sleeping", nil); code(err) != CodeInvalidInput {
		t.Errorf("List(sleeping): %v", err)
	}
	missing := &Store{Root: filepath.Join(t.TempDir(), "does", "not", "exist")}
	if l, err := missing.List(0, "", nil); err != nil || l.Jobs == nil || len(l.Jobs) != 0 {
		t.Errorf("a missing root: %+v, %v; want jobs: []", l, err)
	}
}

// gc removes finished jobs older than the cutoff, never running ones.
func TestGC(t *testing.T) {
	t.Parallel()
	s := &Store{Root: t.TempDir()}
	old := newJob(t, s, time.Now().Add(-10*24*time.Hour), "alice", Exited)
	running := newJob(t, s, time.Now().Add(-10*24*time.Hour), "alice", Running)
	recent := newJob(t, s, time.Now(), "alice", Exited)
	removed, err := s.GC(time.Now().Add(-7*24*time.Hour), nil)
	if err != nil || len(removed) != 1 || removed[0] != old.ID {
		t.Fatalf("GC = %v, %v", removed, err)
	}
	for _, j := range []*Job{running, recent} {
		if _, err := os.Stat(s.Dir(j.ID)); err != nil {
			t.Errorf("GC removed %s", j.State)
		}
	}
}

// A log keeps the first cap bytes, counts all of them, and says where it stopped; a
// tail is valid UTF-8 whatever the log holds, cut at a character boundary.
func TestLogAndTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), StdoutFile)
	l, err := OpenLog(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		l.Write([]byte("line\xff\n")) // 6 bytes, one of them invalid UTF-8
	}
	obs, capped := l.Observed()
	l.Close()
	if obs != 180 || !capped {
		t.Errorf("observed %d, capped %v; want 180, true", obs, capped)
	}
	b, _ := os.ReadFile(path)
	if !bytes.HasPrefix(b, bytes.Repeat([]byte("line\xff\n"), 16)) || !bytes.Contains(b, []byte("this log stops here, at 100 bytes")) {
		t.Errorf("the log: %q", b)
	}
	tail, err := ReadTail(path, 1<<20, 3)
	if err != nil || tail.Encoding != "utf-8-lossy" || strings.Count(tail.Text, "\n") != 3 || !strings.Contains(tail.Text, "stops here") {
		t.Errorf("tail of 3 lines: %+v, %v", tail, err)
	}
	tail, _ = ReadTail(path, 12, 0)
	if tail.IncludedBytes > 12 || tail.ObservedBytes != int64(len(b)) {
		t.Errorf("tail of 12 bytes: %+v", tail)
	}
	// A cut inside a multi-byte character starts at the next character.
	os.WriteFile(path, []byte("ééé"), 0o600)
	if tail, _ := ReadTail(path, 3, 0); tail.Text != "é" {
		t.Errorf("a tail cut inside é: %q", tail.Text)
	}
	if tail, err := ReadTail(filepath.Join(t.TempDir(), "none.log"), 10, 0); err != nil || tail.Text != "" {
		t.Errorf("a missing log: %+v, %v", tail, err)
	}
	if !strings.Contains(strings.ToValidUTF8("a\xffb", "\uFFFD"), "\uFFFD") {
		t.Fatal("the replacement character is missing")
	}
}

// BenchmarkJobList lists the 20 newest of 10,000 jobs, as `cmdgate job list --limit
// 20` does (target: under 50 ms on a 2-core machine).
func BenchmarkJobList(b *testing.B) {
	s := &Store{Root: b.TempDir()}
	base := time.Now().Add(-10000 * time.Second)
	for i := range 10000 {
		newJob(b, s, base.Add(time.Duration(i)*time.Second), "alice", Exited)
	}
	b.ResetTimer()
	for b.Loop() {
		l, err := s.List(20, "", nil)
		if err != nil || len(l.Jobs) != 20 || !l.Truncated {
			b.Fatalf("List(20) = %d jobs, %v", len(l.Jobs), err)
		}
	}
}
