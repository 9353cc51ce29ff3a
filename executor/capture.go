package executor

import (
	"errors"
	"io"
	"sync"
	"unicode/utf8"
)

// Capture keeps the first N characters of an output stream and counts the rest.
//
// Characters are Unicode code points. A multi-byte sequence split across writes is
// joined, never cut: the cap falls between characters. Bytes that are not part of a valid
// UTF-8 sequence are kept as U+FFFD, one per byte, each counting as a character (a
// sequence still incomplete at Close counts the same way). Once N characters
// are kept, further bytes are only counted: the kept text is at most 4*N bytes (its
// buffer at most twice that while growing) however much the command writes.
//
// A Capture is safe for concurrent use: one goroutine writes while others take
// Snapshots (a job's live output).
type Capture struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	chars     int
	total     int64
	pend      [utf8.UTFMax]byte // the start of a sequence whose end has not arrived
	npend     int
	truncated bool
}

// NewCapture returns a Capture that keeps at most maxChars characters (none if maxChars
// is not positive).
func NewCapture(maxChars int) *Capture {
	return &Capture{max: max(maxChars, 0)}
}

// Output is what a Capture holds.
type Output struct {
	// Text is the kept text, valid UTF-8, at most the cap in characters.
	Text string
	// Truncated says the stream had more characters than Text.
	Truncated bool
	// Bytes counts every byte written, kept or not.
	Bytes int64
}

// Write keeps what fits and counts everything. It never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.write(p)
	c.mu.Unlock()
	return len(p), nil
}

// bufPool holds read buffers, one pipe's worth each.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// ReadFrom reads r to its end (or first error) through a pooled buffer, keeping what fits.
// io.EOF is not an error; os.ErrDeadlineExceeded and os.ErrClosed are returned as is, so
// a caller that stopped the read can tell.
func (c *Capture) ReadFrom(r io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	for {
		m, err := r.Read(buf)
		if m > 0 {
			n += int64(m)
			c.Write(buf[:m])
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Close ends the stream: a trailing incomplete sequence becomes U+FFFD characters (one
// per byte, within the cap). Writes after Close are still counted and kept by the same
// rules. It never fails.
func (c *Capture) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.npend == 0 {
		return nil
	}
	// The pending bytes will never complete: each is an invalid byte.
	room := c.max - c.chars
	for range min(c.npend, room) {
		c.buf = utf8.AppendRune(c.buf, utf8.RuneError)
		c.chars++
	}
	if c.npend > room {
		c.truncated = true
	}
	c.npend = 0
	return nil
}

// Snapshot returns the output so far; after Close, the final output. Before Close, the
// start of a multi-byte sequence still waiting for its end is left out.
func (c *Capture) Snapshot() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Output{Text: string(c.buf), Truncated: c.truncated, Bytes: c.total}
}

func (c *Capture) write(p []byte) {
	c.total += int64(len(p))
	for c.npend > 0 && len(p) > 0 {
		p = c.completePending(p)
	}
	for len(p) > 0 && c.chars < c.max {
		if p[0] < utf8.RuneSelf {
			// A run of ASCII: one byte per character.
			n := 1
			for n < len(p) && n < c.max-c.chars && p[n] < utf8.RuneSelf {
				n++
			}
			c.buf = append(c.buf, p[:n]...)
			c.chars += n
			p = p[n:]
			continue
		}
		if !utf8.FullRune(p) {
			// The sequence continues in the next write.
			c.npend = copy(c.pend[:], p)
			return
		}
		p = p[c.appendRune(p):]
	}
	if len(p) > 0 {
		c.truncated = true
	}
}

// completePending adds bytes of p to the pending sequence until it decodes (as a
// character or as an invalid byte) and returns the rest of p.
func (c *Capture) completePending(p []byte) []byte {
	var tmp [2 * utf8.UTFMax]byte
	n := copy(tmp[:], c.pend[:c.npend])
	n += copy(tmp[n:], p[:min(len(p), utf8.UTFMax)])
	if !utf8.FullRune(tmp[:n]) {
		// Still incomplete: p was too short to finish it.
		c.npend = copy(c.pend[:], tmp[:n])
		return nil
	}
	if c.chars >= c.max {
		c.truncated = true
		c.npend = 0
		return nil
	}
	size := c.appendRune(tmp[:n])
	if size <= c.npend {
		// The first pending byte was invalid; the others start over.
		c.npend = copy(c.pend[:], c.pend[size:c.npend])
		return p
	}
	consumed := size - c.npend
	c.npend = 0
	return p[consumed:]
}

// appendRune keeps the character at the start of p (which holds a full rune or an invalid
// byte) and returns its length in p.
func (c *Capture) appendRune(p []byte) int {
	r, size := utf8.DecodeRune(p)
	if r == utf8.RuneError && size == 1 {
		c.buf = utf8.AppendRune(c.buf, utf8.RuneError)
	} else {
		c.buf = append(c.buf, p[:size]...)
	}
	c.chars++
	return size
}
