package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
)

// TestRequestLogger: a request's logger writes what l.With would, byte for byte, through
// further With and WithGroup calls and at every level, and writes nothing below the
// handler's level.
func TestRequestLogger(t *testing.T) {
	t.Parallel()
	logs := func(mk func(*slog.Logger) *slog.Logger) string {
		var buf bytes.Buffer
		h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && a.Key == slog.TimeKey {
					return slog.Attr{} // the two runs differ in time only
				}
				return a
			}})
		// The handler's own attributes come first: the deferred ones must follow them.
		l := mk(slog.New(h).With("service", "cmdgate"))
		l.Debug("hidden", "n", 0)
		l.Info("plain", "n", 1)
		l = l.With("principal", "bench", "role", "agent")
		l.Warn("more", "n", 2)
		l.WithGroup("phases").Error("grouped", "parse", 3, slog.Group("policy", "evals", 140))
		l.Log(context.Background(), slog.LevelInfo+1, "between levels")
		return buf.String()
	}
	want := logs(func(l *slog.Logger) *slog.Logger { return l.With("request_id", "r1", "tool", "exec") })
	got := logs(func(l *slog.Logger) *slog.Logger {
		return RequestLogger(l, slog.String("request_id", "r1"), slog.String("tool", "exec"))
	})
	if got != want {
		t.Errorf("RequestLogger wrote\n%s\nl.With writes\n%s", got, want)
	}
	if bytes.Contains([]byte(got), []byte("hidden")) || !bytes.Contains([]byte(got), []byte(`"request_id":"r1"`)) {
		t.Errorf("unexpected output:\n%s", got)
	}
}
