package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRatios(t *testing.T) {
	in := `goos: linux
BenchmarkExecHTTP/linux-2         	     100	  12000000 ns/op	 3000 parse-µs/op
BenchmarkExecHTTP/bwrap-2         	     100	  15000000 ns/op
BenchmarkDecide/short-2           	   10000	     20000 ns/op
BenchmarkDecide/script-2          	    1000	    200000 ns/op
BenchmarkDecideBaseline/short-2   	   10000	     40000 ns/op
BenchmarkDecideBaseline/script-2  	    1000	    400000 ns/op
BenchmarkDecideFloor/short-2      	   10000	     12000 ns/op	 3 parse-µs/op
BenchmarkSandbox/linux_cold-2     	     100	   4000000 ns/op
BenchmarkSandbox/bwrap_same-2     	     100	   5000000 ns/op
BenchmarkHost/cpuids-2            	    2000	    420000 ns/op	         6.176 cpuid-µs	        68.00 cpuids
BenchmarkHost/true-2              	    2000	    700000 ns/op
BenchmarkDecideLoad/cmdgate-2     	       1	1000 ns/op	 3000 req/s
BenchmarkDecideLoad/opa-2         	       1	1000 ns/op	 6000 req/s
BenchmarkDecideLoad/cmdgate_c64-2 	       1	1000 ns/op	 3000 req/s
BenchmarkDecideLoad/opa_c64-2     	       1	1000 ns/op	 6000 req/s
PASS
`
	var out bytes.Buffer
	res, failed, err := read(strings.NewReader(in), &out)
	if err != nil || failed || out.String() != in {
		t.Fatalf("read = %v, failed %v; copy equal %v", err, failed, out.String() == in)
	}
	// Columns are padded by bytes: compare with the spacing folded.
	fold := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := fold(strings.Join(ratios(res), " | "))
	for _, want := range []string{
		"POST /v1/exec (linux sandbox), back to back ÷ bwrap 0.800×  target ≤ 1.00×  ok",
		"decide ÷ plain OPA embedding (script)",
		"decide ÷ plain OPA embedding (short)",
		"decide's floor (parse, input, a one-rule policy) ÷ plain OPA embedding (short) 0.300×  target none  floor",
		"(binds, hidden files, no capability, the seccomp filter) 0.800×  target none  like for like",
		"its CPUID instructions at this host's price ÷ the whole start 0.600×  target none  host",
		"/v1/decide req/s ÷ stock OPA server, 30 connections 0.500×  target ≥ 0.50×  ok",
		"/v1/decide req/s ÷ stock OPA server, 64 connections 0.500×  target ≥ 0.60×  MISSED",
	} {
		if !strings.Contains(got, fold(want)) {
			t.Errorf("ratios lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, fold("0.500×  target ≤ 0.40×  ok")) {
		t.Errorf("a missed maximum passed:\n%s", got)
	}
	if _, failed, _ := read(strings.NewReader("--- FAIL: BenchmarkX\nFAIL\n"), &out); !failed {
		t.Error("a failure in the input was not seen")
	}
}

// TestMedians: a benchmark and its peer run a different number of times are judged by
// the ratio of their medians, each of runs odd or even in number; the line says so.
func TestMedians(t *testing.T) {
	in := `BenchmarkSandbox/linux-2   100  3000000 ns/op
BenchmarkSandbox/bwrap-2   100  5000000 ns/op
BenchmarkSandbox/linux-2   100  9000000 ns/op
BenchmarkSandbox/bwrap-2   100  4000000 ns/op
BenchmarkSandbox/linux-2   100  2000000 ns/op
BenchmarkSandbox/bwrap-2   100  7000000 ns/op
BenchmarkSandbox/bwrap-2   100  6000000 ns/op
`
	// linux: 2, 3, 9 -> 3 ms; bwrap: 4, 5, 6, 7 -> 5.5 ms.
	got := foldedRatios(t, in)
	want := "linux sandbox, warm ÷ bwrap 0.545× target ≤ 0.60× ok (ns/op: 3e+06 vs 5.5e+06, medians of 3 and 4 runs)"
	if !strings.Contains(got, want) {
		t.Errorf("ratios:\n%s\nwant a line %q", got, want)
	}
}

// TestRounds: a benchmark and its peer run as often (make bench's rounds) are judged by
// the median of the rounds' ratios, not by the ratio of their medians: a round on a
// slower machine moves both of its runs.
func TestRounds(t *testing.T) {
	in := `BenchmarkSandbox/linux-2   100  3000000 ns/op
BenchmarkSandbox/bwrap-2   100  6000000 ns/op
BenchmarkSandbox/linux-2   100  4000000 ns/op
BenchmarkSandbox/bwrap-2   100  4000000 ns/op
BenchmarkSandbox/linux-2   100  9000000 ns/op
BenchmarkSandbox/bwrap-2   100  10000000 ns/op
BenchmarkDecideLoad/cmdgate-2   1  1000 ns/op  3000 req/s
BenchmarkDecideLoad/opa-2       1  1000 ns/op  6000 req/s
BenchmarkDecideLoad/cmdgate-2   1  1000 ns/op  2000 req/s
BenchmarkDecideLoad/opa-2       1  1000 ns/op  5000 req/s
`
	// Rounds 3/6, 4/4 and 9/10: 0.5, 1 and 0.9, median 0.9 (the medians, 4 and 6, would
	// say 0.667). Rates 3000/6000 and 2000/5000: 0.5 and 0.4, median 0.45.
	got := foldedRatios(t, in)
	for _, want := range []string{
		"linux sandbox, warm ÷ bwrap 0.900× target ≤ 0.60× MISSED (ns/op: 4e+06 vs 6e+06, medians of 3 runs; ratio: median of the 3 rounds' ratios)",
		"/v1/decide req/s ÷ stock OPA server, 30 connections 0.450× target ≥ 0.50× MISSED (req/s: 2500 vs 5500, medians of 2 runs; ratio: median of the 2 rounds' ratios)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ratios:\n%s\nwant a line %q", got, want)
		}
	}
}

// TestPackages: a benchmark is judged against its peer in its own package; another
// package's benchmark of the same name is not taken for a second run of it.
func TestPackages(t *testing.T) {
	in := `pkg: example.com/executor/docker
BenchmarkDockerExec/executor-2     100  3000000 ns/op
BenchmarkDockerExec/docker-cli-2   10  90000000 ns/op
pkg: example.com/gateway
BenchmarkDockerExec/cmdgate-2      100  5000000 ns/op
BenchmarkDockerExec/docker-cli-2   10  50000000 ns/op
`
	got := foldedRatios(t, in)
	want := "command in a task ÷ docker exec 0.100× target ≤ 0.50× ok (ns/op: 5e+06 vs 5e+07)"
	if !strings.Contains(got, want) || strings.Contains(got, "medians") {
		t.Errorf("ratios:\n%s\nwant a line %q, and no medians", got, want)
	}
}

// foldedRatios reads in, which must hold no failure, and returns its ratio lines joined
// with their spacing folded to single spaces.
func foldedRatios(t *testing.T, in string) string {
	t.Helper()
	res, failed, err := read(strings.NewReader(in), io.Discard)
	if err != nil || failed {
		t.Fatalf("read = %v, failed %v", err, failed)
	}
	return strings.Join(strings.Fields(strings.Join(ratios(res), "\n")), " ")
}
