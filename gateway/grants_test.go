package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/policies"
)

// A grant stops allowing when it expires: the expiry loop takes it out of the policy's
// data, and a use after its time is refused even before that.
func TestGrantExpires(t *testing.T) {
	t.Parallel()
	s := benchServer(t)
	now := time.Now().UTC()
	g := &Grant{ID: NewRequestID(), Scope: ScopeCommand, Principal: "alice", ApprovalID: NewRequestID(),
		CreatedBy: audit.Principal{Name: "boss", Role: string(RoleApprover)}, CreatedAt: now, ExpiresAt: now.Add(1500 * time.Millisecond),
		Commands: []policies.GrantCommand{{Argv: []string{"rm", "-r", "build"}, Cwd: s.ws.Root(), Env: map[string]string{}}}}
	if err := s.state.insertGrant(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := s.refreshGrants(context.Background()); err != nil {
		t.Fatal(err)
	}
	alice := Caller{Name: "alice", Role: RoleAgent, Endpoint: "exec"}
	decide := func() string {
		alice.RequestID = NewRequestID()
		o, err := s.Decide(context.Background(), alice, &Request{Script: "rm -r build"})
		if err != nil {
			t.Fatal(err)
		}
		return o.Decision
	}
	if d := decide(); d != policies.ActionAllow {
		t.Fatalf("with a live grant: %s", d)
	}
	time.Sleep(1600 * time.Millisecond)
	if ok, err := s.state.useGrant(context.Background(), g.ID, time.Now()); ok || err != nil {
		t.Errorf("a use after the expiry was counted (%v, %v)", ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for decide() != policies.ActionAsk {
		if time.Now().After(deadline) {
			t.Fatal("the expired grant still allows 5 s after its expiry")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two gateways on one data directory (cmdgate mcp beside cmdgate serve): an approval
// asked through one and decided through the other reaches the waiting caller, and a
// grant made through one allows through the other.
func TestApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	a := benchServer(t)
	opts := a.opts
	b, err := New(t.Context(), Options{Workspace: opts.Workspace, DataDir: opts.DataDir, Sandbox: SandboxProcess, DecisionCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: NewRequestID(), Endpoint: "exec"}
	boss := Caller{Name: "boss", Role: RoleApprover, RequestID: NewRequestID(), Endpoint: "approve"}
	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := a.Exec(context.Background(), alice, &Request{Script: "rm -r build", Wait: 20 * time.Second})
		done <- result{o, err}
	}()
	var id string
	for range 200 {
		list, err := b.Approvals(t.Context(), boss, ApprovalPending, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 {
			id = list[0].ID
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("the approval asked through one gateway is not in the other's queue")
	}
	if _, err := b.DecideApproval(t.Context(), boss, id, Verdict{Approve: true, Scope: ScopeCommand}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.o.Result == nil || r.o.Decision != policies.ActionAllow {
			t.Errorf("the waiting exec: %+v, %v", r.o, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the approval made through the other gateway did not reach the waiting caller")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		alice.RequestID = NewRequestID()
		o, err := a.Decide(context.Background(), alice, &Request{Script: "rm -r build"})
		if err != nil {
			t.Fatal(err)
		}
		if o.Decision == policies.ActionAllow {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant made through the other gateway does not allow here within 5 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
