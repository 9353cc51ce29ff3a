package linux_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
)

// In the sandbox too, Spec.Stdout and Spec.Stderr get every byte of the output.
func TestTees(t *testing.T) {
	e, ws := newExecutor(t, linux.Options{})
	var out, errOut bytes.Buffer
	res, err := e.Run(context.Background(), executor.Spec{Script: `head -c 200000 /dev/zero | tr '\0' z; echo oops >&2`, Dir: ws,
		Timeout: 20 * time.Second, MaxOutputChars: 1000, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != strings.Repeat("z", 200000) || errOut.String() != "oops\n" || !res.StdoutTruncated || res.StdoutBytes != 200000 {
		t.Errorf("tees got %d bytes and %q; result truncated %v, %d bytes", out.Len(), errOut.String(), res.StdoutTruncated, res.StdoutBytes)
	}
}
