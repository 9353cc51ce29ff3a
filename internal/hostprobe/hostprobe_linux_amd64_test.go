package hostprobe

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestCPUIDVendor: leaf 0 names the CPU's vendor, as the kernel read it for
// /proc/cpuinfo.
func TestCPUIDVendor(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for line := range strings.SplitSeq(string(info), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			want = strings.TrimSpace(v)
			break
		}
	}
	if want == "" {
		t.Fatal("no vendor_id in /proc/cpuinfo")
	}
	_, b, c, d := CPUID(0, 0)
	var id [12]byte
	binary.LittleEndian.PutUint32(id[0:], b)
	binary.LittleEndian.PutUint32(id[4:], d)
	binary.LittleEndian.PutUint32(id[8:], c)
	if got := string(id[:]); got != want {
		t.Errorf("CPUID leaf 0 vendor %q, /proc/cpuinfo says %q", got, want)
	}
}

// TestCountCPUIDs: a glibc program's start (/bin/true) runs CPUID (the loader reads the
// CPU's features before anything else), and the program is counted to its exit.
func TestCountCPUIDs(t *testing.T) {
	n, err := trueCount()
	if errors.Is(err, syscall.EPERM) {
		testenv.Skip(t, "this host does not let a process trace its child: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n.Instructions < 1000 {
		t.Errorf("/bin/true ran %d instructions: it was not followed to its exit", n.Instructions)
	}
	if glibcLoader(t, "/bin/true") && n.CPUIDs == 0 {
		t.Errorf("/bin/true ran no CPUID in %d instructions; glibc's loader runs several", n.Instructions)
	}
	// Not traced, the program runs as usual.
	if out, err := exec.Command("/bin/true").CombinedOutput(); err != nil {
		t.Fatalf("/bin/true: %v %s", err, out)
	}
}

// glibcLoader reports whether the program at path is loaded by glibc's dynamic loader.
func glibcLoader(t *testing.T, path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return bytes.Contains(b, []byte("ld-linux"))
		}
	}
	return false
}

// trueCount counts /bin/true's start once per test binary: it takes seconds.
var trueCount = sync.OnceValues(func() (Count, error) { return CountCPUIDs("/bin/true") })

// BenchmarkHost measures what a program's start pays for CPUID on this host, beside the
// whole start, in one run (make bench prints the ratio):
//
//   - cpuids: as many CPUID instructions as /bin/true's start executes (counted once by
//     single-stepping it), over the leaves the loader asks for. Its cpuid-µs is one
//     instruction's cost, cpuids the count.
//   - true: /bin/true started and waited for, as a process.
func BenchmarkHost(b *testing.B) {
	b.Run("cpuids", func(b *testing.B) {
		n, err := trueCount()
		if errors.Is(err, syscall.EPERM) {
			testenv.Skip(b, "this host does not let a process trace its child: %v", err)
		}
		if err != nil {
			b.Fatal(err)
		}
		if n.CPUIDs == 0 {
			b.Fatalf("/bin/true ran no CPUID in %d instructions: nothing to measure", n.Instructions)
		}
		leaves := []uint32{0, 1, 2, 4, 7, 0xb, 0xd, 0x80000000}
		for b.Loop() {
			for i := range n.CPUIDs {
				CPUID(leaves[i%len(leaves)], 0)
			}
		}
		b.ReportMetric(float64(n.CPUIDs), "cpuids")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n.CPUIDs)/1000, "cpuid-µs")
	})
	b.Run("true", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
