package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// BenchmarkDecideHTTP is one POST /v1/decide over real HTTP on 127.0.0.1: body
// decoding, authentication, parse, policy evaluation and the durable (fsync'd) audit
// append of the decision record.
func BenchmarkDecideHTTP(b *testing.B) {
	benchPost(b, "/v1/decide", []byte(`{"command":"grep -rn TODO src | head -20 && go test ./..."}`))
}

// BenchmarkExecHTTP is one POST /v1/exec of `true` run directly: the decide pipeline
// plus starting and reaping the command and appending the execution record, the
// decision record durable before the command starts and the execution record before
// the answer. "process" runs it as a plain child; on Linux, "linux" runs it in the
// sandbox back to back and "linux_paced" with a pause between requests, as an agent
// sends them (see agentPause), beside "bwrap", the peer: `bwrap --unshare-all
// --die-with-parent true` as a process, in the same run, and "bwrap_same", bubblewrap
// doing what it can of the sandbox's isolation (package bwrappeer). Each reports the
// phases of its requests (Server-Timing) as µs/op metrics.
func BenchmarkExecHTTP(b *testing.B) {
	body := []byte(`{"argv":["true"],"shell_mode":"direct"}`)
	b.Run("process", func(b *testing.B) { benchPostEnv(b, newEnv(b), "/v1/exec", body) })
	for _, sub := range execHTTPPeers {
		b.Run(sub.name, func(b *testing.B) { sub.run(b, body) })
	}
}

// execHTTPPeers are the platform's further sub-benchmarks of BenchmarkExecHTTP.
var execHTTPPeers []struct {
	name string
	run  func(b *testing.B, body []byte)
}

func benchPost(b *testing.B, path string, body []byte) {
	benchPostEnv(b, newEnv(b), path, body)
}

// benchPostEnv POSTs body to path of env as fast as answers come, or with the timer
// stopped for pause between requests when one is given, and reports each phase's mean
// (from the answers' Server-Timing) as "<phase>-µs/op".
func benchPostEnv(b *testing.B, env *testEnv, path string, body []byte, pause ...time.Duration) {
	client := &http.Client{}
	phases := map[string]float64{}
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.MachineCPU(b)()
	for b.Loop() {
		if len(pause) > 0 {
			b.StopTimer()
			time.Sleep(pause[0])
			b.StartTimer()
		}
		req, _ := http.NewRequest("POST", env.url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", env.tokens["agent"])
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
		addTiming(phases, resp.Header.Get("Server-Timing"))
	}
	for name, ms := range phases {
		b.ReportMetric(ms*1000/float64(b.N), name+"-µs/op")
	}
}

// addTiming adds the durations of a Server-Timing header to sums, in ms by name.
func addTiming(sums map[string]float64, h string) {
	for part := range strings.SplitSeq(h, ", ") {
		name, dur, ok := strings.Cut(part, ";dur=")
		if ms, err := strconv.ParseFloat(dur, 64); ok && err == nil {
			sums[name] += ms
		}
	}
}

// BenchmarkApprovalRoundTrip is one request that asks, its approval by the API and the
// result delivered to the client that waits for it: the client POSTs /v1/exec with
// wait_ms; the approver, reading GET /v1/approvals/stream, approves the request as it
// appears; the client gets the command's output. "exec" is the peer: the same command
// allowed outright through POST /v1/exec.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		benchPost(b, "/v1/exec", []byte(`{"argv":["true"],"shell_mode":"direct"}`))
	})
	b.Run("approval", func(b *testing.B) {
		env := newEnv(b, func(o *gateway.Options) {
			o.Policy.AllowedCommands.Exclude = []string{"touch"}
			o.Policy.UnknownCommand = "ask"
		})
		// The approver: approves every request the stream announces.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", env.url+"/v1/approvals/stream", nil)
		req.Header.Set("Authorization", env.tokens["approver"])
		stream, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer stream.Body.Close()
		go func() {
			sc := bufio.NewScanner(stream.Body)
			sc.Buffer(nil, 1<<20)
			client := &http.Client{}
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "data: ") {
					continue
				}
				var ev struct {
					Type     string `json:"type"`
					Approval struct {
						ID string `json:"id"`
					} `json:"approval"`
				}
				if json.Unmarshal([]byte(line[6:]), &ev) != nil || ev.Type != gateway.EventRequested {
					continue
				}
				r, _ := http.NewRequest("POST", env.url+"/v1/approvals/"+ev.Approval.ID+"/approve", nil)
				r.Header.Set("Authorization", env.tokens["approver"])
				if resp, err := client.Do(r); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
		client := &http.Client{}
		body := []byte(`{"argv":["touch","marker"],"shell_mode":"direct","wait_ms":30000}`)
		for b.Loop() {
			req, _ := http.NewRequest("POST", env.url+"/v1/exec", bytes.NewReader(body))
			req.Header.Set("Authorization", env.tokens["agent"])
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("/v1/exec waiting for the approval: %d", resp.StatusCode)
			}
		}
	})
}
