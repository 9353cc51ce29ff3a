package executor_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/google/go-cmp/cmp"
)

// reference is the capture rule stated plainly: decode the whole stream (an invalid or
// truncated sequence is one U+FFFD per byte, as Go's decoder does) and keep the first max
// characters.
func reference(input []byte, max int) executor.Output {
	out := executor.Output{Bytes: int64(len(input)), Chars: int64(utf8.RuneCount(input))}
	var b strings.Builder
	for n := 0; len(input) > 0; n++ {
		if n == max {
			out.Truncated = true
			break
		}
		r, size := utf8.DecodeRune(input)
		b.WriteRune(r)
		input = input[size:]
	}
	out.Text = b.String()
	return out
}

// referenceKeep is the rule of each Keep stated plainly: decode the whole stream and keep
// the first max characters, the last max, or the first half and the last half of max
// with the cut marker between.
func referenceKeep(input []byte, max int, keep executor.Keep) executor.Output {
	head, tail := max, 0
	switch keep {
	case executor.KeepTail:
		head, tail = 0, max
	case executor.KeepHeadTail:
		head = (max + 1) / 2
		tail = max - head
	}
	if tail == 0 {
		return reference(input, head)
	}
	runes := []rune(string(input)) // invalid bytes become U+FFFD, one each
	out := executor.Output{Bytes: int64(len(input)), Chars: int64(len(runes))}
	if len(runes) <= max {
		out.Text = string(runes)
		return out
	}
	out.Truncated = true
	out.Text = string(runes[len(runes)-tail:])
	if head > 0 {
		out.Text = string(runes[:head]) + executor.CutMarker(int64(len(runes)-max)) + out.Text
	}
	return out
}

var keeps = []executor.Keep{executor.KeepHead, executor.KeepTail, executor.KeepHeadTail}

// captureKeep writes chunks into a new Capture keeping what keep says and closes it.
func captureKeep(max int, keep executor.Keep, chunks ...[]byte) executor.Output {
	c := executor.NewCaptureKeep(max, keep)
	for _, ch := range chunks {
		c.Write(ch)
	}
	c.Close()
	return c.Snapshot()
}

// capture writes chunks into a new Capture and closes it.
func capture(max int, chunks ...[]byte) executor.Output {
	c := executor.NewCapture(max)
	for _, ch := range chunks {
		c.Write(ch)
	}
	c.Close()
	return c.Snapshot()
}

func TestCapture(t *testing.T) {
	t.Parallel()
	b := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name   string
		max    int
		chunks [][]byte
		want   executor.Output
	}{
		{"empty", 10, nil, executor.Output{}},
		{"under the cap", 10, [][]byte{b("hello")}, executor.Output{Text: "hello", Bytes: 5}},
		{"exactly the cap", 5, [][]byte{b("hello")}, executor.Output{Text: "hello", Bytes: 5}},
		{"over the cap", 4, [][]byte{b("hello")}, executor.Output{Text: "hell", Truncated: true, Bytes: 5}},
		{"over the cap in a later write", 5, [][]byte{b("hello"), b("!")}, executor.Output{Text: "hello", Truncated: true, Bytes: 6}},
		{"cap zero", 0, [][]byte{b("x")}, executor.Output{Truncated: true, Bytes: 1}},
		{"multi-byte counted as characters", 3, [][]byte{b("あいうえ")}, executor.Output{Text: "あいう", Truncated: true, Bytes: 12}},
		{"four-byte characters", 2, [][]byte{b("🙂🙂")}, executor.Output{Text: "🙂🙂", Bytes: 8}},
		{"sequence split across writes", 2, [][]byte{b("a\xe3"), b("\x81"), b("\x82b")}, executor.Output{Text: "aあ", Truncated: true, Bytes: 5}},
		{"cap reached before a split sequence", 1, [][]byte{b("a\xe3"), b("\x81\x82")}, executor.Output{Text: "a", Truncated: true, Bytes: 4}},
		{"invalid byte replaced", 10, [][]byte{b("a\xffb")}, executor.Output{Text: "a\uFFFDb", Bytes: 3}},
		{"each invalid byte replaced", 10, [][]byte{b("\xc0\xaf")}, executor.Output{Text: "\uFFFD\uFFFD", Bytes: 2}},
		{"truncated sequence then ASCII", 10, [][]byte{b("\xe3\x81"), b("A")}, executor.Output{Text: "\uFFFD\uFFFDA", Bytes: 3}},
		{"incomplete sequence at the end", 10, [][]byte{b("ok\xf0\x9f")}, executor.Output{Text: "ok\uFFFD\uFFFD", Bytes: 4}},
		{"incomplete sequence at the end over the cap", 3, [][]byte{b("ok\xf0\x9f")}, executor.Output{Text: "ok\uFFFD", Truncated: true, Bytes: 4}},
		{"surrogate half is invalid", 10, [][]byte{b("\xed\xa0\x80")}, executor.Output{Text: "\uFFFD\uFFFD\uFFFD", Bytes: 3}},
		{"NUL kept", 10, [][]byte{b("a\x00b")}, executor.Output{Text: "a\x00b", Bytes: 3}},
		{"U+FFFD itself kept", 10, [][]byte{b("\uFFFD")}, executor.Output{Text: "\uFFFD", Bytes: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := capture(tt.max, tt.chunks...)
			tt.want.Chars = int64(utf8.RuneCount(bytes.Join(tt.chunks, nil)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("capture(%d, %q) mismatch (-want +got):\n%s", tt.max, tt.chunks, diff)
			}
			if want := reference(bytes.Join(tt.chunks, nil), tt.max); !cmp.Equal(want, got) {
				t.Errorf("capture(%d, %q) = %+v, reference says %+v", tt.max, tt.chunks, got, want)
			}
		})
	}
}

// TestCaptureEverySplit feeds inputs cut at every pair of positions: where the writes
// fall must never change the result.
func TestCaptureEverySplit(t *testing.T) {
	t.Parallel()
	inputs := []string{"aあ🙂é\xff\xe3\x81Z", "\xf0\x9f\x99\x82\xf0\x9f", "日本語テキスト", "\xe3\x81\x82\xe3\x81"}
	for _, in := range inputs {
		for max := range utf8.RuneCountInString(in) + 2 {
			for _, keep := range keeps {
				want := referenceKeep([]byte(in), max, keep)
				for i := 0; i <= len(in); i++ {
					for j := i; j <= len(in); j++ {
						got := captureKeep(max, keep, []byte(in[:i]), []byte(in[i:j]), []byte(in[j:]))
						if !cmp.Equal(want, got) {
							t.Fatalf("capture(%d, %s, %q|%q|%q) = %+v, want %+v", max, keep, in[:i], in[i:j], in[j:], got, want)
						}
					}
				}
			}
		}
	}
}

func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello, world"), uint16(5), uint16(3))
	f.Add([]byte("aあ🙂é\xff\xe3\x81Z"), uint16(4), uint16(2))
	f.Add([]byte("\xf0\x9f\x99"), uint16(10), uint16(1))
	f.Fuzz(func(t *testing.T, in []byte, max, chunk uint16) {
		size := int(chunk%64) + 1
		for _, keep := range keeps {
			fuzzCaptureKeep(t, in, int(max), size, keep)
		}
	})
}

func fuzzCaptureKeep(t *testing.T, in []byte, max, size int, keep executor.Keep) {
	{
		c := executor.NewCaptureKeep(max, keep)
		for rest := in; len(rest) > 0; {
			n := min(size, len(rest))
			c.Write(rest[:n])
			rest = rest[n:]
		}
		c.Close()
		got := c.Snapshot()
		if want := referenceKeep(in, max, keep); !cmp.Equal(want, got) {
			t.Fatalf("capture(%d, %s, %q in chunks of %d) = %+v, want %+v", max, keep, in, size, got, want)
		}
		if !utf8.ValidString(got.Text) {
			t.Fatalf("capture(%d, %s, %q) = %q, not valid UTF-8", max, keep, in, got.Text)
		}
	}
}

func TestCaptureReadFrom(t *testing.T) {
	t.Parallel()
	c := executor.NewCapture(3)
	n, err := c.ReadFrom(strings.NewReader("abcdef"))
	if n != 6 || err != nil {
		t.Fatalf("ReadFrom = %d, %v, want 6, nil", n, err)
	}
	want := executor.Output{Text: "abc", Truncated: true, Bytes: 6, Chars: 6}
	if got := c.Snapshot(); !cmp.Equal(want, got) {
		t.Errorf("Snapshot() = %+v, want %+v", got, want)
	}

	boom := fmt.Errorf("boom")
	if _, err := executor.NewCapture(3).ReadFrom(io.MultiReader(strings.NewReader("x"), errReader{boom})); err != boom {
		t.Errorf("ReadFrom(failing reader) error = %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestCaptureSnapshotLeavesPendingOut: a live snapshot does not show half a character.
func TestCaptureSnapshotLeavesPendingOut(t *testing.T) {
	t.Parallel()
	c := executor.NewCapture(10)
	c.Write([]byte("a\xe3\x81"))
	if got := c.Snapshot().Text; got != "a" {
		t.Errorf("Snapshot().Text = %q before the sequence ends, want %q", got, "a")
	}
	c.Write([]byte("\x82"))
	if got := c.Snapshot().Text; got != "aあ" {
		t.Errorf("Snapshot().Text = %q, want %q", got, "aあ")
	}
}

// TestCaptureMemoryBounded writes 1 GiB through a Capture of each Keep and checks that
// it allocated only the cap's worth, not the stream.
func TestCaptureMemoryBounded(t *testing.T) {
	for _, keep := range keeps {
		t.Run(string(keep), func(t *testing.T) { captureMemoryBounded(t, keep) })
	}
}

func captureMemoryBounded(t *testing.T, keep executor.Keep) {
	chunk := bytes.Repeat([]byte("あ"), 64<<10/3)
	c := executor.NewCaptureKeep(executor.DefaultOutputChars, keep)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var total int64
	for total < 1<<30 {
		c.Write(chunk)
		total += int64(len(chunk))
	}
	c.Close()
	out := c.Snapshot()
	runtime.ReadMemStats(&after)
	kept := executor.DefaultOutputChars
	if keep == executor.KeepHeadTail {
		kept += utf8.RuneCountInString(executor.CutMarker(total/3 - int64(kept)))
	}
	if out.Bytes != total || out.Chars != total/3 || !out.Truncated || utf8.RuneCountInString(out.Text) != kept {
		t.Fatalf("Snapshot() = {%d chars, truncated %v, %d bytes}, want {%d, true, %d}",
			utf8.RuneCountInString(out.Text), out.Truncated, out.Bytes, kept, total)
	}
	// The kept text is 600 kB; its buffer grows by doubling and the snapshot copies it.
	// A tail window slides within twice its 800 kB, and its snapshot decodes it.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("capturing 1 GiB allocated %d bytes, want at most 8 MiB", alloc)
	}
}

// BenchmarkCaptureOverCap is a Capture taking multi-byte text past its cap, where every
// byte is only counted (characters and bytes): the cost every long output pays.
func BenchmarkCaptureOverCap(b *testing.B) {
	chunk := bytes.Repeat([]byte("あいうえお日本語テキスト🙂"), 64<<10/40)
	c := executor.NewCapture(10)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		c.Write(chunk)
	}
}
