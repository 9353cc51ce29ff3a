package httpapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// An agent's ordinary day through the real gateway, the default policy and the linux
// sandbox: fetch a dependency (the policy grants the network to the install alone),
// build and test offline from the workspace's persistent caches, twice.
func TestEverydayGoModule(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, linux.UplinkName) // go mod download is granted the network
	env := linuxEnv(t, gateway.SandboxLinux)
	mod := filepath.Join(env.ws, "app")
	files := map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.22\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum": "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\n" +
			"github.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/uuid\"\n)\n\n" +
			"func id() string { return uuid.NewSHA1(uuid.NameSpaceURL, []byte(\"cmdgate\")).String() }\n\n" +
			"func main() { fmt.Println(id()) }\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestID(t *testing.T) {\n\tif len(id()) != 36 {\n\t\tt.Fatal(id())\n\t}\n}\n",
	}
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		Decision   string `json:"decision"`
		DecisionID string `json:"decision_id"`
		ExitCode   int    `json:"exit_code"`
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
	}
	run := func(cmd string) result {
		t.Helper()
		var res result
		a := env.exec(env.tokens["agent"], map[string]any{"command": cmd, "cwd": mod, "timeout_ms": 120000})
		a.decode(t, &res)
		if a.status != 200 || res.ExitCode != 0 {
			t.Fatalf("exec %q = %d %s", cmd, a.status, a.body)
		}
		return res
	}
	network := func(decisionID string) bool {
		t.Helper()
		for _, r := range env.recordsOf(audit.KindDecision) {
			if r.ID != decisionID {
				continue
			}
			var d struct {
				Network string `json:"network"`
			}
			if err := json.Unmarshal(r.Detail, &d); err != nil {
				t.Fatalf("decision record detail %s: %v", r.Detail, err)
			}
			return d.Network == "granted"
		}
		t.Fatalf("no decision record %s", decisionID)
		return false
	}

	fetch := run("go mod download")
	if !network(fetch.DecisionID) {
		t.Errorf("go mod download was not granted the network")
	}
	if _, err := os.Stat(filepath.Join(env.srv.SandboxStatus().Caches.Dir, "go-mod", "github.com", "google", "uuid@v1.6.0")); err != nil {
		t.Errorf("the module is not in the workspace's module cache: %v", err)
	}
	first := run("go build ./... && go test ./...")
	if network(first.DecisionID) {
		t.Errorf("go build && go test was granted the network")
	}
	second := run("go test ./...")
	if !strings.Contains(second.Stdout, "(cached)") {
		t.Errorf("second go test = %q, want the result from the build cache (cached)", second.Stdout)
	}
}

// Secrets in the gateway's own environment never reach a command.
func TestGatewaySecretsStayOut(t *testing.T) {
	const secret = "ghp_fakefakefakefakefakefakefakefake0000"
	t.Setenv("GITHUB_TOKEN", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake/aws/secret")
	t.Setenv("ACME_API_KEY", "fake-acme-key")
	for _, backend := range []string{gateway.SandboxProcess, gateway.SandboxLinux} {
		t.Run(backend, func(t *testing.T) {
			var env *testEnv
			if backend == gateway.SandboxLinux {
				env = linuxEnv(t, gateway.SandboxLinux)
			} else {
				env = newEnv(t)
			}
			var res struct {
				ExitCode int    `json:"exit_code"`
				Stdout   string `json:"stdout"`
			}
			a := env.exec(env.tokens["agent"], map[string]any{"argv": []string{"env"}})
			a.decode(t, &res)
			if a.status != 200 || res.ExitCode != 0 {
				t.Fatalf("exec env = %d %s", a.status, a.body)
			}
			for _, leak := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "ACME_API_KEY", secret, "fake-acme-key"} {
				if strings.Contains(res.Stdout, leak) {
					t.Errorf("the command's environment holds %s:\n%s", leak, res.Stdout)
				}
			}
			for _, want := range []string{"PATH=", "HOME=" + env.srv.SandboxStatus().Caches.Home, "GOCACHE="} {
				if !strings.Contains(res.Stdout, want) {
					t.Errorf("the command's environment lacks %s:\n%s", want, res.Stdout)
				}
			}
		})
	}
}

// The system prompt describes the running configuration, for each backend.
func TestPromptMatchesConfig(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{gateway.SandboxProcess, gateway.SandboxLinux} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var env *testEnv
			if backend == gateway.SandboxLinux {
				env = linuxEnv(t, gateway.SandboxLinux)
			} else {
				env = newEnv(t)
			}
			a := env.do("GET", "/v1/policy/prompt?format=text", "agent", nil)
			if a.status != 200 {
				t.Fatalf("prompt = %d %s", a.status, a.body)
			}
			p := string(a.body)
			st := env.srv.SandboxStatus()
			want := []string{"`" + env.ws + "`", "`" + st.Caches.Home + "`, kept between commands", "`POST /v1/exec`", "30s per command", "at most 2m"}
			not := []string{"Docker", "/workspace/project", "Automatically installed", "MCP"}
			if backend == gateway.SandboxLinux {
				want = append(want, "fresh Linux sandbox", "`/tmp` is private")
				// What the prompt says of the network follows what this host's sandbox
				// can do: with an uplink, installs get it; without, nothing does.
				if st.Linux.Uplink != "" {
					want = append(want, "Network: none, except for dependency installs")
				} else {
					want = append(want, "Network: none: no command gets the network")
					not = append(not, "except for dependency installs")
				}
			} else {
				want = append(want, "Sandbox: none", "Network: not isolated")
				not = append(not, "private", "Linux sandbox")
			}
			for _, w := range want {
				if !strings.Contains(p, w) {
					t.Errorf("prompt lacks %q:\n%s", w, p)
				}
			}
			for _, n := range not {
				if strings.Contains(p, n) {
					t.Errorf("prompt says %q:\n%s", n, p)
				}
			}
			// The same text as the offline description of this configuration.
			if got := env.srv.Prompt(); got != p {
				t.Errorf("GET /v1/policy/prompt differs from PromptFor(PromptEnv())")
			}
		})
	}
}

// What the linux sandbox makes harmless is allowed there and still denied under the
// process backend: writing a private /tmp, reading the sandbox's own home.
func TestSandboxAwarePolicy(t *testing.T) {
	t.Parallel()
	linuxGW, processGW := linuxEnv(t, gateway.SandboxLinux), newEnv(t)
	for _, cmd := range []string{"echo scratch > /tmp/notes.txt && cat /tmp/notes.txt", "ls -la ~", "echo x > ~/.note && cat ~/.note"} {
		var res struct {
			Decision string `json:"decision"`
			ExitCode int    `json:"exit_code"`
		}
		a := linuxGW.exec(linuxGW.tokens["agent"], map[string]any{"command": cmd})
		a.decode(t, &res)
		if a.status != 200 || res.Decision != "allow" || res.ExitCode != 0 {
			t.Errorf("linux: exec %q = %d %s, want it allowed and run", cmd, a.status, a.body)
		}
		if d := processGW.exec(processGW.tokens["agent"], map[string]any{"command": cmd}); d.status != 403 {
			t.Errorf("process: exec %q = %d %s, want 403 DENIED", cmd, d.status, d.body)
		}
	}
	// The host's secrets stay out of reach in the sandbox too.
	for _, cmd := range []string{"cat /root/.ssh/id_rsa", "ls /home/*/.ssh", "cat /etc/shadow", "echo x > /etc/cron.d/x"} {
		if d := linuxGW.exec(linuxGW.tokens["agent"], map[string]any{"command": cmd}); d.status != 403 {
			t.Errorf("linux: exec %q = %d %s, want 403 DENIED", cmd, d.status, d.body)
		}
	}
	// The policy input records the guarantees.
	var input struct {
		Sandbox map[string]any `json:"sandbox"`
	}
	recs := linuxGW.recordsOf(audit.KindDecision)
	if err := json.Unmarshal(recs[len(recs)-1].Input, &input); err != nil {
		t.Fatal(err)
	}
	if input.Sandbox["backend"] != "linux" || input.Sandbox["isolated"] != true || input.Sandbox["private_tmp"] != true ||
		input.Sandbox["home"] != linuxGW.srv.SandboxStatus().Caches.Home {
		t.Errorf("the decision record's input sandbox = %v", input.Sandbox)
	}
}
