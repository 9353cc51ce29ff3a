package executor

import (
	"io"
	"os"
	"sync/atomic"
	"time"
)

// Streams are a command's standard streams as every backend wires them: three pipes whose
// child ends go to the command (ChildStdin, ChildStdout, ChildStderr) and whose parent
// ends the backend reads into Captures and writes Spec.Stdin to. The parent ends are
// pollable, so reading and writing take deadlines.
//
// The order of use: NewStreams, start the command with the child ends, Started (or Abort
// when the start failed), wait for the command, Finish. A backend that starts the
// process holding the child ends before it knows the command (a pre-built sandbox) calls
// ChildStarted at once and Started later.
type Streams struct {
	outR, outW, errR, errW, inR, inW *os.File
	stdout, stderr                   *Capture
	drained, stdinDone               chan struct{}
}

// NewStreams makes the pipes, a stdin pipe only when withStdin (else the command gets
// the null device).
func NewStreams(withStdin bool) (*Streams, error) {
	s := &Streams{drained: make(chan struct{}), stdinDone: make(chan struct{})}
	var err error
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if s.errR, s.errW, err = os.Pipe(); err == nil && withStdin {
		s.inR, s.inW, err = os.Pipe()
	}
	if err != nil {
		s.Abort()
		return nil, err
	}
	return s, nil
}

// ChildStdin is the command's standard input: nil when there is none to write, which
// os/exec turns into the null device.
func (s *Streams) ChildStdin() *os.File { return s.inR }

// ChildStdout and ChildStderr are the command's output ends.
func (s *Streams) ChildStdout() *os.File { return s.outW }
func (s *Streams) ChildStderr() *os.File { return s.errW }

// ChildStarted closes the parent's copies of the child ends: until they are closed,
// stdout and stderr never reach end of file. Call it once the process holding the child
// ends has started.
func (s *Streams) ChildStarted() {
	closeAll(s.outW, s.errW, s.inR)
	s.outW, s.errW, s.inR = nil, nil, nil
}

// Started starts capturing both outputs, maxChars characters each as keep says (and copying every
// byte of stdout and stderr to the tees that are not nil: a job's logs), and writing
// input, then closing stdin. Call it once the command has started and its limits are in
// place; it calls ChildStarted if that was not done.
func (s *Streams) Started(input string, maxChars int, keep Keep, stdoutTee, stderrTee io.Writer) {
	s.ChildStarted()
	s.stdout, s.stderr = NewCaptureKeep(maxChars, keep), NewCaptureKeep(maxChars, keep)
	var readers atomic.Int32
	readers.Store(2)
	read := func(c *Capture, r *os.File, tee io.Writer) {
		var src io.Reader = r
		if tee != nil {
			src = io.TeeReader(r, &teeWriter{w: tee})
		}
		c.ReadFrom(src) // its only errors are the deadline set in Finish and closing
		if readers.Add(-1) == 0 {
			close(s.drained)
		}
	}
	go read(s.stdout, s.outR, stdoutTee)
	go read(s.stderr, s.errR, stderrTee)
	if s.inW == nil {
		close(s.stdinDone)
		return
	}
	go func() {
		defer close(s.stdinDone)
		io.WriteString(s.inW, input) // EPIPE: the command did not read it all
		s.inW.Close()
	}()
}

// teeWriter copies output to a tee until the tee fails, then drops it: a failing tee
// (a full disk under a job's log) must not stop reading the command's output, which
// would block the command on a full pipe.
type teeWriter struct {
	w      io.Writer
	failed bool
}

func (t *teeWriter) Write(p []byte) (int, error) {
	if !t.failed {
		if _, err := t.w.Write(p); err != nil {
			t.failed = true
		}
	}
	return len(p), nil
}

// Abort closes every end: the command did not start, or will not.
func (s *Streams) Abort() {
	closeAll(s.outW, s.errW, s.inR, s.outR, s.errR, s.inW)
}

// Drained is closed once both outputs reached end of file: every process holding them
// is gone.
func (s *Streams) Drained() <-chan struct{} { return s.drained }

// Finish waits at most delay for the outputs to drain (a process that escaped the tree
// may still hold them), stops the input, closes the parent ends and fills res's output
// fields. Call it after the command's tree is gone.
func (s *Streams) Finish(delay time.Duration, res *Result) {
	timer := time.NewTimer(delay)
	select {
	case <-s.drained:
	case <-timer.C:
		past := time.Unix(1, 0)
		s.outR.SetReadDeadline(past)
		s.errR.SetReadDeadline(past)
		<-s.drained
	}
	timer.Stop()
	if s.inW != nil {
		s.inW.SetWriteDeadline(time.Unix(1, 0)) // ErrClosed once the writer is done
	}
	<-s.stdinDone
	closeAll(s.outR, s.errR, s.inW)
	s.stdout.Close()
	s.stderr.Close()
	so, se := s.stdout.Snapshot(), s.stderr.Snapshot()
	res.SetOutput(so, se)
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
