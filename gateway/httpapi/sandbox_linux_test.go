package httpapi

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/cmdgate/cmdgate/policies"
)

// sandboxHelper is cmdgate-sandbox built from the source under test by TestMain.
var sandboxHelper string

func TestMain(m *testing.M) {
	var dir string
	var err error
	if sandboxHelper, dir, err = testenv.BuildHelper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// linuxEnv is a gateway on the linux sandbox (sandbox as given: linux or auto); a host
// where the sandbox cannot be built skips, and fails under CI=true.
func linuxEnv(t *testing.T, sandbox string) *testEnv {
	t.Helper()
	return linuxEnvWith(t, sandbox)
}

// linuxEnvWith is linuxEnv with more options.
func linuxEnvWith(t testing.TB, sandbox string, configure ...func(*gateway.Options)) *testEnv {
	t.Helper()
	probe, err := linux.New(linux.Options{Workspace: t.TempDir(), Helper: sandboxHelper, Pool: -1})
	if err == nil {
		_, err = probe.Probe(t.Context())
		probe.Close()
	}
	if err != nil {
		testenv.Skip(t, "the linux sandbox cannot be built here: %v", err)
	}
	return newEnv(t, append([]func(*gateway.Options){func(o *gateway.Options) {
		o.Sandbox = sandbox
		o.Linux.Helper = sandboxHelper
	}}, configure...)...)
}

func TestLinuxSandboxExec(t *testing.T) {
	t.Parallel()
	for _, sandbox := range []string{gateway.SandboxLinux, gateway.SandboxAuto} {
		t.Run(sandbox, func(t *testing.T) {
			t.Parallel()
			env := linuxEnv(t, sandbox)
			var health struct {
				Status  string
				Sandbox gateway.SandboxStatus
			}
			env.do("GET", "/healthz", "", nil).decode(t, &health)
			if health.Sandbox.Backend != gateway.SandboxLinux || health.Sandbox.Linux == nil || health.Sandbox.Linux.Landlock < 3 {
				t.Fatalf("/healthz sandbox = %+v, want the linux backend with Landlock >= 3", health.Sandbox)
			}
			if lim := health.Sandbox.Linux.Limits; !slices.Contains(lim, "memory") || !slices.Contains(lim, "pids") {
				t.Errorf("/healthz cgroup limits = %v, want memory and pids in force", lim)
			}

			// The command runs in the sandbox: its root holds the system directories and
			// the workspace, not the host's homes, and it writes the workspace.
			var res struct {
				Decision string `json:"decision"`
				ExitCode int    `json:"exit_code"`
				Stdout   string `json:"stdout"`
				Stderr   string `json:"stderr"`
			}
			a := env.exec(env.tokens["agent"], map[string]any{"command": "ls / && printf sandboxed > note.txt"})
			a.decode(t, &res)
			if a.status != 200 || res.ExitCode != 0 {
				t.Fatalf("exec = %d %s", a.status, a.body)
			}
			root := strings.Fields(res.Stdout)
			for _, want := range []string{"usr", "etc", "tmp", "proc", "dev"} {
				if !slices.Contains(root, want) {
					t.Errorf("ls / in the sandbox = %q, want %s", root, want)
				}
			}
			for _, hidden := range []string{"root", "home", "var", "work", "srv"} {
				if slices.Contains(root, hidden) && !strings.HasPrefix(env.ws, "/"+hidden+"/") {
					t.Errorf("ls / in the sandbox = %q: the host's /%s is visible", root, hidden)
				}
			}
			if b, err := os.ReadFile(filepath.Join(env.ws, "note.txt")); err != nil || string(b) != "sandboxed" {
				t.Errorf("note.txt on the host = %q, %v; want what the sandboxed command wrote", b, err)
			}
		})
	}
}

// The rule profile follows the backend: sandboxed where it isolates, strict where it
// does not; sandboxed is refused on a backend that does not isolate.
func TestProfileFollowsBackend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ sandbox, setting, want string }{
		{gateway.SandboxLinux, "", policies.ProfileSandboxed},
		{gateway.SandboxLinux, "default", policies.ProfileSandboxed},
		{gateway.SandboxLinux, policies.ProfileStrict, policies.ProfileStrict},
		{gateway.SandboxProcess, gateway.ProfileAuto, policies.ProfileStrict},
		{gateway.SandboxProcess, policies.ProfileStrict, policies.ProfileStrict},
	} {
		t.Run(tc.sandbox+"/"+tc.setting, func(t *testing.T) {
			t.Parallel()
			var env *testEnv
			if tc.sandbox == gateway.SandboxLinux {
				env = linuxEnvWith(t, tc.sandbox, func(o *gateway.Options) { o.Profile = tc.setting })
			} else {
				env = newEnv(t, func(o *gateway.Options) { o.Sandbox = tc.sandbox; o.Profile = tc.setting })
			}
			var p struct{ Profile string }
			env.do("GET", "/v1/policy", env.tokens["admin"], nil).decode(t, &p)
			if p.Profile != tc.want {
				t.Errorf("profile %q on %s: GET /v1/policy says %q, want %q", tc.setting, tc.sandbox, p.Profile, tc.want)
			}
			var res struct{ Decision string }
			env.do("POST", "/v1/decide", env.tokens["agent"], []byte(`{"command":"git add -A"}`)).decode(t, &res)
			if want := map[string]string{policies.ProfileStrict: "deny", policies.ProfileSandboxed: "allow"}[tc.want]; res.Decision != want {
				t.Errorf("git add -A under %s: %s, want %s", tc.want, res.Decision, want)
			}
		})
	}
	t.Run("sandboxed on process", func(t *testing.T) {
		t.Parallel()
		opts := gateway.Options{DataDir: t.TempDir(), Workspace: t.TempDir(), Sandbox: gateway.SandboxProcess, Profile: policies.ProfileSandboxed}
		srv, err := gateway.New(t.Context(), opts)
		if err == nil {
			srv.Close(t.Context())
			t.Fatal("New with profile sandboxed on the process backend succeeded")
		}
		if !strings.Contains(err.Error(), "sandboxed") {
			t.Errorf("New: %v; want an error about the sandboxed profile", err)
		}
	})
}
