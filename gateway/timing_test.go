package gateway

import (
	"testing"
	"time"
)

// TestServerTimingFormat: the header lists the phases met, in order, each as
// name;dur=<milliseconds with three decimals>, as W3C Server Timing reads them.
func TestServerTimingFormat(t *testing.T) {
	t.Parallel()
	var nilTiming *Timing
	if got := nilTiming.ServerTiming(); got != "" {
		t.Errorf("nil Timing: %q, want empty", got)
	}
	if got := (&Timing{}).ServerTiming(); got != "" {
		t.Errorf("no phase met: %q, want empty", got)
	}
	var tm Timing
	tm.Add(PhaseEncode, 999_499*time.Nanosecond) // rounds down at the fourth decimal
	tm.Add(PhaseAuth, 0)                         // met, though it took no time
	tm.Add(PhasePolicy, 1500*time.Microsecond)
	tm.Add(PhasePolicy, 250*time.Microsecond) // a second attempt adds up
	tm.Add(PhaseRun, 3*time.Minute+7*time.Nanosecond)
	want := "auth;dur=0.000, policy;dur=1.750, run;dur=180000.000, encode;dur=0.999"
	if got := tm.ServerTiming(); got != want {
		t.Errorf("ServerTiming() = %q\nwant %q", got, want)
	}
}
