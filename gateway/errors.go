package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/executor"
)

// Error codes of the HTTP contract (contract 3 of docs/architecture.md). A client branches on them.
const (
	CodeInvalidArgument  = "INVALID_ARGUMENT"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeDenied           = "DENIED"
	CodeForbidden        = "FORBIDDEN"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeTooLarge         = "TOO_LARGE"
	CodeNotDirectory     = "NOT_DIRECTORY"
	CodeCommandNotFound  = "COMMAND_NOT_FOUND"
	CodeApprovalPending  = "APPROVAL_PENDING"
	CodeRateLimited      = "RATE_LIMITED"
	CodeInternal         = "INTERNAL"
	CodeUnavailable      = "UNAVAILABLE"
)

// statusOf maps each code to its HTTP status, in one place.
var statusOf = map[string]int{
	CodeInvalidArgument:  http.StatusBadRequest,
	CodeUnauthenticated:  http.StatusUnauthorized,
	CodeDenied:           http.StatusForbidden,
	CodeForbidden:        http.StatusForbidden,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeTooLarge:         http.StatusRequestEntityTooLarge,
	CodeNotDirectory:     http.StatusUnprocessableEntity,
	CodeCommandNotFound:  http.StatusUnprocessableEntity,
	CodeApprovalPending:  http.StatusAccepted,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeInternal:         http.StatusInternalServerError,
	CodeUnavailable:      http.StatusServiceUnavailable,
}

// Error is an error with a contract code; its message is safe to show to the client.
type Error struct {
	Code    string
	Message string
	Err     error // the cause, for logs only; never sent to the client

	// Decision, DecisionID and Reasons are set on DENIED: the policy's answer and the
	// audit record that holds it, so that a client can show why and an auditor find it.
	Decision   string
	DecisionID string
	Reasons    []Reason
	// RetryAfter, when positive, is sent as the Retry-After header (RATE_LIMITED) in
	// whole seconds, rounded up.
	RetryAfter time.Duration
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

// asError turns any error into the *Error the client sees. It is the one place where
// errors become contract codes: the gateway's own *Error as is; the executor's codes
// under the same names (an INTERNAL one with its details hidden); echo's errors (no
// route, wrong method, body too large, bad request) under contract codes, never echo's
// default body; a request that ran out of time as UNAVAILABLE; anything else as an
// INTERNAL error that hides the cause.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var xe *executor.Error
	if errors.As(err, &xe) {
		switch xe.Code {
		case executor.CodeInvalidArgument:
			return &Error{Code: CodeInvalidArgument, Message: xe.Message, Err: err}
		case executor.CodeNotDirectory:
			return &Error{Code: CodeNotDirectory, Message: xe.Message, Err: err}
		case executor.CodeCommandNotFound:
			return &Error{Code: CodeCommandNotFound, Message: xe.Message, Err: err}
		}
		return &Error{Code: CodeInternal, Message: "internal error: the command could not be run", Err: err}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return &Error{Code: CodeNotFound, Message: "no such endpoint", Err: err}
		case http.StatusMethodNotAllowed:
			return &Error{Code: CodeMethodNotAllowed, Message: "method not allowed on this endpoint", Err: err}
		case http.StatusRequestEntityTooLarge:
			return &Error{Code: CodeTooLarge, Message: "request body is too large", Err: err}
		case http.StatusBadRequest:
			return &Error{Code: CodeInvalidArgument, Message: "malformed request", Err: err}
		case http.StatusUnauthorized:
			return &Error{Code: CodeUnauthenticated, Message: "authentication required", Err: err}
		case http.StatusServiceUnavailable:
			if errors.Is(err, context.DeadlineExceeded) {
				return &Error{Code: CodeUnavailable, Message: "the request took too long", Err: err}
			}
			return &Error{Code: CodeUnavailable, Message: "service unavailable", Err: err}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeUnavailable, Message: "the request took too long", Err: err}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}
