package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/policies"
)

// BenchmarkDecideWithGrants is the core's Decide (what POST /v1/decide runs: parse,
// policy, durable decision record) with no grant ("none", the peer) and with 10,000
// live grants ("10k": 100 principals with 100 grants each, the caller among them), for
// an everyday command no grant is about ("allowed") and for one that asks and that one
// of the caller's grants covers ("granted"; without grants it asks), with the decision
// cache off so that the policy, grant matching included, runs every time. Target: 10k
// at most 1.2× none.
func BenchmarkDecideWithGrants(b *testing.B) {
	for _, n := range []int{0, 10000} {
		name := "none"
		if n > 0 {
			name = "10k"
		}
		b.Run(name, func(b *testing.B) {
			s := benchServer(b)
			if n > 0 {
				addGrants(b, s, n)
			}
			caller := Caller{Name: "agent-0", Role: RoleAgent, Endpoint: "decide"}
			for _, c := range []struct{ name, script string }{
				{"allowed", "grep -rn TODO src | head -20 && go test ./..."},
				{"granted", "rm -r build"},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						caller.RequestID = NewRequestID()
						o, err := s.Decide(context.Background(), caller, &Request{Script: c.script})
						if err != nil {
							b.Fatal(err)
						}
						if c.name == "granted" && n > 0 && o.Decision != policies.ActionAllow {
							b.Fatalf("%s with grants: %s", c.script, o.Decision)
						}
					}
				})
			}
		})
	}
}

func benchServer(b testing.TB) *Server {
	b.Helper()
	base := b.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	// The decision cache is off: every request is evaluated, grants matched included.
	s, err := New(b.Context(), Options{Workspace: ws, DataDir: filepath.Join(base, "data"), Sandbox: SandboxProcess, DecisionCache: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// addGrants stores n command grants over 100 principals (agent-0 … agent-99); agent-0's
// last one covers `rm -r build` at the workspace's root.
func addGrants(b *testing.B, s *Server, n int) {
	b.Helper()
	now := time.Now().UTC()
	for i := range n {
		who := fmt.Sprintf("agent-%d", i%100)
		argv := []string{"rm", "-r", fmt.Sprintf("dir-%d", i)}
		if i == n-100 {
			argv = []string{"rm", "-r", "build"}
		}
		g := &Grant{ID: NewRequestID(), Scope: ScopeCommand, Principal: who, ApprovalID: NewRequestID(),
			CreatedBy: audit.Principal{Name: "boss", Role: string(RoleApprover)}, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			Commands: []policies.GrantCommand{{Argv: argv, Cwd: s.ws.Root(), Env: map[string]string{}}}}
		if err := s.state.insertGrant(context.Background(), g); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.refreshGrants(context.Background()); err != nil {
		b.Fatal(err)
	}
}
