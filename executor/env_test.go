package executor_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/google/go-cmp/cmp"
)

func TestFilterEnv(t *testing.T) {
	t.Parallel()
	env := []string{
		"HOME=/root",
		"CMDGATE_TOKEN=secret",
		"CMDGATE_URL=http://127.0.0.1:8080",
		"CMDGATEX=kept",
		"cmdgate_token=lower",
		"BASH_ENV=/tmp/inject.sh",
		"BASH_FUNC_ls%%=() { rm -rf ~; }",
		"SHELLOPTS=xtrace",
		"BASHOPTS=extglob",
		"CDPATH=/etc",
		"ENV=production",
		"A=b=c",
		"=C:=C:\\dir",
		"AWS_SECRET_ACCESS_KEY=k",
		"AWS_REGION=eu-west-1",
	}
	got, err := executor.FilterEnv(env, append(slices.Clone(executor.DefaultEnvDeny), "AWS_SECRET_*"))
	if err != nil {
		t.Fatalf("FilterEnv error = %v", err)
	}
	want := []string{"HOME=/root", "CMDGATEX=kept", "cmdgate_token=lower", "ENV=production", "A=b=c", "=C:=C:\\dir", "AWS_REGION=eu-west-1"}
	if runtime.GOOS == "windows" {
		// Names are case-insensitive there.
		want = slices.DeleteFunc(want, func(s string) bool { return s == "cmdgate_token=lower" })
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FilterEnv mismatch (-want +got):\n%s", diff)
	}
	if len(env) != 15 || env[1] != "CMDGATE_TOKEN=secret" {
		t.Errorf("FilterEnv modified its input: %q", env)
	}

	if _, err := executor.FilterEnv(env, []string{"X["}); err == nil {
		t.Errorf("FilterEnv with a malformed pattern error = nil, want an error")
	}
}

func TestConfigEnviron(t *testing.T) {
	t.Setenv("CMDGATE_TOKEN", "secret")
	t.Setenv("EXECTEST_KEEP", "1")
	t.Setenv("EXECTEST_DROP", "1")
	t.Setenv("GITHUB_TOKEN", "ghp_fake")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake")
	t.Setenv("ACME_API_KEY", "fake")
	t.Setenv("DB_PASSWORD", "fake")
	t.Setenv("PASSED_TOKEN", "fake-but-passed")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_ALL", "C")
	t.Setenv("TZ", "UTC")
	t.Setenv("HOME", "/host/home")
	caches := executor.Caches{Dir: "/data/caches/ws-0123"}
	for _, tc := range []struct {
		name string
		cfg  executor.Config
		want map[string]bool // entry → whether it is there
	}{
		{"allowlist", executor.Config{EnvDeny: []string{"EXECTEST_D*"}}, map[string]bool{
			"EXECTEST_KEEP=1": false, "EXECTEST_DROP=1": false, "CMDGATE_TOKEN=secret": false,
			"GITHUB_TOKEN=ghp_fake": false, "AWS_SECRET_ACCESS_KEY=fake": false, "ACME_API_KEY=fake": false,
			"LANG=C.UTF-8": true, "LC_ALL=C": true, "TZ=UTC": true, "HOME=/host/home": false,
		}},
		{"allowlist pass set", executor.Config{EnvPass: []string{"EXECTEST_K*", "PASSED_TOKEN", "CMDGATE_TOKEN"},
			EnvSet: map[string]string{"GOFLAGS": "-mod=mod", "LANG": "en_US.UTF-8"}, Caches: caches}, map[string]bool{
			"EXECTEST_KEEP=1": true, "PASSED_TOKEN=fake-but-passed": true, "GOFLAGS=-mod=mod": true,
			"LANG=en_US.UTF-8": true, "LANG=C.UTF-8": false, "CMDGATE_TOKEN=secret": false,
			"HOME=/data/caches/ws-0123/home": true, "GOCACHE=/data/caches/ws-0123/go-build": true,
			"GOMODCACHE=/data/caches/ws-0123/go-mod": true, "HOME=/host/home": false,
		}},
		{"inherit", executor.Config{EnvMode: executor.EnvInherit, EnvDeny: []string{"EXECTEST_D*"}, EnvPass: []string{"PASSED_*"}}, map[string]bool{
			"EXECTEST_KEEP=1": true, "EXECTEST_DROP=1": false, "CMDGATE_TOKEN=secret": false,
			"GITHUB_TOKEN=ghp_fake": false, "AWS_SECRET_ACCESS_KEY=fake": false, "ACME_API_KEY=fake": false,
			"DB_PASSWORD=fake": false, "PASSED_TOKEN=fake-but-passed": true, "HOME=/host/home": true,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := tc.cfg.Environ()
			if err != nil {
				t.Fatalf("Environ() error = %v", err)
			}
			for kv, want := range tc.want {
				if got := slices.Contains(env, kv); got != want {
					t.Errorf("Environ() holds %q: %v, want %v\n%q", kv, got, want, env)
				}
			}
			names := map[string]bool{}
			for _, kv := range env {
				name, _, _ := strings.Cut(kv, "=")
				if names[name] {
					t.Errorf("Environ() sets %s twice: %q", name, env)
				}
				names[name] = true
			}
			if !names["PATH"] && runtime.GOOS != "windows" {
				t.Errorf("Environ() has no PATH: %q", env)
			}
		})
	}
}

func TestCredentialLike(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "GH_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_PROFILE": true,
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "DB_PASSWORD": true, "PGPASSWORD": true,
		"SSH_AUTH_SOCK": true, "DATABASE_URL": true, "SENTRY_DSN": true, "NPM_TOKEN": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "slack_webhook_url": true, "KUBECONFIG": true,
		"PATH": false, "HOME": false, "LANG": false, "GOPATH": false, "TERM": false, "KEYBOARD": false,
		"EDITOR": false, "GOPROXY": false, "CI": false,
	} {
		if got := executor.CredentialLike(name); got != want {
			t.Errorf("CredentialLike(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestConfigCheckEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  executor.Config
		want string
	}{
		{executor.Config{EnvMode: "all"}, "env mode"},
		{executor.Config{EnvPass: []string{"["}}, "env pass"},
		{executor.Config{EnvSet: map[string]string{"BASH_ENV": "/x"}}, "may never reach"},
		{executor.Config{EnvSet: map[string]string{"A-B": "x"}}, "not a variable name"},
		{executor.Config{Caches: executor.Caches{Dir: "rel"}}, "caches"},
	} {
		if err := tc.cfg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	ok := executor.Config{EnvMode: executor.EnvInherit, EnvPass: []string{"GO*"}, EnvSet: map[string]string{"GOFLAGS": "-mod=mod"}}
	if err := ok.Check(); err != nil {
		t.Errorf("Check(%+v) = %v", ok, err)
	}
}
