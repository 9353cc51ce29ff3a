package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadConns is the number of concurrent connections of the load benchmarks.
const loadConns = 30

// BenchmarkDecideLoad is POST /v1/decide under load: loadConns clients, each on its own
// keep-alive connection, with the durable (fsync'd) audit append of every decision. The
// opa sub-benchmark is a stock OPA server (the pinned `opa run --server`) answering a
// one-rule policy on the same machine, in the same run: the gateway must reach at least
// half its requests/s, with zero errors and a p99 under 20 ms. Both report req/s and
// p99-ms.
func BenchmarkDecideLoad(b *testing.B) {
	b.Run("cmdgate", func(b *testing.B) {
		env := newEnv(b)
		body := []byte(`{"command":"grep -rn TODO src | head -20 && go test ./..."}`)
		load(b, env.url+"/v1/decide", body, env.tokens["agent"])
	})
	b.Run("opa", func(b *testing.B) {
		url := startOPA(b)
		load(b, url+"/v1/data/bench/allow", []byte(`{"input":{"command":"ls"}}`), "")
	})
}

// BenchmarkExecLoad is POST /v1/exec of `true`, run directly, under the same load: the
// decide pipeline, the process and both audit records. Compare with BenchmarkRun/process
// of executor/process, the executor alone.
func BenchmarkExecLoad(b *testing.B) {
	env := newEnv(b)
	load(b, env.url+"/v1/exec", []byte(`{"argv":["true"],"shell_mode":"direct"}`), env.tokens["agent"])
}

// load sends b.N POSTs of body to url from loadConns goroutines and reports the
// throughput and the 99th percentile of the latency. Any error or non-200 answer fails.
func load(b *testing.B, url string, body []byte, auth string) {
	tr := &http.Transport{MaxIdleConnsPerHost: loadConns, MaxConnsPerHost: loadConns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var next atomic.Int64
	var failed atomic.Value
	lat := make([][]time.Duration, loadConns)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range loadConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("HTTP %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatalf("POST %s: %v", url, err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

// startOPA builds the pinned OPA (a tool of go.mod) and runs its server on 127.0.0.1
// with a one-rule policy; it returns the server's URL.
func startOPA(b *testing.B) string {
	dir := b.TempDir()
	bin := filepath.Join(dir, "opa")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/open-policy-agent/opa").CombinedOutput(); err != nil {
		b.Fatalf("build opa: %v\n%s", err, out)
	}
	policy := filepath.Join(dir, "bench.rego")
	if err := os.WriteFile(policy, []byte("package bench\n\nallow if input.command == \"ls\"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "run", "--server", "--addr", addr, "--log-level", "error", policy)
	if err := cmd.Start(); err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	url := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("opa did not answer on %s within 30 s", addr)
		}
	}
}
