package sandboxinit

import (
	"slices"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
)

func TestEnviron(t *testing.T) {
	t.Parallel()
	cfg := wire.Config{Workspace: "/ws/proj"}
	for _, tc := range []struct {
		env, want []string
	}{
		{[]string{"HOME=/root", "PATH=/usr/bin"}, []string{"PATH=/usr/bin", "HOME=" + home}},
		{[]string{"HOME=/ws/proj/.home"}, []string{"HOME=/ws/proj/.home"}},
		{[]string{"HOME=/ws/proj/../other"}, []string{"HOME=" + home}},
		{[]string{"HOME=/ws/projx"}, []string{"HOME=" + home}},
		{[]string{"TMPDIR=/var/tmp", "A=1"}, []string{"A=1", "HOME=" + home}},
		{[]string{"TMPDIR=/tmp/x", "HOME=/tmp/h"}, []string{"TMPDIR=/tmp/x", "HOME=/tmp/h"}},
		{nil, []string{"HOME=" + home}},
	} {
		if got := environ(cfg, tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("environ(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestPathOf(t *testing.T) {
	t.Parallel()
	if got := pathOf([]string{"PATH=/a", "X=1", "PATH=/b:/c"}); got != "/b:/c" {
		t.Errorf("pathOf = %q, want the last PATH", got)
	}
	if got := pathOf([]string{"X=1"}); got == "" {
		t.Error("pathOf without PATH is empty, want the shells' default")
	}
}
