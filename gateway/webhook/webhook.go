// Package webhook tells an outside system about every new approval: an HTTP POST of
// {"event": "approval.requested", "approval": {...}} to a configured URL, signed with
// HMAC-SHA256 over the body (header X-Cmdgate-Signature: sha256=<hex>), retried with
// backoff while the receiver fails. It only ever notifies: it reads the gateway's
// approval events and can neither hold up nor decide anything.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
)

// Headers of a delivery.
const (
	HeaderSignature = "X-Cmdgate-Signature" // sha256=<hex HMAC-SHA256 of the body>
	HeaderEvent     = "X-Cmdgate-Event"     // approval.requested
	HeaderDelivery  = "X-Cmdgate-Delivery"  // the delivery's id, the same on every retry
)

// DefaultBackoff are the waits before the retries of a delivery that failed.
var DefaultBackoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second}

// Options configure Start.
type Options struct {
	URL    string
	Secret []byte // required: every delivery is signed
	// Client sends the deliveries; default one with a 10 s timeout.
	Client *http.Client
	// Backoff are the waits before each retry; default DefaultBackoff. A delivery is
	// given up after the last.
	Backoff []time.Duration
	Logger  *slog.Logger
}

// Body is what a delivery posts.
type Body struct {
	Event    string            `json:"event"`
	Approval *gateway.Approval `json:"approval"`
}

// Sign is the signature header's value for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Start delivers the new approvals of core until ctx ends; wait waits for the
// deliveries in progress (their retries stop with ctx).
func Start(ctx context.Context, core *gateway.Server, o Options) (wait func(), err error) {
	if o.URL == "" || len(o.Secret) == 0 {
		return nil, errors.New("webhook: a URL and a secret are needed")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	events := core.SubscribeApprovals(ctx)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // deliveries at once
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range events {
			if ev.Missed > 0 {
				o.Logger.Warn("webhook: approval events lost (the notifier fell behind)", "missed", ev.Missed)
			}
			if ev.Type != gateway.EventRequested {
				continue
			}
			body, err := json.Marshal(Body{Event: "approval.requested", Approval: ev.Approval})
			if err != nil {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				defer func() { <-sem }()
				deliver(ctx, o, id, body)
			}(ev.Approval.ID)
		}
	}()
	return wg.Wait, nil
}

// deliver posts one body until the receiver answers 2xx, the backoff is spent or ctx
// ends.
func deliver(ctx context.Context, o Options, id string, body []byte) {
	sig := Sign(o.Secret, body)
	for attempt := 0; ; attempt++ {
		err := post(ctx, o, id, sig, body)
		if err == nil {
			return
		}
		if attempt >= len(o.Backoff) || ctx.Err() != nil {
			o.Logger.Error("webhook: delivery given up", "approval_id", id, "attempts", attempt+1, "error", err.Error())
			return
		}
		o.Logger.Warn("webhook: delivery failed, retrying", "approval_id", id, "attempt", attempt+1, "in", o.Backoff[attempt].String(), "error", err.Error())
		select {
		case <-time.After(o.Backoff[attempt]):
		case <-ctx.Done():
			return
		}
	}
}

func post(ctx context.Context, o Options, id, sig string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderEvent, "approval.requested")
	req.Header.Set(HeaderDelivery, id)
	resp, err := o.Client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return nil
}
