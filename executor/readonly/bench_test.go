package readonly_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor/readonly"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// benchMarker is the grep pattern of the benchmark: it is in one line of 200 (0.5 %),
// about 80 matches spread over the 16 000 lines of the 1 MiB file, so head -n 50 needs
// about 60 % of the file before it stops grep.
const benchMarker = "XYZZY"

// benchFile writes the benchmark's text file of about 1 MiB (at most MaxFileSize)
// into dir.
func benchFile(t testing.TB, dir string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	for i := 0; ; i++ {
		line := strings.ReplaceAll(words(rng, 20+rng.IntN(80)), benchMarker, "xyzzy")
		if rng.IntN(200) == 0 { // only there
			line = line[:len(line)/2] + benchMarker + line[len(line)/2:]
		}
		if b.Len()+len(line)+1 > readonly.MaxFileSize {
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return writeFile(t, dir, "bench.txt", b.String())
}

// BenchmarkExecute measures `cat F | grep -n X | head -n 50` on a 1 MiB file: readonly
// (Parse, Open, Run, Close per op) against GNU coreutils in a shell. Targets: readonly
// at most 0.25 times coreutils's time (reported as ratio-vs-coreutils) and at most 3
// times the file's size allocated per op (B/op; TestMemory asserts it).
func BenchmarkExecute(b *testing.B) {
	dir := realDir(b)
	benchFile(b, dir)
	a := allowlist(b, dir+"/")
	command := "cat bench.txt | grep -n " + benchMarker + " | head -n 50"

	var coreNsPerOp float64
	b.Run("coreutils", func(b *testing.B) {
		sh := testenv.NeedCommand(b, "sh")
		for b.Loop() {
			cmd := exec.Command(sh, "-c", command)
			cmd.Dir = dir
			cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatalf("sh -c %q = %d bytes, %v", command, len(out), err)
			}
		}
		coreNsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("readonly", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			out, err := execute(ctx, a, dir, command)
			if err != nil || len(out) == 0 {
				b.Fatalf("execute(%q) = %d bytes, %v", command, len(out), err)
			}
		}
		if coreNsPerOp > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/coreNsPerOp, "ratio-vs-coreutils")
		}
	})
}

// TestMemory checks the memory bound of the benchmark's pipeline: at most 3 times the
// file's size allocated per call. Not parallel: it reads the process's allocation
// counter, which parallel tests would disturb.
func TestMemory(t *testing.T) {
	dir := realDir(t)
	path := benchFile(t, dir)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	a := allowlist(t, dir+"/")
	for _, command := range []string{
		"cat bench.txt | grep -n " + benchMarker + " | head -n 50",
		"cat bench.txt | grep -n e | head -n 50", // the line-by-line path
		"cat bench.txt | nl | grep -n TODO | tail -n 5",
		"cat bench.txt | sort | head",
		"cat bench.txt",
	} {
		const runs = 10
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range runs {
			if _, err := execute(context.Background(), a, dir, command); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / runs
		t.Logf("%s: %d bytes allocated per run, %.2f times the file", command, perRun, float64(perRun)/float64(fi.Size()))
		if strings.Contains(command, "head -n 50") && perRun > 3*uint64(fi.Size()) {
			t.Errorf("%s: %d bytes allocated per run, want at most 3 × %d", command, perRun, fi.Size())
		}
	}
}

// TestOutputBounded: filters stacked so that every stage adds to every line (nl over a
// file of empty lines) stop at MaxOutput instead of growing memory without bound. Not
// parallel: it measures the process's allocations.
func TestOutputBounded(t *testing.T) {
	dir := realDir(t)
	writeFile(t, dir, "empty-lines", strings.Repeat("\n", readonly.MaxFileSize))
	a := allowlist(t, dir+"/")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := execute(context.Background(), a, dir, "cat empty-lines | nl | nl | nl | nl | nl | nl | nl")
	runtime.ReadMemStats(&after)
	t.Logf("allocated %d bytes before stopping", after.TotalAlloc-before.TotalAlloc)
	if c := code(t, err); c != readonly.CodeOutputTooLarge {
		t.Fatalf("seven nl over 1 MiB of empty lines: %v, want %s", err, readonly.CodeOutputTooLarge)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*readonly.MaxOutput {
		t.Errorf("it allocated %d bytes before stopping, want at most 3 × %d", alloc, readonly.MaxOutput)
	}
	// Below the bound, the same stages work.
	out, err := execute(context.Background(), a, dir, "cat empty-lines | nl | head -n 2")
	if err != nil || string(out) != "     1\t\n     2\t\n" {
		t.Errorf("nl | head -n 2 = %q, %v", out, err)
	}
}
