package httpapi

import (
	"os/exec"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

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
		}{"bwrap", func(b *testing.B, _ []byte) {
			// The same peer as the sandbox's own benchmark (executor/linux).
			bwrap := testenv.NeedCommand(b, "bwrap")
			args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "/bin/true"}
			for b.Loop() {
				if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
					b.Fatalf("bwrap: %v\n%s", err, out)
				}
			}
		}},
	)
}
