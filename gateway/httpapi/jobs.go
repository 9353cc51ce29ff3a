package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/jobs"
)

// Background jobs: POST /v1/jobs, GET /v1/jobs, GET /v1/jobs/{id}, …/tail, …/wait,
// POST /v1/jobs/{id}/kill and POST /v1/jobs/gc. Every answer is the job call's JSON
// object as `cmdgate job` prints it (gateway.DoJob), errors included, with the HTTP
// status of its error code.

func (f *Front) mountJobs(v1 *echo.Group, timeout echo.MiddlewareFunc) {
	reader := f.require(gateway.RoleAgent, gateway.RoleAuditor)
	v1.POST("/jobs", f.handleJobRun, f.require(gateway.RoleAgent)) // an approval wait bounds it
	v1.GET("/jobs", f.jobHandler(gateway.JobList, "limit", "state"), reader, timeout)
	v1.POST("/jobs/gc", f.handleJobBody(gateway.JobGC), f.require(gateway.RoleAgent), timeout)
	v1.GET("/jobs/:id", f.jobHandler(gateway.JobStatus), reader, timeout)
	v1.GET("/jobs/:id/tail", f.jobHandler(gateway.JobTailOp, "max_bytes", "lines"), reader, timeout)
	v1.GET("/jobs/:id/wait", f.jobHandler(gateway.JobWait, "timeout_ms"), reader) // timeout_ms bounds it
	v1.POST("/jobs/:id/kill", f.handleJobBody(gateway.JobKill), f.require(gateway.RoleAgent), timeout)
}

// writeJob writes a job call's answer.
func writeJob(c echo.Context, reply []byte, status int) error {
	return c.Blob(status, echo.MIMEApplicationJSON, append(reply, '\n'))
}

func jobInvalid(c echo.Context, op, format string, args ...any) error {
	return writeJob(c, gateway.JobReplyError(op, &gateway.JobError{Code: jobs.CodeInvalidInput, Message: fmt.Sprintf(format, args...)}), 400)
}

// handleJobRun starts a job: the body as DecodeJobRun reads it.
func (f *Front) handleJobRun(c echo.Context) error {
	if len(c.QueryParams()) > 0 {
		return jobInvalid(c, gateway.JobRun, "POST /v1/jobs takes no query parameters: the request is the body")
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	call, err := f.core.DecodeJobRun(raw)
	if err != nil {
		je := gateway.AsJobError(err)
		return writeJob(c, gateway.JobReplyError(gateway.JobRun, je), gateway.JobHTTPStatus(je.Code))
	}
	reply, status := f.core.DoJob(c.Request().Context(), caller(c, "job"), call)
	return writeJob(c, reply, status)
}

// jobHandler answers a GET call whose parameters are in the query; params are the ones
// it takes, each at most once, as whole numbers except state.
func (f *Front) jobHandler(op string, params ...string) echo.HandlerFunc {
	return func(c echo.Context) error {
		call := gateway.JobCall{Op: op, ID: c.Param("id")}
		known := map[string]bool{}
		for _, p := range params {
			known[p] = true
		}
		for name, vals := range c.QueryParams() {
			if !known[name] {
				return jobInvalid(c, op, "unknown parameter %q (known: %v)", gateway.Truncate(name, 64), params)
			}
			if len(vals) != 1 {
				return jobInvalid(c, op, "parameter %s is given %d times", name, len(vals))
			}
			if name == "state" {
				call.State = vals[0]
				continue
			}
			n, err := strconv.ParseInt(vals[0], 10, 64)
			if err != nil || n < 0 {
				return jobInvalid(c, op, "%s must be a whole number, 0 or more", name)
			}
			switch name {
			case "limit":
				call.Limit = int(min(n, 1<<30))
			case "max_bytes":
				call.MaxBytes = n
				if n == 0 {
					return jobInvalid(c, op, "max_bytes must be 1 or more")
				}
			case "lines":
				call.Lines = int(min(n, 1<<30))
			case "timeout_ms":
				if n == 0 {
					return jobInvalid(c, op, "timeout_ms must be 1 or more")
				}
				call.Timeout = time.Duration(min(n, gateway.MaxJobWait.Milliseconds()+1)) * time.Millisecond
			}
		}
		if _, given := c.QueryParams()["lines"]; op == gateway.JobTailOp && !given {
			call.Lines = gateway.DefaultTailLines
		}
		reply, status := f.core.DoJob(c.Request().Context(), caller(c, "job"), call)
		return writeJob(c, reply, status)
	}
}

// handleJobBody answers kill ({"signal": "TERM"}) and gc ({"older_than_days": N}); an
// empty body takes the defaults.
func (f *Front) handleJobBody(op string) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(c.QueryParams()) > 0 {
			return jobInvalid(c, op, "this endpoint takes no query parameters: the request is the body")
		}
		raw, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		var body struct {
			Signal        *string `json:"signal"`
			OlderThanDays *int64  `json:"older_than_days"`
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			if !utf8.Valid(raw) {
				return jobInvalid(c, op, "the request body is not valid UTF-8")
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				return jobInvalid(c, op, "the request body is not a JSON object of the known members (%s): %v",
					map[string]string{gateway.JobKill: "signal", gateway.JobGC: "older_than_days"}[op], err)
			}
			if dec.More() {
				return jobInvalid(c, op, "the request body has more than one JSON value")
			}
		}
		call := gateway.JobCall{Op: op, ID: c.Param("id")}
		switch {
		case op == gateway.JobKill && body.OlderThanDays != nil, op == gateway.JobGC && body.Signal != nil:
			return jobInvalid(c, op, "unknown member for %s", op)
		case body.Signal != nil:
			call.Signal = *body.Signal
		case body.OlderThanDays != nil:
			if *body.OlderThanDays < 0 || *body.OlderThanDays > 100000 {
				return jobInvalid(c, op, "older_than_days must be between 0 and 100000")
			}
			call.OlderThan = time.Duration(*body.OlderThanDays) * 24 * time.Hour
		}
		reply, status := f.core.DoJob(c.Request().Context(), caller(c, "job"), call)
		return writeJob(c, reply, status)
	}
}
