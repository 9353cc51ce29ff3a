package executor

import "fmt"

// Code classifies an executor error. The gateway maps each code to its HTTP status in
// one place (contract 3): INVALID_ARGUMENT 400, NOT_DIRECTORY and COMMAND_NOT_FOUND
// 422, INTERNAL 500.
type Code string

// The codes of exec_command's error codes.
const (
	CodeInvalidArgument Code = "INVALID_ARGUMENT"
	CodeNotDirectory    Code = "NOT_DIRECTORY"
	CodeCommandNotFound Code = "COMMAND_NOT_FOUND"
	CodeInternal        Code = "INTERNAL"
)

// Error is the typed error every backend returns for a run that could not happen or could
// not finish. Message is written for the caller (the agent): it names the offending field,
// directory or command. Err, when set, is the underlying cause.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's code, so that
// errors.Is(err, executor.ErrNotDirectory) works on any *Error of that code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Code == e.Code
}

// Sentinels for errors.Is: each matches every *Error of its code.
var (
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrNotDirectory    = &Error{Code: CodeNotDirectory}
	ErrCommandNotFound = &Error{Code: CodeCommandNotFound}
	ErrInternal        = &Error{Code: CodeInternal}
)

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// Internal wraps an unexpected failure as an INTERNAL error; what says what was being done.
func Internal(what string, err error) *Error {
	return &Error{Code: CodeInternal, Message: what, Err: err}
}
