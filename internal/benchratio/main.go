// Command benchratio reads `go test -bench` output on stdin, copies it to stdout, and
// then prints each benchmark's ratio to the peer it is judged against, measured in the
// same run: machines differ threefold in spawn and fsync cost, so a ratio, not a time,
// says whether a target is met. A benchmark is judged against the peer of its own
// package. Run several times, a benchmark and its peer are judged round by round: the
// ratio is the median of the ratios of their first runs, their second runs, and so on
// (make bench runs the rounds one after the other, so that each pair is measured
// seconds apart); with unequal numbers of runs, it is the ratio of their medians. It
// exits 1 when the input reports a failure.
//
// Usage: go test -run '^$' -bench . ./... 2>&1 | go run ./internal/benchratio
package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A pair is a benchmark (Of) and its peer (Peer) compared by Unit, and the target the
// ratio must meet: at most Max for times, at least Min for rates. A pair with neither
// is printed for reference, with Note (default "floor": what any implementation pays
// on this machine; "host": a price of this host that moves other ratios) where a
// verdict would be.
type pair struct {
	Label    string
	Of, Peer string // benchmark names without the -GOMAXPROCS suffix; "*" matches a sub-benchmark name
	Unit     string
	Max, Min float64
	Note     string
}

// pairs are the targets of cmdgate's benchmarks.
var pairs = []pair{
	{Label: "POST /v1/exec (linux sandbox) ÷ bwrap --unshare-all true, paced", Of: "BenchmarkExecHTTP/linux_paced", Peer: "BenchmarkExecHTTP/bwrap_paced", Unit: "ns/op", Max: 1.0},
	{Label: "POST /v1/exec (linux sandbox), back to back ÷ bwrap", Of: "BenchmarkExecHTTP/linux", Peer: "BenchmarkExecHTTP/bwrap", Unit: "ns/op", Max: 1.0},
	{Label: "POST /v1/exec (linux sandbox), back to back ÷ bwrap doing the same isolation bar Landlock and the cgroup", Of: "BenchmarkExecHTTP/linux", Peer: "BenchmarkExecHTTP/bwrap_same", Unit: "ns/op", Note: "like for like"},
	{Label: "linux sandbox, warm ÷ bwrap", Of: "BenchmarkSandbox/linux", Peer: "BenchmarkSandbox/bwrap", Unit: "ns/op", Max: 0.6},
	{Label: "linux sandbox, cold ÷ bwrap", Of: "BenchmarkSandbox/linux_cold", Peer: "BenchmarkSandbox/bwrap", Unit: "ns/op", Max: 1.0},
	{Label: "linux sandbox, cold: its floor (a Go init cloned into the namespaces runs true, nothing built) ÷ bwrap", Of: "BenchmarkSandbox/linux_floor", Peer: "BenchmarkSandbox/bwrap", Unit: "ns/op"},
	{Label: "linux sandbox, cold ÷ bwrap doing the same isolation bar Landlock and the cgroup (binds, hidden files, no capability, the seccomp filter)", Of: "BenchmarkSandbox/linux_cold", Peer: "BenchmarkSandbox/bwrap_same", Unit: "ns/op", Note: "like for like"},
	{Label: "cmdgate sandbox run -- true ÷ bwrap", Of: "BenchmarkSandboxRun/cmdgate", Peer: "BenchmarkSandboxRun/bwrap", Unit: "ns/op", Max: 1.0},
	{Label: "cmdgate sandbox run -- true ÷ bwrap doing the same isolation bar Landlock and the cgroup", Of: "BenchmarkSandboxRun/cmdgate", Peer: "BenchmarkSandboxRun/bwrap_same", Unit: "ns/op", Note: "like for like"},
	{Label: "cmdgate sandbox run: its floor (three Go program starts, the clone, true; no sandbox) ÷ bwrap", Of: "BenchmarkSandboxRun/floor", Peer: "BenchmarkSandboxRun/bwrap", Unit: "ns/op"},
	{Label: "a program's start (/bin/true): its CPUID instructions at this host's price ÷ the whole start", Of: "BenchmarkHost/cpuids", Peer: "BenchmarkHost/true", Unit: "ns/op", Note: "host"},
	{Label: "decide ÷ plain OPA embedding (*)", Of: "BenchmarkDecide/*", Peer: "BenchmarkDecideBaseline/*", Unit: "ns/op", Max: 0.4},
	{Label: "decide's floor (parse, input, a one-rule policy) ÷ plain OPA embedding (*)", Of: "BenchmarkDecideFloor/*", Peer: "BenchmarkDecideBaseline/*", Unit: "ns/op"},
	{Label: "/v1/decide req/s ÷ stock OPA server, 30 connections", Of: "BenchmarkDecideLoad/cmdgate", Peer: "BenchmarkDecideLoad/opa", Unit: "req/s", Min: 0.5},
	{Label: "/v1/decide req/s ÷ stock OPA server, 64 connections", Of: "BenchmarkDecideLoad/cmdgate_c64", Peer: "BenchmarkDecideLoad/opa_c64", Unit: "req/s", Min: 0.6},
	{Label: "command in a task ÷ docker exec", Of: "BenchmarkDockerExec/cmdgate", Peer: "BenchmarkDockerExec/docker-cli", Unit: "ns/op", Max: 0.5},
	{Label: "read-only language ÷ coreutils pipeline", Of: "BenchmarkExecute/readonly", Peer: "BenchmarkExecute/coreutils", Unit: "ns/op", Max: 0.25},
}

var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// results maps a benchmark name (its -N suffix removed) to its figures by unit, one per
// run, in the order read.
type results map[string]map[string][]float64

// byPackage holds the results of each package (the "pkg:" line go test prints before
// them; "" before any): a benchmark is judged against its peer in its own package, so
// that two packages' benchmarks of one name (BenchmarkDockerExec/docker-cli) are not
// taken for runs of one.
type byPackage map[string]results

// median is the median of a benchmark's figures in a unit (0 when there is none): the
// middle one, or the mean of the two middle ones.
func (res results) median(name, unit string) (m float64, runs int) {
	v := slices.Clone(res[name][unit])
	if len(v) == 0 {
		return 0, 0
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2, n
	}
	return v[len(v)/2], len(v)
}

// read copies r to w and collects the benchmark lines; failed says a test or
// benchmark failed.
func read(r io.Reader, w io.Writer) (all byPackage, failed bool, err error) {
	all = byPackage{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "panic:") {
			failed = true
		}
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		res := all[pkg]
		if res == nil {
			res = results{}
			all[pkg] = res
		}
		fields := strings.Fields(m[2])
		figures := res[m[1]]
		if figures == nil {
			figures = map[string][]float64{}
			res[m[1]] = figures
		}
		for i := 0; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				figures[fields[i+1]] = append(figures[fields[i+1]], v)
			}
		}
	}
	return all, failed, sc.Err()
}

// ratios are the lines of the ratio table for all, pair by pair, each benchmark against
// its peer in its own package.
func ratios(all byPackage) []string {
	var out []string
	for _, p := range pairs {
		for _, pkg := range slices.Sorted(maps.Keys(all)) {
			out = append(out, pairRatios(all[pkg], p)...)
		}
	}
	return out
}

// pairRatios are the lines of pair p for the results of one package.
func pairRatios(res results, p pair) []string {
	var out []string
	for _, m := range matches(res, p) {
		of, runs := res.median(m[0], p.Unit)
		peer, peerRuns := res.median(m[1], p.Unit)
		if of == 0 || peer == 0 {
			continue
		}
		r, medians := of/peer, ""
		paired, ok := 0.0, false
		if runs > 1 && runs == peerRuns {
			paired, ok = pairedRatio(res[m[0]][p.Unit], res[m[1]][p.Unit])
		}
		switch {
		case ok:
			r = paired
			medians = fmt.Sprintf(", medians of %d runs; ratio: median of the %d rounds' ratios", runs, runs)
		case runs > 1 || peerRuns > 1:
			medians = fmt.Sprintf(", medians of %d and %d runs", runs, peerRuns)
		}
		verdict, target := "ok", "none"
		switch {
		case p.Max > 0:
			target = fmt.Sprintf("≤ %.2f×", p.Max)
			if r > p.Max {
				verdict = "MISSED"
			}
		case p.Min > 0:
			target = fmt.Sprintf("≥ %.2f×", p.Min)
			if r < p.Min {
				verdict = "MISSED"
			}
		case p.Note != "":
			verdict = p.Note
		default:
			verdict = "floor"
		}
		label := strings.ReplaceAll(p.Label, "*", strings.TrimPrefix(m[0], strings.TrimSuffix(p.Of, "*")))
		out = append(out, fmt.Sprintf("%-60s %8.3f×  target %s  %s  (%s: %.4g vs %.4g%s)", label, r, target, verdict, p.Unit, of, peer, medians))
	}
	return out
}

// pairedRatio is the median of of[i]/peer[i], the ratios of the runs of each round (of
// and peer are as long); false when a peer's run is 0.
func pairedRatio(of, peer []float64) (float64, bool) {
	r := make([]float64, len(of))
	for i := range of {
		if peer[i] == 0 {
			return 0, false
		}
		r[i] = of[i] / peer[i]
	}
	slices.Sort(r)
	if n := len(r); n%2 == 0 {
		return (r[n/2-1] + r[n/2]) / 2, true
	}
	return r[len(r)/2], true
}

// matches are the [benchmark, peer] names of p found in res.
func matches(res results, p pair) [][2]string {
	if !strings.HasSuffix(p.Of, "*") {
		if _, ok := res[p.Of]; ok {
			if _, ok := res[p.Peer]; ok {
				return [][2]string{{p.Of, p.Peer}}
			}
		}
		return nil
	}
	var out [][2]string
	prefix, peerPrefix := strings.TrimSuffix(p.Of, "*"), strings.TrimSuffix(p.Peer, "*")
	for name := range res {
		if sub, ok := strings.CutPrefix(name, prefix); ok {
			if _, ok := res[peerPrefix+sub]; ok {
				out = append(out, [2]string{name, peerPrefix + sub})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func main() {
	res, failed, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
	if lines := ratios(res); len(lines) > 0 {
		fmt.Println("\nratios to the peers measured in this run:")
		for _, l := range lines {
			fmt.Println(l)
		}
	}
	if failed {
		os.Exit(1)
	}
}
