package gateway

import (
	"context"
	"sync"
)

// Approval events: every change of an approval is published to the subscribers (the
// approvers' event stream, the webhook notifier), which must not be able to slow the
// pipeline down: a subscriber that does not keep up loses events (Missed counts them)
// and is expected to read the queue again.

// Approval event types.
const (
	EventRequested = "requested" // a new pending approval
	EventApproved  = "approved"  // approved: the held request runs
	EventDenied    = "denied"
	EventExpired   = "expired"
	EventCompleted = "completed" // the approved request ran
	EventFailed    = "failed"    // the approved request could not run
)

// ApprovalEvent is one change of an approval.
type ApprovalEvent struct {
	Type     string    `json:"type"`
	Approval *Approval `json:"approval"`
	// Missed counts the events this subscriber lost before this one, because it did
	// not keep up.
	Missed int `json:"missed,omitempty"`
}

type subscriber struct {
	ch     chan ApprovalEvent
	missed int
}

// eventBus fans approval events out to its subscribers.
type eventBus struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

// eventBuffer is how many events a subscriber may be behind before it loses some.
const eventBuffer = 256

// SubscribeApprovals delivers every approval event from now on until ctx ends, when
// the channel is closed.
func (s *Server) SubscribeApprovals(ctx context.Context) <-chan ApprovalEvent {
	b := &s.events
	sub := &subscriber{ch: make(chan ApprovalEvent, eventBuffer)}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[*subscriber]struct{}{}
	}
	b.subs[sub] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		delete(b.subs, sub)
		close(sub.ch)
		b.mu.Unlock()
	})
	return sub.ch
}

// publish sends an event to every subscriber without waiting for any.
func (s *Server) publish(typ string, a *Approval) {
	b := &s.events
	cp := *a
	b.mu.Lock()
	defer b.mu.Unlock()
	for sub := range b.subs {
		select {
		case sub.ch <- ApprovalEvent{Type: typ, Approval: &cp, Missed: sub.missed}:
			sub.missed = 0
		default:
			sub.missed++
		}
	}
}
