package linux_test

import (
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux"
)

func TestSmoke(t *testing.T) {
	e, ws := newExecutor(t, linux.Options{})
	res := run(t, e, ws, "echo hello; id; hostname; pwd; ls /; cat /proc/self/status | grep -i -E 'cap|seccomp|nonewpriv'; ls /tmp /dev; echo $HOME; touch x && ls -la")
	t.Logf("%+v", res)
}
