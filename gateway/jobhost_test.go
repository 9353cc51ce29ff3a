//go:build unix

package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/jobs"
)

// hostedServer is a gateway (process backend) whose job host runs in this process.
func hostedServer(t *testing.T) *Server {
	t.Helper()
	s := benchServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunJobHost(ctx, s.opts, s.jobStore.Root, s.hostKey(), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("job host: %v", err)
		}
	})
	// Wait until it serves.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := s.hostCall(t.Context(), s.hostKey(), hostRequest{Op: "wait", ID: strings.Repeat("0", 32)}, false); err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatal("the job host does not serve")
		}
	}
}

// The job host runs nothing without the durable record of an allow decision of the
// job's principal: a job directory made by hand, one naming a record that is not a
// decision, a denial, or another principal's decision is refused and marked failed.
func TestJobHostFailsClosed(t *testing.T) {
	s := hostedServer(t)
	caller := Caller{Name: "alice", Role: RoleAgent, RequestID: "t"}
	deny, err := s.Decide(t.Context(), caller, &Request{Script: "rm -rf /"})
	if err != nil || deny.Decision != "deny" {
		t.Fatalf("decide rm -rf /: %+v %v", deny, err)
	}
	allow, err := s.Decide(t.Context(), Caller{Name: "bob", Role: RoleAgent, RequestID: "t"}, &Request{Script: "echo hi"})
	if err != nil || allow.Decision != "allow" {
		t.Fatalf("decide echo: %+v %v", allow, err)
	}
	for _, c := range []struct{ name, decisionID string }{
		{"no decision", ""},
		{"an unknown record", "01M8AAAAAAAAAAAAAAAAAAAAAA"},
		{"a denial", deny.DecisionID},
		{"another principal's allow", allow.DecisionID},
	} {
		now := time.Now().UTC()
		j := &jobs.Job{ID: jobs.NewID(now), State: jobs.Running, Principal: "alice", Role: "agent",
			Command: "echo ran > ran.txt", Cwd: s.ws.Root(), StartedAt: now, DecisionID: c.decisionID}
		if err := s.jobStore.Create(j); err != nil {
			t.Fatal(err)
		}
		err := s.hostRun(t.Context(), j.ID)
		got, gerr := s.jobStore.Get(j.ID)
		if err == nil || !strings.Contains(err.Error(), "not started") || gerr != nil || got.State != jobs.Failed {
			t.Errorf("%s: hostRun = %v; job %+v, %v; want refused and failed", c.name, err, got, gerr)
		}
	}
	// And the allowed job runs.
	_, j, err := s.StartJob(t.Context(), caller, &JobRequest{Request: Request{Script: "echo ran"}})
	if err != nil {
		t.Fatal(err)
	}
	if j, done, err := s.WaitJob(t.Context(), caller, j.ID, 30*time.Second); err != nil || !done || j.State != jobs.Exited {
		t.Errorf("an allowed job: %+v %v %v", j, done, err)
	}
}
