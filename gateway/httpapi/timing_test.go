package httpapi

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
)

// serverTiming parses a Server-Timing header into durations by name.
func serverTiming(t *testing.T, h string) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	for _, part := range strings.Split(h, ", ") {
		name, dur, ok := strings.Cut(part, ";dur=")
		ms, err := strconv.ParseFloat(dur, 64)
		if !ok || err != nil || ms < 0 {
			t.Fatalf("Server-Timing %q: entry %q is not name;dur=MS", h, part)
		}
		out[name] = time.Duration(ms * float64(time.Millisecond))
	}
	return out
}

// TestServerTiming: every answer says where its time went, phase by phase, in a
// Server-Timing header; the phases add up to no more than the whole request, and the
// per-phase histograms count them.
func TestServerTiming(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Now()
	a := e.exec("agent", map[string]any{"argv": []string{"true"}, "shell_mode": "direct"})
	elapsed := time.Since(start)
	if a.status != 200 {
		t.Fatalf("exec true = %d %s", a.status, a.body)
	}
	phases := serverTiming(t, a.header.Get("Server-Timing"))
	var sum time.Duration
	for _, p := range gateway.Phases() {
		d, ok := phases[p.String()]
		if !ok {
			t.Errorf("Server-Timing %q lacks %s", a.header.Get("Server-Timing"), p)
		}
		sum += d
	}
	if sum > elapsed {
		t.Errorf("the phases add up to %v, more than the %v the whole request took", sum, elapsed)
	}
	for _, p := range gateway.Phases() {
		if n := e.phaseCount(p.String()); n < 1 {
			t.Errorf("cmdgate_request_phase_seconds{phase=%q} counted %d requests", p, n)
		}
	}

	// A decision runs nothing: no sandbox, no run, no outcome record.
	a = e.do("POST", "/v1/decide", "agent", []byte(`{"command":"ls"}`))
	phases = serverTiming(t, a.header.Get("Server-Timing"))
	for _, p := range []string{"auth", "decode", "parse", "policy", "audit_decision", "encode"} {
		if _, ok := phases[p]; !ok {
			t.Errorf("decide: Server-Timing lacks %s: %v", p, phases)
		}
	}
	for _, p := range []string{"sandbox_start", "run", "audit_outcome"} {
		if _, ok := phases[p]; ok {
			t.Errorf("decide: Server-Timing has %s: %v", p, phases)
		}
	}
	// An error answer has its timing too.
	a = e.exec("agent", map[string]any{"command": "rm -rf /"})
	if phases = serverTiming(t, a.header.Get("Server-Timing")); a.status != 403 || !hasAll(phases, "auth", "decode", "parse", "policy", "audit_decision", "encode") {
		t.Errorf("denied exec: %d, Server-Timing %v", a.status, phases)
	}
}

// phaseCount is how many observations the phase's histogram holds.
func (e *testEnv) phaseCount(phase string) uint64 {
	mfs, err := e.srv.Registry().Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "cmdgate_request_phase_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "phase" && lp.GetValue() == phase {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

func hasAll(phases map[string]time.Duration, names ...string) bool {
	for _, n := range names {
		if _, ok := phases[n]; !ok {
			return false
		}
	}
	return true
}
