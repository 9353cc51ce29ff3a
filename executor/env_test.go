package executor_test

import (
	"runtime"
	"slices"
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
	env, err := executor.Config{EnvDeny: []string{"EXECTEST_D*"}}.Environ()
	if err != nil {
		t.Fatalf("Environ() error = %v", err)
	}
	for _, tt := range []struct {
		kv   string
		kept bool
	}{{"EXECTEST_KEEP=1", true}, {"EXECTEST_DROP=1", false}, {"CMDGATE_TOKEN=secret", false}} {
		if got := slices.Contains(env, tt.kv); got != tt.kept {
			t.Errorf("Environ() holds %q: %v, want %v", tt.kv, got, tt.kept)
		}
	}
}
