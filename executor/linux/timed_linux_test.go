package linux

import (
	"io"
	"log/slog"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
)

// TestTimedStepsNeverOverlap: the init may run its own code before its starter's word
// that it runs reaches the executor (a busy machine: seen under the race detector). The
// spawn then ends where the init's code began, its start takes no time, and the steps
// add up to no more than the total. The instants are made up: the race of two
// processes' schedulers cannot be produced on demand.
func TestTimedStepsNeverOverlap(t *testing.T) {
	e := &Executor{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	const ms = int64(1e6)
	now := wire.Now()
	begin, spawnAt := now-10*ms, now-9*ms
	for name, c := range map[string]struct {
		spawned, started int64
		spawn, start     int64
	}{
		"reply first": {spawned: now - 8*ms, started: now - 7*ms, spawn: 1000, start: 1000},
		"init first":  {spawned: now - 6*ms, started: now - 8*ms, spawn: 1000, start: 0},
	} {
		s := &sandbox{}
		r := wire.Report{Event: wire.EventReady, Started: c.started, Steps: []wire.Step{{Name: "root", NS: 2 * ms}}}
		e.timed(s, begin, spawnAt, c.spawned, r)
		var sum int64
		got := map[string]int64{}
		for _, st := range s.timing.Steps {
			got[st.Step] = st.US
			sum += st.US
		}
		if got["spawn"] != c.spawn || got["start"] != c.start || got["root"] != 2000 || sum > s.timing.TotalUS {
			t.Errorf("%s: timing %+v, want spawn %d µs, start %d µs, root 2000 µs, within the total", name, s.timing, c.spawn, c.start)
		}
	}
}
