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
