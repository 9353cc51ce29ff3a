package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
)

// served starts Serve on a real listener on 127.0.0.1 and returns its URL, the function
// that begins the shutdown, and a channel with Serve's result.
func served(t *testing.T, env *testEnv) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- env.front.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), cancel, done
}

// post sends an exec request in the background; the answer arrives on the channel.
func post(t *testing.T, env *testEnv, url, script string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/v1/exec", bytes.NewReader(mustJSON(t, map[string]any{"command": script})))
		req.Header.Set("Authorization", env.tokens["agent"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- answer{resp.StatusCode, resp.Header, b}
	}()
	return ch
}

func waitInFlight(t *testing.T, env *testEnv, n float64) {
	t.Helper()
	waitFor(t, "commands in flight", func() (string, bool) {
		return "", env.metric("cmdgate_commands_in_flight") == n
	})
}

// stoppedRecord returns the execution record of the decision, and its stop reason.
func stoppedRecord(t *testing.T, env *testEnv, decisionID string) (audit.Record, string) {
	t.Helper()
	for _, r := range env.recordsOf(audit.KindExecution) {
		if r.DecisionID == decisionID {
			var d struct {
				Stopped string `json:"stopped"`
			}
			json.Unmarshal(r.Detail, &d)
			return r, d.Stopped
		}
	}
	t.Fatalf("no execution record for decision %s", decisionID)
	return audit.Record{}, ""
}

// TestGracefulShutdown: once shutdown begins, a command that ends within the grace
// finishes and is answered; one that does not is stopped after the grace, answered
// UNAVAILABLE, and its execution record says the gateway shut down. New connections
// are refused.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(o *gateway.Options) { o.ShutdownGrace = 1500 * time.Millisecond })
	url, shutdown, done := served(t, env)
	short := post(t, env, url, "sleep 0.5; echo short-done")
	long := post(t, env, url, "echo long-started; sleep 30; echo long-done")
	waitInFlight(t, env, 2)
	shutdown()

	a := <-short
	var out execOut
	a.decode(t, &out)
	if a.status != http.StatusOK || out.Stdout != "short-done\n" || out.ExitCode != 0 {
		t.Errorf("command within the grace: %d %s, want 200 short-done", a.status, a.body)
	}
	b := <-long
	var e errOut
	b.decode(t, &e)
	if b.status != http.StatusServiceUnavailable || e.Error.Code != gateway.CodeUnavailable || !strings.Contains(e.Error.Message, "shut down") || e.Error.DecisionID == "" {
		t.Fatalf("command past the grace: %d %s, want 503 UNAVAILABLE naming the shutdown", b.status, b.body)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil after a graceful shutdown", err)
	}
	rec, stopped := stoppedRecord(t, env, e.Error.DecisionID)
	if stopped != "shutdown" || !strings.Contains(rec.Execution.Error, "shut down") || rec.Execution.ExitCode == 0 || rec.Execution.StdoutBytes != int64(len("long-started\n")) {
		t.Errorf("execution record of the stopped command: %+v %s, want stopped by the shutdown after printing long-started", rec.Execution, rec.Detail)
	}
	_, shortStopped := stoppedRecord(t, env, out.DecisionID)
	if shortStopped != "" {
		t.Errorf("the command that finished is recorded as stopped: %q", shortStopped)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the listener still accepts connections after the shutdown")
	}
}

// TestAbortStopsAtOnce: a second interrupt (Abort) stops running commands without
// waiting for the grace.
func TestAbortStopsAtOnce(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(o *gateway.Options) { o.ShutdownGrace = 10 * time.Minute })
	url, shutdown, done := served(t, env)
	long := post(t, env, url, "sleep 60")
	waitInFlight(t, env, 1)
	shutdown()
	time.Sleep(100 * time.Millisecond)
	if a := env.do("GET", "/healthz", "none", nil); a.status != http.StatusServiceUnavailable {
		t.Errorf("healthz while shutting down: %d %s, want 503", a.status, a.body)
	}
	env.srv.Abort()
	b := <-long
	if b.status != http.StatusServiceUnavailable || b.errorCode() != gateway.CodeUnavailable {
		t.Errorf("aborted command: %d %s, want 503 UNAVAILABLE", b.status, b.body)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve = %v", err)
	}
	var e errOut
	b.decode(t, &e)
	if _, stopped := stoppedRecord(t, env, e.Error.DecisionID); stopped != "shutdown" {
		t.Errorf("aborted command recorded as stopped %q, want shutdown", stopped)
	}
	// Nothing starts after the commands were stopped: the decision is recorded, the
	// command is not run, and the execution record says why.
	a := env.exec("agent", map[string]any{"command": "touch late-marker"})
	if a.status != http.StatusServiceUnavailable || env.exists("late-marker") {
		t.Errorf("exec after abort: %d %s (ran: %v), want 503 and nothing run", a.status, a.body, env.exists("late-marker"))
	}
}

// TestClientGoneStopsCommand: a client that disconnects stops its command, and the
// execution record says so.
func TestClientGoneStopsCommand(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", env.url+"/v1/exec", strings.NewReader(`{"command":"sleep 60"}`))
	req.Header.Set("Authorization", env.tokens["agent"])
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitInFlight(t, env, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client request = %v, want canceled", err)
	}
	waitInFlight(t, env, 0)
	rec := waitFor(t, "the execution record", func() (string, bool) {
		for _, r := range env.recordsOf(audit.KindExecution) {
			return string(r.Detail) + " " + r.Execution.Error, true
		}
		return "", false
	})
	if !strings.Contains(rec, `"stopped":"client_gone"`) || !strings.Contains(rec, "went away") {
		t.Errorf("execution record of an abandoned command: %s", rec)
	}
}
