package executor

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Capture keeps N characters of an output stream (the first N by default; the last N, or
// both ends, as its Keep says) and counts every character and byte.
//
// Characters are Unicode code points. A multi-byte sequence split across writes is
// joined, never cut: the cap falls between characters. Bytes that are not part of a valid
// UTF-8 sequence are kept as U+FFFD, one per byte, each counting as a character (a
// sequence still incomplete at Close counts the same way). Once N characters
// are kept, further bytes are only counted: the kept text is at most 4*N bytes (its
// buffer at most twice that while growing) however much the command writes.
//
// KeepTail keeps a window of the stream's last bytes (4*N plus one character's worth,
// at most twice that while it slides), enough for N characters, and decodes it at
// Snapshot. KeepHeadTail keeps the first half of N as above and the last half as the
// tail, and joins them with a line that says how many characters were cut between.
//
// A Capture is safe for concurrent use: one goroutine writes while others take
// Snapshots (a job's live output).
type Capture struct {
	mu        sync.Mutex
	max       int // the head's cap
	tailMax   int // the tail's cap, in characters; 0 keeps no tail
	tail      []byte
	tailCap   int // bytes of the tail window
	count     charCounter
	buf       []byte
	chars     int
	total     int64
	pend      [utf8.UTFMax]byte // the start of a sequence whose end has not arrived
	npend     int
	truncated bool
}

// NewCapture returns a Capture that keeps the first maxChars characters (none if
// maxChars is not positive).
func NewCapture(maxChars int) *Capture {
	return &Capture{max: max(maxChars, 0)}
}

// Keep says which part of an output a capped Capture keeps.
type Keep string

const (
	// KeepHead keeps the first characters (exec_command's rule). The empty Keep means
	// KeepHead.
	KeepHead Keep = "head"
	// KeepTail keeps the last characters: a test run's summary.
	KeepTail Keep = "tail"
	// KeepHeadTail keeps the first half and the last half, with a line between that
	// says how many characters were cut.
	KeepHeadTail Keep = "head_tail"
)

// ParseKeep validates a Keep setting ("" is KeepHead).
func ParseKeep(s string) (Keep, error) {
	switch k := Keep(s); k {
	case "", KeepHead:
		return KeepHead, nil
	case KeepTail, KeepHeadTail:
		return k, nil
	}
	return "", fmt.Errorf("unknown output keep %q (want head, tail or head_tail)", s)
}

// NewCaptureKeep returns a Capture that keeps maxChars characters of the stream: its
// head, its tail, or both halves, as keep says.
func NewCaptureKeep(maxChars int, keep Keep) *Capture {
	n := max(maxChars, 0)
	var head, tail int
	switch keep {
	case KeepTail:
		tail = n
	case KeepHeadTail:
		head = (n + 1) / 2
		tail = n - head
	default:
		head = n
	}
	c := &Capture{max: head, tailMax: tail}
	if tail > 0 {
		c.tailCap = utf8.UTFMax*tail + utf8.UTFMax
	}
	return c
}

// CutMarker is the line a KeepHeadTail Capture puts between the head and the tail.
func CutMarker(chars int64) string {
	return fmt.Sprintf("\n[… %d characters cut …]\n", chars)
}

// Output is what a Capture holds.
type Output struct {
	// Text is the kept text, valid UTF-8, at most the cap in characters.
	Text string
	// Truncated says the stream had more characters than Text.
	Truncated bool
	// Bytes counts every byte written, kept or not.
	Bytes int64
	// Chars counts every character written, kept or not, by the rule Text follows (an
	// invalid byte is one character).
	Chars int64
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
	c.closeCount()
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

// closeCount ends the character count: a trailing incomplete sequence is one character
// per byte.
func (c *Capture) closeCount() { c.count.close() }

// Snapshot returns the output so far; after Close, the final output. Before Close, the
// start of a multi-byte sequence still waiting for its end is left out.
func (c *Capture) Snapshot() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	chars := c.count.n // a sequence still waiting for its end is left out, as from the head
	if c.tailMax == 0 {
		return Output{Text: string(c.buf), Truncated: c.truncated, Bytes: c.total, Chars: chars}
	}
	headChars := min(chars, int64(c.max))
	want := min(chars-headChars, int64(c.tailMax))
	tail := lastChars(c.tail, c.total > int64(len(c.tail)), c.count.npend, want)
	text := string(c.buf)
	cut := chars - headChars - want
	if cut > 0 && c.max > 0 {
		text += CutMarker(cut)
	}
	return Output{Text: text + tail, Truncated: cut > 0, Bytes: c.total, Chars: chars}
}

// lastChars decodes the tail window w (clipped says bytes before it were dropped, so it
// may start inside a character; its last pending bytes are a sequence still incomplete,
// left out) and returns its last n characters, invalid bytes as U+FFFD.
func lastChars(w []byte, clipped bool, pending int, n int64) string {
	if n <= 0 {
		return ""
	}
	if clipped {
		// Skip the rest of a character whose start was dropped.
		for i := 0; i < utf8.UTFMax-1 && len(w) > 0 && !utf8.RuneStart(w[0]); i++ {
			w = w[1:]
		}
	}
	body := w[:len(w)-pending]
	runes := make([]rune, 0, utf8.RuneCount(body))
	for len(body) > 0 {
		r, size := utf8.DecodeRune(body)
		runes = append(runes, r)
		body = body[size:]
	}
	if int64(len(runes)) > n {
		runes = runes[int64(len(runes))-n:]
	}
	return string(runes)
}

func (c *Capture) write(p []byte) {
	c.total += int64(len(p))
	c.count.write(p)
	if c.tailCap > 0 {
		if need := len(c.tail) + len(p); need > cap(c.tail) {
			// Grow by doubling, not append's gentler steps for large slices, up to the
			// window's slide point.
			grown := make([]byte, len(c.tail), max(need, min(2*cap(c.tail), 2*c.tailCap+len(p))))
			copy(grown, c.tail)
			c.tail = grown
		}
		c.tail = append(c.tail, p...)
		if len(c.tail) > 2*c.tailCap {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailCap:]...)
		}
	}
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

// charCounter counts the characters of a stream written in pieces, by utf8.DecodeRune's
// rule: a valid sequence is one character, and so is each byte of an invalid one; a
// sequence split across writes is joined. Every byte of every output passes here, so
// the bulk of each write is counted by utf8.RuneCountInString over it (fast, also under
// the race detector, and without a copy), and only the bytes around a split are
// decoded one by one.
type charCounter struct {
	n     int64
	pend  [utf8.UTFMax]byte // the start of a sequence whose end has not arrived
	npend int
}

func (c *charCounter) write(p []byte) {
	if c.npend > 0 {
		var tmp [2 * utf8.UTFMax]byte
		k := copy(tmp[:], c.pend[:c.npend])
		k += copy(tmp[k:], p[:min(len(p), utf8.UTFMax)])
		b, used := tmp[:k], 0
		for used < c.npend {
			if !utf8.FullRune(b[used:]) {
				// p was too short to finish it: all of p is pending now.
				c.npend = copy(c.pend[:], b[used:])
				return
			}
			_, size := utf8.DecodeRune(b[used:])
			c.n++
			used += size
		}
		p = p[used-c.npend:]
		c.npend = 0
	}
	// A sequence cut by the end of p starts in its last three bytes.
	end := len(p)
	for j := len(p) - 1; j >= 0 && j >= len(p)-(utf8.UTFMax-1); j-- {
		if utf8.RuneStart(p[j]) {
			if !utf8.FullRune(p[j:]) {
				end = j
			}
			break
		}
	}
	// utf8.RuneCount copies non-ASCII input into a string first; the string form
	// counts in place. The string lives only for the call, and p is not written
	// meanwhile (Write's caller owns it until Write returns).
	if end > 0 {
		c.n += int64(utf8.RuneCountInString(unsafe.String(unsafe.SliceData(p), end)))
	}
	c.npend = copy(c.pend[:], p[end:])
}

// close counts a sequence still incomplete as one character per byte.
func (c *charCounter) close() {
	c.n += int64(c.npend)
	c.npend = 0
}

// SetOutput fills r's output fields from what the stdout and stderr Captures hold.
func (r *Result) SetOutput(stdout, stderr Output) {
	r.Stdout, r.StdoutTruncated, r.StdoutBytes, r.StdoutChars = stdout.Text, stdout.Truncated, stdout.Bytes, stdout.Chars
	r.Stderr, r.StderrTruncated, r.StderrBytes, r.StderrChars = stderr.Text, stderr.Truncated, stderr.Bytes, stderr.Chars
}
