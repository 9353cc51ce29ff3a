package linux_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/cmdgate/cmdgate/executor/linux"
)

func TestStaleCgroup(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		fmt.Sprintf("run-%d-1", os.Getpid()): false, // this process is alive
		"run-1-3":                            false, // init is alive
		"run-2147483646-1":                   true,  // no such process
		"test-5-x":                           false, // not the executor's
		"run-x-1":                            false,
		"run--5-1":                           false,
	} {
		if got := linux.StaleCgroup(name); got != want {
			t.Errorf("StaleCgroup(%q) = %v, want %v", name, got, want)
		}
	}
}
