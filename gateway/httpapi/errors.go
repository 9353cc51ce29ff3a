package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/gateway"
)

// statusOf maps each contract code to its HTTP status, in one place.
var statusOf = map[string]int{
	gateway.CodeInvalidArgument:  http.StatusBadRequest,
	gateway.CodeUnauthenticated:  http.StatusUnauthorized,
	gateway.CodeDenied:           http.StatusForbidden,
	gateway.CodeForbidden:        http.StatusForbidden,
	gateway.CodeNotFound:         http.StatusNotFound,
	gateway.CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	gateway.CodeTooLarge:         http.StatusRequestEntityTooLarge,
	gateway.CodeNotDirectory:     http.StatusUnprocessableEntity,
	gateway.CodeCommandNotFound:  http.StatusUnprocessableEntity,
	gateway.CodeApprovalPending:  http.StatusAccepted,
	gateway.CodeRateLimited:      http.StatusTooManyRequests,
	gateway.CodeConflict:         http.StatusConflict,
	gateway.CodeInternal:         http.StatusInternalServerError,
	gateway.CodeUnavailable:      http.StatusServiceUnavailable,
}

// Status is the HTTP status of a contract code (500 for a code it does not know).
func Status(code string) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// asError turns any error into the *gateway.Error the client sees: echo's errors (no
// route, wrong method, body too large, bad request) under contract codes, never echo's
// default body; everything else as the core maps it (gateway.AsError).
func asError(err error) *gateway.Error {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return ge
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		e := func(code, msg string) *gateway.Error { return &gateway.Error{Code: code, Message: msg, Err: err} }
		switch he.Code {
		case http.StatusNotFound:
			return e(gateway.CodeNotFound, "no such endpoint")
		case http.StatusMethodNotAllowed:
			return e(gateway.CodeMethodNotAllowed, "method not allowed on this endpoint")
		case http.StatusRequestEntityTooLarge:
			return e(gateway.CodeTooLarge, "request body is too large")
		case http.StatusBadRequest:
			return e(gateway.CodeInvalidArgument, "malformed request")
		case http.StatusUnauthorized:
			return e(gateway.CodeUnauthenticated, "authentication required")
		case http.StatusServiceUnavailable:
			if errors.Is(err, context.DeadlineExceeded) {
				return e(gateway.CodeUnavailable, "the request took too long")
			}
			return e(gateway.CodeUnavailable, "service unavailable")
		}
	}
	return gateway.AsError(err)
}
