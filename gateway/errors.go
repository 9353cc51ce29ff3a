package gateway

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes of the HTTP contract (DESIGN.md contract 3). A client branches on them.
const (
	CodeInvalidArgument = "INVALID_ARGUMENT"
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeDenied          = "DENIED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeTooLarge        = "TOO_LARGE"
	CodeNotDirectory    = "NOT_DIRECTORY"
	CodeCommandNotFound = "COMMAND_NOT_FOUND"
	CodeApprovalPending = "APPROVAL_PENDING"
	CodeRateLimited     = "RATE_LIMITED"
	CodeInternal        = "INTERNAL"
	CodeUnavailable     = "UNAVAILABLE"
)

// statusOf maps each code to its HTTP status, in one place.
var statusOf = map[string]int{
	CodeInvalidArgument: http.StatusBadRequest,
	CodeUnauthenticated: http.StatusUnauthorized,
	CodeDenied:          http.StatusForbidden,
	CodeForbidden:       http.StatusForbidden,
	CodeNotFound:        http.StatusNotFound,
	CodeTooLarge:        http.StatusRequestEntityTooLarge,
	CodeNotDirectory:    http.StatusUnprocessableEntity,
	CodeCommandNotFound: http.StatusUnprocessableEntity,
	CodeApprovalPending: http.StatusAccepted,
	CodeRateLimited:     http.StatusTooManyRequests,
	CodeInternal:        http.StatusInternalServerError,
	CodeUnavailable:     http.StatusServiceUnavailable,
}

// Error is an error with a contract code; its message is safe to show to the client.
type Error struct {
	Code    string
	Message string
	Err     error // the cause, for logs only; never sent to the client
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status of the error.
func (e *Error) Status() int {
	if s, ok := statusOf[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asError returns err as an *Error, or an INTERNAL one that hides the cause.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}
