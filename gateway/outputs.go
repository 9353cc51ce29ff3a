package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/jobs"
)

// Spooled outputs: an execution whose inline result was cut keeps its whole output (up
// to OutputOptions.MaxBytes per stream) in DataDir/outputs for OutputOptions.Retention,
// so the caller can page through the rest (ReadOutput: GET /v1/outputs/{id}, MCP
// read_output). An output is written where it is read: a small one is held in memory
// while the command runs and only reaches the disk when the result was cut.

// Defaults of OutputOptions.
const (
	DefaultOutputMaxBytes  = 16 << 20 // per stream
	DefaultOutputRetention = time.Hour
	// outputMemory is how much of a stream is held in memory before it is spooled to
	// a file: most outputs never reach the disk.
	outputMemory = 64 << 10
)

// OutputOptions configure what an execution's result holds of a long output and what
// is kept of it for paging. The zero value keeps the head inline and 16 MiB per stream
// for an hour.
type OutputOptions struct {
	// Keep is which characters the inline result holds when a stream is longer than
	// its max_output_chars: the head (the default, exec_command's rule), the tail, or
	// both ends with a line saying what was cut between.
	Keep executor.Keep
	// MaxBytes is how much of each stream is kept for paging; default 16 MiB. -1 keeps
	// nothing: results are cut with no way to read the rest.
	MaxBytes int64
	// Retention is how long a kept output can be read; default one hour.
	Retention time.Duration
}

func (o OutputOptions) withDefaults() (OutputOptions, error) {
	keep, err := executor.ParseKeep(string(o.Keep))
	if err != nil {
		return o, fmt.Errorf("output: %w", err)
	}
	o.Keep = keep
	switch {
	case o.MaxBytes == 0:
		o.MaxBytes = DefaultOutputMaxBytes
	case o.MaxBytes < -1:
		return o, fmt.Errorf("output max bytes %d: want -1 (keep nothing), 0 (default) or more", o.MaxBytes)
	}
	switch {
	case o.Retention == 0:
		o.Retention = DefaultOutputRetention
	case o.Retention < 0:
		return o, fmt.Errorf("output retention %v is negative", o.Retention)
	}
	return o, nil
}

// outputMeta is an output's meta.json: whose it is and what it holds.
type outputMeta struct {
	ID         string    `json:"id"`
	Principal  string    `json:"principal"`
	RequestID  string    `json:"request_id"`
	DecisionID string    `json:"decision_id"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	// StdoutBytes and StderrBytes are what the command wrote; the files hold at most
	// MaxBytes of each.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
}

// outputs is the store of kept outputs: a directory with one directory per output.
type outputs struct {
	dir  string
	opts OutputOptions
}

// outputIDPattern is an output id: a request id (ULID layout). Nothing else names a
// directory of the store, so an id can never reach outside it.
var outputIDPattern = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)

// spool is what a run writes its two streams into while it runs.
type spool struct {
	o              *outputs
	stdout, stderr streamSpool
}

// newSpool returns the spool of one run; nil when outputs are not kept.
func (o *outputs) newSpool() *spool {
	if o == nil || o.opts.MaxBytes < 0 {
		return nil
	}
	sp := &spool{o: o}
	sp.stdout.max, sp.stderr.max = o.opts.MaxBytes, o.opts.MaxBytes
	sp.stdout.dir, sp.stderr.dir = filepath.Join(o.dir, "tmp"), filepath.Join(o.dir, "tmp")
	return sp
}

// streamSpool keeps the first max bytes of a stream: in memory up to outputMemory, then
// in a temporary file. A write never fails (the command must go on); a file that cannot
// be written marks the spool failed and its output is not kept.
type streamSpool struct {
	mu     sync.Mutex
	dir    string
	max    int64
	n      int64
	mem    []byte
	f      *os.File
	failed bool
}

func (s *streamSpool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := p[:min(int64(len(p)), max(s.max-s.n, 0))]
	if len(keep) == 0 || s.failed {
		return len(p), nil
	}
	if s.f == nil && len(s.mem)+len(keep) <= outputMemory {
		s.mem = append(s.mem, keep...)
		s.n += int64(len(keep))
		return len(p), nil
	}
	if s.f == nil {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			s.failed = true
			return len(p), nil
		}
		f, err := os.CreateTemp(s.dir, "spool-*")
		if err != nil {
			s.failed = true
			return len(p), nil
		}
		s.f = f
		if _, err := f.Write(s.mem); err != nil {
			s.failed = true
		}
		s.mem = nil
	}
	if _, err := s.f.Write(keep); err != nil {
		s.failed = true
	}
	s.n += int64(len(keep))
	return len(p), nil
}

// discard drops what was spooled.
func (s *streamSpool) discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
	s.mem = nil
}

// saveTo moves what was spooled to path.
func (s *streamSpool) saveTo(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errors.New("the spool could not be written")
	}
	if s.f == nil {
		return os.WriteFile(path, s.mem, 0o600)
	}
	name := s.f.Name()
	err := s.f.Close()
	s.f = nil
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// keep stores the spooled output of a run whose result was cut and returns its id; ""
// (and nothing stored) when nothing was cut. A run's output that cannot be stored is
// logged and not kept: the result stands without it.
func (sp *spool) keep(caller Caller, decisionID string, res executor.Result) string {
	if sp == nil {
		return ""
	}
	if !res.StdoutTruncated && !res.StderrTruncated {
		sp.stdout.discard()
		sp.stderr.discard()
		return ""
	}
	now := time.Now().UTC()
	m := outputMeta{ID: NewRequestID(), Principal: caller.Name, RequestID: caller.RequestID, DecisionID: decisionID,
		Created: now, Expires: now.Add(sp.o.opts.Retention), StdoutBytes: res.StdoutBytes, StderrBytes: res.StderrBytes}
	dir := filepath.Join(sp.o.dir, m.ID)
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = errors.Join(sp.stdout.saveTo(filepath.Join(dir, "stdout")), sp.stderr.saveTo(filepath.Join(dir, "stderr")))
	}
	if err == nil {
		var b []byte
		b, err = json.Marshal(m)
		if err == nil {
			// meta.json comes last: an output without it is incomplete and never read.
			err = renameInto(filepath.Join(dir, "meta.json"), b)
		}
	}
	if err != nil {
		sp.stdout.discard()
		sp.stderr.discard()
		os.RemoveAll(dir)
		caller.log().Error("cannot keep the output of a command for paging", "decision_id", decisionID, "error", err.Error())
		return ""
	}
	return m.ID
}

// renameInto writes b to path through a temporary file renamed over it: a reader sees
// the whole file or none.
func renameInto(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// OutputPage is one page of a kept output (ReadOutput).
type OutputPage struct {
	ID     string `json:"output_id"`
	Stream string `json:"stream"`
	executor.Page
	// StreamBytes is what the command wrote to the stream; Total (total_bytes) is what
	// was kept of it, less when the stream was longer than the gateway keeps.
	StreamBytes int64 `json:"stream_bytes"`
	// Expires is when the output goes; zero for a job's logs, which go with the job.
	Expires time.Time `json:"expires_at,omitzero"`
}

// Output streams ReadOutput pages.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// ReadOutput returns a page of a kept output, or of a background job's log when id is a
// job's: stream "stdout" (the default) or "stderr", from byte start, at most size bytes
// (0 and anything above executor.MaxPageSize mean that maximum). Only the principal
// whose command wrote it, auditors and admins may read it; to anyone else, and once it
// expired, it is NOT_FOUND.
func (s *Server) ReadOutput(ctx context.Context, caller Caller, id, stream string, start int64, size int) (*OutputPage, error) {
	switch stream {
	case "":
		stream = StreamStdout
	case StreamStdout, StreamStderr:
	default:
		return nil, invalid("stream must be stdout or stderr, got %q", Truncate(stream, 40))
	}
	if jobs.ValidID(id) && s.jobStore != nil {
		return s.readJobLog(ctx, caller, id, stream, start, size)
	}
	if s.outputs == nil {
		return nil, &Error{Code: CodeNotFound, Message: "this gateway keeps no outputs (output.max_bytes is -1)"}
	}
	notFound := &Error{Code: CodeNotFound, Message: fmt.Sprintf("no output %q: it never existed, is not yours, or expired (outputs are kept %v)",
		Truncate(id, 40), s.outputs.opts.Retention)}
	if !outputIDPattern.MatchString(id) {
		return nil, notFound
	}
	dir := filepath.Join(s.outputs.dir, id)
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	}
	if err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: "cannot read the output's record"}
	}
	var m outputMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: "the output's record is damaged"}
	}
	mayRead := m.Principal == caller.Name || caller.Role == RoleAuditor || caller.Role == RoleAdmin
	if !mayRead || !time.Now().Before(m.Expires) {
		return nil, notFound
	}
	f, err := os.Open(filepath.Join(dir, stream))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound // removed as it expired
	}
	if err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: "cannot open the output"}
	}
	defer f.Close()
	op := &OutputPage{ID: id, Stream: stream, StreamBytes: m.StdoutBytes, Expires: m.Expires}
	if stream == StreamStderr {
		op.StreamBytes = m.StderrBytes
	}
	if err := readPage(f, op, start, size); err != nil {
		return nil, err
	}
	return op, nil
}

// readJobLog is ReadOutput of a job's log (jobs.StdoutFile, jobs.StderrFile), which
// may still grow: a page holds what was written by then.
func (s *Server) readJobLog(ctx context.Context, caller Caller, id, stream string, start int64, size int) (*OutputPage, error) {
	j, err := s.Job(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	name, written := jobs.StdoutFile, j.StdoutObservedBytes
	if stream == StreamStderr {
		name, written = jobs.StderrFile, j.StderrObservedBytes
	}
	f, err := os.Open(filepath.Join(s.jobStore.Dir(j.ID), name))
	if err != nil {
		return nil, &Error{Code: CodeNotFound, Err: err, Message: fmt.Sprintf("job %s has no %s log", j.ID, stream)}
	}
	defer f.Close()
	op := &OutputPage{ID: j.ID, Stream: stream, StreamBytes: written}
	if err := readPage(f, op, start, size); err != nil {
		return nil, err
	}
	return op, nil
}

// readPage fills op's page from f as it is now.
func readPage(f *os.File, op *OutputPage, start int64, size int) error {
	st, err := f.Stat()
	if err != nil {
		return &Error{Code: CodeInternal, Err: err, Message: "cannot read the output"}
	}
	p, err := executor.ReadPage(f, st.Size(), start, size)
	if errors.Is(err, executor.ErrPage) {
		return invalid("%s", err)
	}
	if err != nil {
		return &Error{Code: CodeInternal, Err: err, Message: "cannot read the output"}
	}
	op.Page = p
	op.StreamBytes = max(op.StreamBytes, p.Total)
	return nil
}

// sweepOutputs removes the outputs that expired, and spool files and incomplete outputs
// older than the retention (left by a gateway that stopped while writing them).
func (o *outputs) sweep(now time.Time) error {
	entries, err := os.ReadDir(o.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(o.dir, e.Name())
		if e.Name() == "tmp" {
			errs = append(errs, removeOlder(path, now.Add(-o.opts.Retention)))
			continue
		}
		expired := false
		b, err := os.ReadFile(filepath.Join(path, "meta.json"))
		var m outputMeta
		switch {
		case err == nil && json.Unmarshal(b, &m) == nil:
			expired = !now.Before(m.Expires)
		default:
			// No readable record: incomplete, or not ours. Go by its age.
			info, ierr := e.Info()
			expired = ierr == nil && info.ModTime().Before(now.Add(-o.opts.Retention))
		}
		if expired {
			errs = append(errs, os.RemoveAll(path))
		}
	}
	return errors.Join(errs...)
}

// removeOlder removes the files of dir last written before cutoff.
func removeOlder(dir string, cutoff time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			errs = append(errs, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// sweepLoop sweeps the outputs every minute until Close.
func (s *Server) sweepLoop(every time.Duration) {
	defer close(s.sweptDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.outputs.sweep(time.Now()); err != nil {
			s.log.Error("cannot remove expired outputs", "error", err.Error())
		}
		select {
		case <-s.stopLoops:
			return
		case <-t.C:
		}
	}
}
