package executor

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Tree is the running process tree of one command as a backend controls it: a Unix
// process group, a Windows job object, a sandbox's init.
type Tree interface {
	// Terminate asks every process of the tree to stop (SIGTERM to the group). A
	// platform without a gentle stop kills.
	Terminate() error
	// Kill stops every process of the tree at once (SIGKILL to the group).
	Kill() error
}

// ErrKillNow, as the cause of a run's context (context.WithCancelCause), kills its
// tree at once instead of terminating it first: a job killed with KILL.
var ErrKillNow = errors.New("killed at once")

// ErrInterrupt, as the cause of a run's context, interrupts its tree (SIGINT) instead
// of terminating it, then kills it once the grace has passed, like a termination: a
// job killed with INT. A tree that cannot be interrupted (no Interrupter) is
// terminated.
var ErrInterrupt = errors.New("interrupted")

// Interrupter is a Tree that can also be interrupted (SIGINT to every process).
type Interrupter interface {
	Interrupt() error
}

// Watchdog enforces a run's timeout and its caller's context on a Tree: when either ends
// first, it terminates the tree, and kills it once the grace has passed. It is the
// stopping logic every backend shares.
//
// The backend starts it right after the command starts, waits for the command's leader
// to exit without releasing it (a Unix zombie keeps its process group ID from being
// reused), then calls Exited, which stops the rest of the tree; only then may the leader
// be reaped. The Watchdog never signals the tree after Exited has returned.
type Watchdog struct {
	tree  Tree
	grace time.Duration

	mu        sync.Mutex
	timer     *time.Timer
	stopCtx   func() bool
	killTimer *time.Timer
	exited    bool
	stopping  bool
	deadline  time.Time // end of the grace once stopping
	timedOut  bool
	cause     error
	errs      []error
}

// Outcome is how a watched run ended.
type Outcome struct {
	// TimedOut says the timeout stopped the tree.
	TimedOut bool
	// Cause is the context's cause when the caller's context stopped the tree.
	Cause error
	// Err joins the failures to signal the tree (a process that could not be stopped).
	Err error
}

// Watch starts watching tree: after timeout, or when ctx ends, it terminates the tree and
// kills it grace later. ctx is not retained beyond its AfterFunc registration.
func Watch(ctx context.Context, tree Tree, timeout, grace time.Duration) *Watchdog {
	w := &Watchdog{tree: tree, grace: grace}
	// Hold the lock until the fields are set: a callback may fire at once.
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(timeout, func() { w.stop(true, nil) })
	w.stopCtx = context.AfterFunc(ctx, func() { w.stop(false, context.Cause(ctx)) })
	return w
}

// stop terminates the tree once, on the first of timeout and context end.
func (w *Watchdog) stop(timedOut bool, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.exited || w.stopping {
		return
	}
	w.stopping = true
	w.timedOut = timedOut
	w.cause = cause
	w.deadline = time.Now().Add(w.grace)
	if errors.Is(cause, ErrKillNow) {
		w.record(w.tree.Kill())
		return
	}
	if it, ok := w.tree.(Interrupter); ok && errors.Is(cause, ErrInterrupt) {
		w.record(it.Interrupt())
	} else {
		w.record(w.tree.Terminate())
	}
	// Kill what ignores SIGTERM, the leader included, or the leader never exits.
	w.killTimer = time.AfterFunc(w.grace, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.exited {
			w.record(w.tree.Kill())
		}
	})
}

func (w *Watchdog) record(err error) {
	if err != nil {
		w.errs = append(w.errs, err)
	}
}

// Exited tells the Watchdog that the tree's leader has exited (and is not yet released)
// and stops the rest of the tree: at once when the command finished by itself (a
// background job must not outlive its run); when the tree was being stopped, once the
// grace has passed or drained is closed (the output pipes reached end of file: the
// processes holding them are gone), whichever comes first. It must be called exactly
// once.
func (w *Watchdog) Exited(drained <-chan struct{}) Outcome {
	w.mu.Lock()
	w.exited = true
	w.timer.Stop()
	w.stopCtx()
	if w.killTimer != nil {
		w.killTimer.Stop()
	}
	stopping, deadline := w.stopping, w.deadline
	w.mu.Unlock()

	if d := time.Until(deadline); stopping && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
	}
	// No callback signals the tree any more: exited is set, and one that ran held the
	// lock before we took it.
	err := w.tree.Kill()

	w.mu.Lock()
	defer w.mu.Unlock()
	w.record(err)
	return Outcome{TimedOut: w.timedOut, Cause: w.cause, Err: errors.Join(w.errs...)}
}
