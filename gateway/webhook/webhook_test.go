package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/webhook"
)

// A new approval is posted to the receiver, signed; a failing receiver gets retries
// with the same delivery id until it answers 2xx; nothing about the approval changes.
func TestDeliveryWithRetries(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	var mu sync.Mutex
	var calls []*http.Request
	var bodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r)
		bodies = append(bodies, b)
		n := len(calls)
		mu.Unlock()
		if n <= 2 {
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	defer recv.Close()

	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	opts := gateway.Options{Workspace: ws, DataDir: filepath.Join(base, "data"), Sandbox: gateway.SandboxProcess}
	opts.Policy.AllowedCommands.Exclude = []string{"touch"}
	opts.Policy.UnknownCommand = "ask"
	core, err := gateway.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close(context.Background())
	ctx, cancel := context.WithCancel(t.Context())
	wait, err := webhook.Start(ctx, core, webhook.Options{URL: recv.URL, Secret: secret, Backoff: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); wait() }()

	agent := gateway.Caller{Name: "agent", Role: gateway.RoleAgent, RequestID: gateway.NewRequestID(), Endpoint: "exec"}
	start := time.Now()
	_, err = core.Exec(t.Context(), agent, &gateway.Request{Argv: []string{"touch", "x"}})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code != gateway.CodeApprovalPending {
		t.Fatalf("exec: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the exec took %s: the webhook held it up", d)
	}
	for range 500 {
		mu.Lock()
		n := len(calls)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 3 {
		t.Fatalf("%d deliveries, want 3 (two failures, then success)", len(calls))
	}
	for i, r := range calls {
		if got := r.Header.Get(webhook.HeaderSignature); got != webhook.Sign(secret, bodies[i]) {
			t.Errorf("delivery %d: signature %q, want %q", i, got, webhook.Sign(secret, bodies[i]))
		}
		if r.Header.Get(webhook.HeaderDelivery) != ge.ApprovalID || r.Header.Get(webhook.HeaderEvent) != "approval.requested" {
			t.Errorf("delivery %d: headers %v", i, r.Header)
		}
	}
	var b webhook.Body
	if err := json.Unmarshal(bodies[2], &b); err != nil || b.Event != "approval.requested" || b.Approval.ID != ge.ApprovalID || b.Approval.State != gateway.ApprovalPending {
		t.Errorf("the body: %s (%v)", bodies[2], err)
	}
	if webhook.Sign([]byte("other"), bodies[2]) == webhook.Sign(secret, bodies[2]) {
		t.Error("the signature does not depend on the secret")
	}
	a, err := core.Approval(t.Context(), agent, ge.ApprovalID)
	if err != nil || a.State != gateway.ApprovalPending {
		t.Errorf("after the deliveries the approval is %v (%v)", a, err)
	}
}
