package executor_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
)

func TestErrorMatching(t *testing.T) {
	t.Parallel()
	sentinels := map[executor.Code]error{
		executor.CodeInvalidArgument: executor.ErrInvalidArgument,
		executor.CodeNotDirectory:    executor.ErrNotDirectory,
		executor.CodeCommandNotFound: executor.ErrCommandNotFound,
		executor.CodeInternal:        executor.ErrInternal,
	}
	for code := range sentinels {
		err := fmt.Errorf("exec: %w", &executor.Error{Code: code, Message: "m", Err: fs.ErrNotExist})
		for other, sentinel := range sentinels {
			if got := errors.Is(err, sentinel); got != (other == code) {
				t.Errorf("errors.Is(%v, %s sentinel) = %v, want %v", err, other, got, other == code)
			}
		}
		var e *executor.Error
		if !errors.As(err, &e) || e.Code != code || e.Message != "m" {
			t.Errorf("errors.As(%v) = %+v, want code %s", err, e, code)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) = false, want the cause reachable", err)
		}
	}
	// A sentinel is not equal to another error that merely shares its code and has a message.
	if errors.Is(executor.ErrInternal, &executor.Error{Code: executor.CodeInternal, Message: "x"}) {
		t.Errorf("errors.Is(ErrInternal, an INTERNAL error with a message) = true, want false")
	}
}
