package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/policies"
)

// reloadTimeout bounds one policy load started by the watcher.
const reloadTimeout = time.Minute

// ReloadPolicy loads the policy bundle again (from PolicyDir, or the embedded one) and
// swaps it in atomically once it compiled: requests decide with the old bundle or the
// new one, never a mix. A bundle that does not load is rejected and the old one keeps
// serving; either way a policy_load record is appended and the outcome logged. The
// error is the load's (a *policies.BundleError names files and lines).
func (s *Server) ReloadPolicy(ctx context.Context) error {
	return s.reload(ctx, "reload")
}

func (s *Server) reload(ctx context.Context, trigger string) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	prev := s.engine.Revision()
	err := s.engine.Reload(ctx, s.policyOptions()...)
	s.recordPolicyLoad(ctx, trigger, prev, s.engine.Revision(), err)
	if err != nil {
		return fmt.Errorf("reload policy: %w", err)
	}
	s.logDecisionCache()
	return nil
}

func (s *Server) reloadFromWatch() {
	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	defer cancel()
	s.reload(ctx, "file_change") // logged and recorded by reload
}

// recordPolicyLoad logs and appends the policy_load record of one load attempt.
// revision is the bundle serving afterwards (the new one, or the old one when the load
// failed).
func (s *Server) recordPolicyLoad(ctx context.Context, trigger, previous, revision string, loadErr error) {
	source := "embedded"
	if s.opts.PolicyDir != "" {
		source = s.opts.PolicyDir
	}
	detail := map[string]any{"trigger": trigger, "source": source, "ok": loadErr == nil}
	if previous != "" {
		detail["previous_revision"] = previous
	}
	decision := "loaded"
	if loadErr != nil {
		decision = "rejected"
		detail["errors"] = loadErrors(loadErr)
		s.metrics.reloads.WithLabelValues("error").Inc()
		s.log.Error("policy bundle rejected: the previous bundle keeps serving",
			"trigger", trigger, "source", source, "revision", revision, "errors", loadErrors(loadErr))
	} else {
		s.metrics.reloads.WithLabelValues("ok").Inc()
		attrs := []any{"trigger", trigger, "source", source, "revision", revision}
		if previous != "" {
			attrs = append(attrs, "previous_revision", previous)
		}
		s.log.Info("policy bundle loaded", attrs...)
	}
	b, _ := json.Marshal(detail)
	if _, err := s.append(ctx, audit.Record{Kind: audit.KindPolicyLoad, Decision: decision, Revision: revision, Detail: b}); err != nil {
		s.log.Error("cannot record a policy load", "error", err.Error())
	}
}

// loadErrors lists a load error's messages: a bundle's compile errors one per entry.
func loadErrors(err error) []string {
	var be *policies.BundleError
	if errors.As(err, &be) && len(be.Errors) > 0 {
		return be.Errors
	}
	return []string{err.Error()}
}

// watcher reloads the policy when a file under the bundle directory changes. Bursts
// of events (an editor saving, a checkout) are debounced into one reload. Its goroutine
// is owned by the Server and stops in close.
type watcher struct {
	fw   *fsnotify.Watcher
	stop chan struct{}
	done chan struct{}
}

func newWatcher(dir string, debounce time.Duration, reload func(), log *slog.Logger) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch policy directory %s: %w", dir, err)
	}
	w := &watcher{fw: fw, stop: make(chan struct{}), done: make(chan struct{})}
	if err := w.addTree(dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watch policy directory %s: %w", dir, err)
	}
	go w.loop(debounce, reload, log)
	return w, nil
}

// addTree watches dir and every directory below it (fsnotify is not recursive),
// skipping hidden ones as the bundle loader does.
func (w *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return w.fw.Add(p)
	})
}

func (w *watcher) loop(debounce time.Duration, reload func(), log *slog.Logger) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if strings.HasPrefix(filepath.Base(ev.Name), ".") {
				continue // editor swap files and the like
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					if err := w.addTree(ev.Name); err != nil {
						log.Warn("cannot watch a new policy directory", "dir", ev.Name, "error", err.Error())
					}
				}
			}
			timer.Reset(debounce)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			log.Warn("policy directory watch", "error", err.Error())
		case <-timer.C:
			reload()
		}
	}
}

func (w *watcher) close() error {
	close(w.stop)
	err := w.fw.Close()
	<-w.done
	return err
}
