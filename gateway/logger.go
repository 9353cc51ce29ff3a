package gateway

import (
	"context"
	"log/slog"
	"slices"
)

// RequestLogger is l with attrs for one request, as l.With would give: the same records
// with the same attributes, but the attributes are handed to l's handler only when a
// record is written. slog's handlers format what With adds at once, which every
// request paid (2% of the gateway's CPU under load) although at the default level only
// failures write anything.
func RequestLogger(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	return slog.New(deferredAttrs{h: l.Handler(), attrs: attrs})
}

// deferredAttrs adds attrs to its handler when a record is handled.
type deferredAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
}

func (d deferredAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return d.h.Enabled(ctx, level)
}

func (d deferredAttrs) Handle(ctx context.Context, r slog.Record) error {
	return d.h.WithAttrs(d.attrs).Handle(ctx, r)
}

func (d deferredAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return deferredAttrs{h: d.h, attrs: append(slices.Clip(d.attrs), attrs...)}
}

func (d deferredAttrs) WithGroup(name string) slog.Handler {
	return d.h.WithAttrs(d.attrs).WithGroup(name)
}
