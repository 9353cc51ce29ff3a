package executor_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/executor"
)

// pages reads out from offset 0 in pages of size and returns them.
func pages(t *testing.T, out []byte, size int) []executor.Page {
	t.Helper()
	var got []executor.Page
	for start := int64(0); ; {
		p, err := executor.ReadPage(bytes.NewReader(out), int64(len(out)), start, size)
		if err != nil {
			t.Fatalf("ReadPage(%d bytes, start %d, size %d) error: %v", len(out), start, size, err)
		}
		got = append(got, p)
		if !p.HasNext {
			return got
		}
		if p.NextStart <= start || p.Truncated != p.HasNext {
			t.Fatalf("ReadPage(start %d, size %d) = %+v: no progress", start, size, p)
		}
		start = p.NextStart
	}
}

// TestReadPageConcatenates: reading every page from the start, at every size from 1 to
// MaxPageSize, gives back the whole output, each page within its size (or one
// character when the size is below it) and never ending inside a character.
func TestReadPageConcatenates(t *testing.T) {
	t.Parallel()
	var mixed strings.Builder
	for i := range 700 {
		mixed.WriteString([]string{"a", "é", "あ", "🙂", "\n", "line "}[i%6])
	}
	outputs := map[string][]byte{
		"ascii":      []byte(strings.Repeat("hello, world\n", 400)),
		"multi-byte": []byte(strings.Repeat("日本語のテキスト🙂\n", 120)),
		"mixed":      []byte(mixed.String()),
		"empty":      nil,
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for size := 1; size <= executor.MaxPageSize; size++ {
				var whole []byte
				for _, p := range pages(t, out, size) {
					if p.Len != len(p.Text) || p.Total != int64(len(out)) || p.Start != int64(len(whole)) {
						t.Fatalf("size %d: page %+v at %d of %d bytes", size, p, len(whole), len(out))
					}
					if p.Len > max(size, utf8.UTFMax) || !utf8.ValidString(p.Text) {
						t.Fatalf("size %d: page of %d bytes %q", size, p.Len, p.Text)
					}
					whole = append(whole, p.Text...)
				}
				if !bytes.Equal(whole, out) {
					t.Fatalf("size %d: the pages give %d bytes, want the %d of the output", size, len(whole), len(out))
				}
			}
		})
	}
}

func TestReadPage(t *testing.T) {
	t.Parallel()
	out := []byte("abあc🙂d") // a b [3] c [4] d: offsets 0 1 2 5 6 10
	tests := []struct {
		name        string
		start       int64
		size        int
		wantStart   int64
		wantText    string
		wantNext    int64
		wantHasNext bool
	}{
		{"from the start", 0, 2, 0, "ab", 2, true},
		{"end moves back before a character", 0, 3, 0, "ab", 2, true},
		{"a character that does not fit is whole", 2, 1, 2, "あ", 5, true},
		{"start inside a character moves back", 3, 4, 2, "あc", 6, true},
		{"four-byte character", 6, 4, 6, "🙂", 10, true},
		{"to the end", 6, 100, 6, "🙂d", 11, false},
		{"size 0 is the default", 0, 0, 0, string(out), 11, false},
		{"start at the end", 11, 5, 11, "", 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := executor.ReadPage(bytes.NewReader(out), int64(len(out)), tt.start, tt.size)
			if err != nil || p.Start != tt.wantStart || p.Text != tt.wantText || p.NextStart != tt.wantNext || p.HasNext != tt.wantHasNext || p.Truncated != tt.wantHasNext {
				t.Errorf("ReadPage(%q, %d, %d) = %+v, %v; want start %d text %q next %d (has %v)",
					out, tt.start, tt.size, p, err, tt.wantStart, tt.wantText, tt.wantNext, tt.wantHasNext)
			}
		})
	}
	for _, bad := range []struct {
		start int64
		size  int
	}{{-1, 10}, {0, -1}, {12, 10}} {
		if _, err := executor.ReadPage(bytes.NewReader(out), int64(len(out)), bad.start, bad.size); !errors.Is(err, executor.ErrPage) {
			t.Errorf("ReadPage(start %d, size %d) error = %v, want ErrPage", bad.start, bad.size, err)
		}
	}
	// Sizes above the maximum are cut to it.
	big := bytes.Repeat([]byte("x"), 3*executor.MaxPageSize)
	if p, err := executor.ReadPage(bytes.NewReader(big), int64(len(big)), 0, 1<<20); err != nil || p.Len != executor.MaxPageSize {
		t.Errorf("ReadPage(size 1 MiB) = %d bytes, %v; want %d", p.Len, err, executor.MaxPageSize)
	}
	// Invalid bytes are pages' bytes like any other: nothing is lost.
	bin := []byte("\xff\x80\x80\xe3\x81ok\xf0")
	var whole []byte
	for _, p := range pages(t, bin, 1) {
		whole = append(whole, p.Text...)
	}
	if !bytes.Equal(whole, bin) {
		t.Errorf("pages of %q give %q", bin, whole)
	}
}
