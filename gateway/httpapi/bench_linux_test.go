package httpapi

import (
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor/linux/bwrappeer"
	"github.com/cmdgate/cmdgate/gateway"
)

// agentPause is the pause between an agent's commands in BenchmarkExecHTTP/linux_paced,
// with the timer stopped: long enough for the gateway to build the next sandbox ahead
// (about 5 ms on a quiet 2-core machine), far shorter than the seconds a model takes
// between commands. The back-to-back "linux" leaves the pool no time at all: it measures
// the sustained rate, where every request pays for a sandbox's build in CPU.
const agentPause = 25 * time.Millisecond

func init() {
	execHTTPPeers = append(execHTTPPeers,
		struct {
			name string
			run  func(b *testing.B, body []byte)
		}{"linux", func(b *testing.B, body []byte) {
			benchPostEnv(b, linuxEnvWith(b, gateway.SandboxLinux), "/v1/exec", body)
		}},
		struct {
			name string
			run  func(b *testing.B, body []byte)
		}{"linux_paced", func(b *testing.B, body []byte) {
			benchPostEnv(b, linuxEnvWith(b, gateway.SandboxLinux), "/v1/exec", body, agentPause)
		}},
		struct {
			name string
			run  func(b *testing.B, body []byte)
		}{"bwrap", func(b *testing.B, _ []byte) { bwrappeer.BenchmarkPlain(b, 0) }},
		struct {
			name string
			run  func(b *testing.B, body []byte)
		}{"bwrap_paced", func(b *testing.B, _ []byte) { bwrappeer.BenchmarkPlain(b, agentPause) }},
		struct {
			name string
			run  func(b *testing.B, body []byte)
		}{"bwrap_same", func(b *testing.B, _ []byte) { bwrappeer.Benchmark(b, b.TempDir()) }},
	)
}
