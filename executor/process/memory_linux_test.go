package process_test

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// vmHWM is the process's peak resident set size in bytes (/proc/self/status VmHWM).
func vmHWM(t *testing.T) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// A command printing 1 GiB grows the gateway by the cap's worth, not by the stream: the
// capture keeps the cap and counts the rest. Not parallel: it measures the process.
func TestRunGiBOutputMemory(t *testing.T) {
	testenv.NeedCommand(t, "bash")
	if testing.Short() {
		t.Skip("prints 2 GiB through pipes")
	}
	const gib = 1 << 30
	tests := []struct {
		name   string
		script string
	}{
		{"zero bytes", "head -c 1073741824 /dev/zero"},
		{"multi-byte text on stderr", "yes 'あいうえお日本語テキスト🙂' | head -c 1073741824 >&2"},
	}
	e := process.New(process.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC()
			// Reset the peak RSS to the current RSS (Linux 4.0+).
			resetHWM := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
			rss0 := vmHWM(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)

			res := run(t, e, executor.Spec{Script: tt.script, Dir: t.TempDir()})

			runtime.ReadMemStats(&after)
			out, n, truncated := res.Stdout, res.StdoutBytes, res.StdoutTruncated
			if res.StderrBytes > 0 {
				out, n, truncated = res.Stderr, res.StderrBytes, res.StderrTruncated
			}
			if n != gib || !truncated || utf8.RuneCountInString(out) != executor.DefaultOutputChars || !utf8.ValidString(out) {
				t.Fatalf("Run(%s) = %d bytes, truncated %v, %d characters; want %d, true, %d",
					tt.name, n, truncated, utf8.RuneCountInString(out), gib, executor.DefaultOutputChars)
			}
			// The kept text is 200 000 characters (up to 800 kB); its buffer doubles as it
			// grows, and the Result copies it into a string.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d bytes for %d bytes of output", alloc, n)
			if alloc > 8<<20 {
				t.Errorf("Run(%s) allocated %d bytes, want at most 8 MiB", tt.name, alloc)
			}
			if resetHWM {
				growth := int64(vmHWM(t)) - int64(rss0)
				t.Logf("peak RSS grew by %d bytes", growth)
				if growth > 16<<20 {
					t.Errorf("Run(%s) grew the peak RSS by %d bytes, want at most 16 MiB", tt.name, growth)
				}
			}
		})
	}
}
