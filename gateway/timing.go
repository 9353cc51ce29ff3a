package gateway

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Phase is a step of a request's handling, timed by a Timing.
type Phase uint8

// The phases, in the order a request meets them. A front times auth, decode and
// encode; the core the rest.
const (
	PhaseAuth          Phase = iota // the token checked
	PhaseDecode                     // the body read and decoded
	PhaseParse                      // the script parsed into the policy input
	PhasePolicy                     // the policy evaluated (grants included)
	PhaseAuditDecision              // the decision record appended, durably
	PhaseSandboxStart               // the sandbox (or process) started, up to the command's start
	PhaseRun                        // the command ran, from its start to its output read
	PhaseAuditOutcome               // the execution record appended, durably
	PhaseEncode                     // the answer encoded
	numPhases
)

var phaseNames = [numPhases]string{"auth", "decode", "parse", "policy", "audit_decision", "sandbox_start", "run", "audit_outcome", "encode"}

// Phases lists every phase in order.
func Phases() []Phase {
	ps := make([]Phase, numPhases)
	for i := range ps {
		ps[i] = Phase(i)
	}
	return ps
}

func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// Timing is the time one request spent in each phase. Its methods are safe for
// concurrent use, and a nil *Timing records nothing (a caller without one pays
// nothing). A phase met twice (two attempts at the policy) adds up.
type Timing struct {
	ns   [numPhases]atomic.Int64
	seen atomic.Uint32
}

// Add adds d to phase p.
func (t *Timing) Add(p Phase, d time.Duration) {
	if t == nil || p >= numPhases {
		return
	}
	t.ns[p].Add(int64(d))
	t.seen.Or(1 << p)
}

// Since adds the time since start to phase p and returns the time now, the start of
// the next phase.
func (t *Timing) Since(p Phase, start time.Time) time.Time {
	if t == nil {
		return start
	}
	now := time.Now()
	t.Add(p, now.Sub(start))
	return now
}

// Get is the time of phase p, and whether it was met.
func (t *Timing) Get(p Phase) (time.Duration, bool) {
	if t == nil || p >= numPhases || t.seen.Load()&(1<<p) == 0 {
		return 0, false
	}
	return time.Duration(t.ns[p].Load()), true
}

// Each calls fn for every phase met, in order.
func (t *Timing) Each(fn func(Phase, time.Duration)) {
	for p := range numPhases {
		if d, ok := t.Get(p); ok {
			fn(p, d)
		}
	}
}

// ServerTiming is the value of a Server-Timing response header (W3C Server Timing)
// for the phases met: `parse;dur=0.084, policy;dur=0.312, …`, durations in
// milliseconds.
func (t *Timing) ServerTiming() string {
	// Appended rather than formatted with fmt: every answer carries the header, and fmt
	// cost the gateway 2% of its CPU under load.
	var buf [256]byte
	b := buf[:0]
	t.Each(func(p Phase, d time.Duration) {
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, p.String()...)
		b = append(b, ";dur="...)
		b = strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
	})
	return string(b)
}
