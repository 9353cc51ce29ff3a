package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cmdgate/cmdgate/executor"
)

// Error codes of the contract (contract 3 of docs/architecture.md): every front maps
// them to its own wire format (the HTTP front to a status, package gateway/httpapi; the
// MCP server to a tool error). A client branches on them.
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
	CodeConflict         = "CONFLICT"
	CodeInternal         = "INTERNAL"
	CodeUnavailable      = "UNAVAILABLE"
)

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
	// ApprovalID names the approval of APPROVAL_PENDING, and of a DENIED that a human
	// (or nobody in time) decided.
	ApprovalID string
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

// Errorf is an *Error with a code and a message for the client.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError turns any error into the *Error a client sees: the gateway's own *Error as
// is; the executor's codes under the same names (an INTERNAL one with its details
// hidden); a request that ran out of time as UNAVAILABLE; anything else as an INTERNAL
// error that hides the cause. A front maps its own framework's errors first.
func AsError(err error) *Error {
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
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeUnavailable, Message: "the request took too long", Err: err}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}

// Invalid is an INVALID_ARGUMENT error with a message for the client.
func Invalid(format string, args ...any) *Error {
	return Errorf(CodeInvalidArgument, format, args...)
}
