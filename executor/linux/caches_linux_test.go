package linux_test

// An agent's everyday loop in the sandbox with the workspace's tool caches: fetch once,
// build and test again and again at normal speed, with none of the gateway's secrets.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// cachedExecutor is an Executor whose commands keep their tool caches in a fresh area.
func cachedExecutor(t testing.TB, cfg executor.Config) (*linux.Executor, string, executor.Caches) {
	t.Helper()
	cfg.Caches = executor.Caches{Dir: filepath.Join(t.TempDir(), "caches")}
	e, ws := newExecutor(t, linux.Options{Config: cfg})
	real, err := filepath.EvalSymlinks(cfg.Caches.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return e, ws, executor.Caches{Dir: real}
}

// runSpec runs spec (Dir defaults to dir) with a generous timeout and wants exit 0.
func runOK(t testing.TB, e *linux.Executor, spec executor.Spec) executor.Result {
	t.Helper()
	if spec.Timeout == 0 {
		spec.Timeout = 2 * time.Minute
	}
	res, err := e.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", spec.Script, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("Run(%q) = exit %d\nstdout: %s\nstderr: %s", spec.Script, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goModule is a small module with a package, a test and a command.
var goModule = map[string]string{
	"go.mod":       "module example.com/calc\n\ngo 1.22\n",
	"calc.go":      "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n",
	"cmd/calc/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/calc\"\n)\n\n" +
		"func main() { fmt.Println(calc.Add(40, 2)) }\n",
}

// The second `go test ./...` of a module comes from the build cache kept in the area.
func TestCachesGoBuildTwice(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "go")
	e, ws, caches := cachedExecutor(t, executor.Config{})
	writeFiles(t, ws, goModule)
	first := runOK(t, e, executor.Spec{Script: "go test ./... && go run ./cmd/calc", Dir: ws})
	if strings.Contains(first.Stdout, "(cached)") || !strings.Contains(first.Stdout, "42") {
		t.Fatalf("first go test = %q, want a fresh run and 42", first.Stdout)
	}
	entries, err := os.ReadDir(filepath.Join(caches.Dir, "go-build"))
	if err != nil || len(entries) < 10 {
		t.Fatalf("the area's build cache after one build holds %d entries (%v), want the build's", len(entries), err)
	}
	second := runOK(t, e, executor.Spec{Script: "go test ./...", Dir: ws})
	if !strings.Contains(second.Stdout, "(cached)") {
		t.Errorf("second go test = %q, want the result from the build cache (cached)", second.Stdout)
	}
	// HOME is the area's persistent home, not a fresh one in /tmp.
	home := runOK(t, e, executor.Spec{Script: "echo kept > ~/.note; echo $HOME", Dir: ws})
	if got := strings.TrimSpace(home.Stdout); got != caches.Home() {
		t.Errorf("HOME = %q, want %q", got, caches.Home())
	}
	if b, err := os.ReadFile(filepath.Join(caches.Home(), ".note")); err != nil || string(b) != "kept\n" {
		t.Errorf("a file written to ~ is not kept: %q, %v", b, err)
	}
}

// A dependency is fetched once with network, then the build works offline from the
// area's module cache.
func TestCachesGoDependencyOffline(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "go")
	testenv.NeedCommand(t, linux.UplinkName) // go mod download is granted the network
	// The gateway passes the module proxy's settings when a team configures them.
	e, ws, caches := cachedExecutor(t, executor.Config{EnvPass: []string{"GOPROXY", "GONOSUMDB", "GOSUMDB", "GOPRIVATE", "GOINSECURE"}})
	writeFiles(t, ws, map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.22\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum": "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\n" +
			"github.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/uuid\"\n)\n\n" +
			"func main() { fmt.Println(uuid.NewSHA1(uuid.NameSpaceURL, []byte(\"cmdgate\"))) }\n",
	})
	// Without network the fetch fails: the sandbox has none unless granted.
	res, err := e.Run(context.Background(), executor.Spec{Script: "go build ./...", Dir: ws, Timeout: 2 * time.Minute})
	if err != nil || res.ExitCode == 0 {
		t.Fatalf("go build with an empty cache and no network = %+v, %v; want a failure", res, err)
	}
	runOK(t, e, executor.Spec{Script: "go mod download", Dir: ws, Network: true})
	if _, err := os.Stat(filepath.Join(caches.Dir, "go-mod", "github.com", "google", "uuid@v1.6.0", "uuid.go")); err != nil {
		t.Fatalf("the dependency is not in the area's module cache: %v", err)
	}
	out := runOK(t, e, executor.Spec{Script: "go build -o app . && ./app", Dir: ws})
	if got := strings.TrimSpace(out.Stdout); len(got) != 36 {
		t.Errorf("the offline build's program printed %q, want a UUID", got)
	}
}

// An npm project with a local dependency installs with no network; npm's cache lives
// in the area.
func TestCachesNpmLocalDependency(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "npm")
	e, ws, caches := cachedExecutor(t, executor.Config{})
	writeFiles(t, ws, map[string]string{
		"lib/package.json": `{"name": "greet", "version": "1.0.0", "main": "index.js"}`,
		"lib/index.js":     "module.exports = (n) => `hello ${n}`;\n",
		"app/package.json": `{"name": "app", "version": "1.0.0", "private": true,
  "dependencies": {"greet": "file:../lib"},
  "scripts": {"test": "node -e \"const g = require('greet'); if (g('x') !== 'hello x') process.exit(1); console.log(g('sandbox'))\""}}`,
	})
	app := filepath.Join(ws, "app")
	runOK(t, e, executor.Spec{Script: "npm install --no-audit --no-fund --offline", Dir: app})
	test := runOK(t, e, executor.Spec{Script: "npm test", Dir: app})
	if !strings.Contains(test.Stdout, "hello sandbox") {
		t.Errorf("npm test = %q, want hello sandbox", test.Stdout)
	}
	if _, err := os.Lstat(filepath.Join(app, "node_modules", "greet")); err != nil {
		t.Errorf("node_modules/greet: %v", err)
	}
	if entries, err := os.ReadDir(filepath.Join(caches.Dir, "npm")); err != nil || len(entries) == 0 {
		t.Errorf("npm's cache in the area is empty (%v): npm did not use it", err)
	}
}

// A Python project installs into a venv of the workspace.
func TestCachesPythonVenv(t *testing.T) {
	t.Parallel()
	// The sandbox sees the system's Python, not one under the host's home.
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Skip(t, "/usr/bin/python3 is not installed: %v", err)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import venv, ensurepip").Run(); err != nil {
		testenv.Skip(t, "python3's venv and ensurepip are not installed (python3-venv): %v", err)
	}
	e, ws, _ := cachedExecutor(t, executor.Config{})
	writeFiles(t, ws, map[string]string{
		"pkg/setup.py":           "from setuptools import setup\nsetup(name='mini', version='1.0', packages=['mini'])\n",
		"pkg/mini/__init__.py":   "def shout(s):\n    return s.upper() + '!'\n",
		"pkg/tests/test_mini.py": "",
		"pkg/tests/run_tests.py": "import mini\nassert mini.shout('ok') == 'OK!'\nprint('tests passed')\n",
	})
	runOK(t, e, executor.Spec{Script: "/usr/bin/python3 -m venv .venv && .venv/bin/pip install --no-index --no-build-isolation ./pkg", Dir: ws})
	out := runOK(t, e, executor.Spec{Script: "cd /tmp && " + filepath.Join(ws, ".venv/bin/python") + " " + filepath.Join(ws, "pkg/tests/run_tests.py"), Dir: ws})
	if !strings.Contains(out.Stdout, "tests passed") {
		t.Errorf("the installed package's tests = %q", out.Stdout)
	}
}

// Secrets in the gateway's environment reach no command; what a team passes does.
func TestSandboxEnvironmentHygiene(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_fakefakefakefake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-aws-secret")
	t.Setenv("ACME_API_KEY", "fake-acme")
	t.Setenv("CMDGATE_TEST_PLAIN", "plain")
	for _, tc := range []struct {
		name  string
		cfg   executor.Config
		shown []string
		never []string
	}{
		{"allowlist", executor.Config{}, []string{"PATH="}, []string{"ghp_fake", "fake-aws-secret", "fake-acme", "CMDGATE_TEST_PLAIN"}},
		{"allowlist pass set", executor.Config{EnvPass: []string{"ACME_API_KEY"}, EnvSet: map[string]string{"TEAM_SETTING": "on"}},
			[]string{"ACME_API_KEY=fake-acme", "TEAM_SETTING=on"}, []string{"ghp_fake", "fake-aws-secret"}},
		{"inherit", executor.Config{EnvMode: executor.EnvInherit}, []string{"PATH="}, []string{"ghp_fake", "fake-aws-secret", "fake-acme"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ws := newExecutor(t, linux.Options{Config: tc.cfg, Pool: -1})
			res := runOK(t, e, executor.Spec{Argv: []string{"env"}, ShellMode: executor.ShellDirect, Dir: ws})
			for _, want := range tc.shown {
				if !strings.Contains(res.Stdout, want) {
					t.Errorf("env lacks %s:\n%s", want, res.Stdout)
				}
			}
			for _, leak := range tc.never {
				if strings.Contains(res.Stdout, leak) {
					t.Errorf("env shows %s:\n%s", leak, res.Stdout)
				}
			}
		})
	}
}

// BenchmarkGoTestCached is `go test ./...` of a small module in the sandbox: warm, with
// the workspace's cache area kept from the run before (what an agent gets from its
// second run on), beside cold, with an empty area every time (what it got before the
// areas existed). The ratio is the point.
func BenchmarkGoTestCached(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("go is not installed")
	}
	bench := func(b *testing.B, fresh bool) {
		cfg := executor.Config{Caches: executor.Caches{Dir: filepath.Join(b.TempDir(), "caches")}}
		e, ws := newExecutor(b, linux.Options{Config: cfg})
		writeFiles(b, ws, goModule)
		spec := executor.Spec{Script: "go test ./...", Dir: ws, Timeout: 2 * time.Minute}
		runOK(b, e, spec)
		for b.Loop() {
			if fresh {
				b.StopTimer()
				if err := executor.ClearCaches(cfg.Caches.Dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			runOK(b, e, spec)
		}
	}
	b.Run("warm", func(b *testing.B) { bench(b, false) })
	b.Run("cold", func(b *testing.B) { bench(b, true) })
}
