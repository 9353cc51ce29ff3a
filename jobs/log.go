package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultLogCap is how many bytes of each stream a job's log keeps.
const DefaultLogCap = 64 << 20

// Log is one stream's log file: it keeps the first Cap bytes written to it and counts
// every byte. Once the cap is reached, it appends one line saying so, and drops the
// rest. It is safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	f        *os.File
	cap      int64
	kept     int64
	observed int64
	capped   bool
}

// OpenLog opens a job's log for appending (stdout.log or stderr.log), keeping up to
// cap bytes (0: DefaultLogCap).
func OpenLog(path string, cap int64) (*Log, error) {
	if cap <= 0 {
		cap = DefaultLogCap
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &Error{Code: CodeIO, Message: "cannot open " + filepath.Base(path), Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{Code: CodeIO, Message: "cannot open " + filepath.Base(path), Err: err}
	}
	return &Log{f: f, cap: cap, kept: st.Size(), observed: st.Size()}, nil
}

// Write keeps what fits under the cap and counts all of p; it never fails for the
// bytes it drops, so that a job is not stopped by its log.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed += int64(len(p))
	if l.capped {
		return len(p), nil
	}
	room := l.cap - l.kept
	keep := p
	if int64(len(keep)) > room {
		keep = keep[:room]
	}
	if len(keep) > 0 {
		n, err := l.f.Write(keep)
		l.kept += int64(n)
		if err != nil {
			return n, err
		}
	}
	if int64(len(p)) > room {
		l.capped = true
		fmt.Fprintf(l.f, "\n[cmdgate: this log stops here, at %d bytes; the job's further output is counted, not kept]\n", l.cap)
	}
	return len(p), nil
}

// Observed is how many bytes were written to the log, kept or not; Capped whether
// some were dropped.
func (l *Log) Observed() (observed int64, capped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.observed, l.capped
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

// Tail is the end of a log as `cmdgate job tail` and a run's snapshot show it.
type Tail struct {
	Text string `json:"text"`
	// Encoding is always "utf-8-lossy": invalid UTF-8 in the log is replaced with U+FFFD.
	Encoding string `json:"encoding"`
	// ObservedBytes is the log file's size; IncludedBytes how many of its last bytes
	// Text holds (before the lossy conversion).
	ObservedBytes int64 `json:"observed_bytes"`
	IncludedBytes int64 `json:"included_bytes"`
}

// ReadTail reads at most maxBytes from the end of a log file, and of those at most
// the last lines lines (0: no line limit), as UTF-8 with invalid sequences replaced. A
// missing file is an empty tail.
func ReadTail(path string, maxBytes int64, lines int) (Tail, error) {
	t := Tail{Encoding: "utf-8-lossy"}
	if maxBytes < 0 || lines < 0 {
		return t, errorf(CodeInvalidInput, "max-bytes and lines must not be negative")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, &Error{Code: CodeIO, Message: "cannot read " + filepath.Base(path), Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return t, &Error{Code: CodeIO, Message: "cannot read " + filepath.Base(path), Err: err}
	}
	t.ObservedBytes = st.Size()
	n := min(maxBytes, st.Size())
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && err != io.EOF {
		return t, &Error{Code: CodeIO, Message: "cannot read " + filepath.Base(path), Err: err}
	}
	if n < st.Size() {
		// The cut may fall inside a character: start at the next one.
		for k := 0; k < utf8.UTFMax && len(buf) > 0 && !utf8.RuneStart(buf[0]); k++ {
			buf = buf[1:]
		}
	}
	if lines > 0 {
		body := bytes.TrimSuffix(buf, []byte("\n"))
		count := 0
		for i := len(body) - 1; i >= 0; i-- {
			if body[i] == '\n' {
				count++
				if count == lines {
					buf = buf[i+1:]
					break
				}
			}
		}
	}
	t.IncludedBytes = int64(len(buf))
	t.Text = strings.ToValidUTF8(string(buf), "\uFFFD")
	return t, nil
}
