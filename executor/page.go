package executor

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxPageSize is the largest page ReadPage returns (seed 004's AICLI_MAX_TOOL_BYTES), and
// the size of a page when none is asked.
const MaxPageSize = 4096

// Page is one page of an output, cut by byte offsets (seed 004's paging fields).
type Page struct {
	// Start is the offset of the page's first byte: the start asked, or, when that fell
	// inside a character, the start of that character.
	Start int64 `json:"start"`
	// Text holds the page's bytes. A page never ends inside a valid UTF-8 character: the
	// end moves back to the character's start, or, when the page could not hold even one
	// character (a size below 4), forward past its end. Invalid bytes stay as they are
	// (JSON shows each as U+FFFD).
	Text string `json:"stdout_text"`
	// Len is the number of bytes in Text.
	Len int `json:"stdout_len"`
	// Total is the size of the whole output in bytes.
	Total int64 `json:"total_bytes"`
	// Truncated says the output goes on after this page; HasNext says the same, and
	// NextStart is then the offset to ask for next (the end of this page).
	Truncated bool  `json:"truncated"`
	HasNext   bool  `json:"has_next_start"`
	NextStart int64 `json:"next_start"`
}

// ErrPage is wrapped by ReadPage's errors about its arguments.
var ErrPage = errors.New("invalid page")

// ReadPage returns the page of the total bytes readable from r that starts at start and
// holds at most size bytes (0 means MaxPageSize; a larger size is cut to MaxPageSize),
// moved to whole characters as Page.Text says. A start at the end gives an empty page; a
// negative start or size, or a start past the end, is an error wrapping ErrPage.
func ReadPage(r io.ReaderAt, total, start int64, size int) (Page, error) {
	switch {
	case start < 0:
		return Page{}, fmt.Errorf("%w: start %d is negative", ErrPage, start)
	case size < 0:
		return Page{}, fmt.Errorf("%w: size %d is negative", ErrPage, size)
	case start > total:
		return Page{}, fmt.Errorf("%w: start %d is past the end of the output (%d bytes)", ErrPage, start, total)
	}
	if size == 0 || size > MaxPageSize {
		size = MaxPageSize
	}
	// Read a character's worth before and after the page, to find its boundaries.
	from := max(start-(utf8.UTFMax-1), 0)
	buf := make([]byte, min(total, start+int64(size)+utf8.UTFMax-1)-from)
	if n, err := r.ReadAt(buf, from); n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Page{}, fmt.Errorf("read the output at %d: %w", from, err)
	}
	lo := int(start - from)
	lo = charStart(buf, lo, 0)
	hi := min(int(start-from)+size, len(buf))
	if hi < len(buf) {
		if c := charStart(buf, hi, lo); c > lo {
			hi = c
		} else if c == lo && c != hi {
			// Not even one character fits: the page holds that one character.
			_, n := utf8.DecodeRune(buf[lo:])
			hi = lo + n
		}
	}
	p := Page{Start: from + int64(lo), Text: string(buf[lo:hi]), Len: hi - lo, Total: total}
	if end := from + int64(hi); end < total {
		p.Truncated, p.HasNext, p.NextStart = true, true, end
	} else {
		p.NextStart = total
	}
	return p, nil
}

// charStart returns i moved back, not below floor, to the start of the valid UTF-8
// character that contains byte i; i itself when byte i starts a character or is not
// inside a valid one.
func charStart(b []byte, i, floor int) int {
	if i >= len(b) || utf8.RuneStart(b[i]) {
		return i
	}
	for k := 1; k < utf8.UTFMax && i-k >= floor; k++ {
		if !utf8.RuneStart(b[i-k]) {
			continue
		}
		if r, n := utf8.DecodeRune(b[i-k:]); !(r == utf8.RuneError && n == 1) && i-k+n > i {
			return i - k
		}
		break
	}
	return i
}
