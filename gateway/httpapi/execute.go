package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/gateway"
)

// handleExecute evaluates a read-only language pipeline: POST /v1/execute {command,
// start?, size?} → 200 the decision and a page of the output, or the language's error
// with its exit code (a refused read is a result, not an HTTP error).
func (f *Front) handleExecute(c echo.Context) error {
	caller := caller(c, "execute")
	start := time.Now()
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	req, err := gateway.DecodeExecuteRequest(raw)
	caller.Timing.Since(gateway.PhaseDecode, start)
	if err != nil {
		return err
	}
	res, err := f.core.Execute(c.Request().Context(), caller, req)
	if err != nil {
		return err
	}
	info(c).decision = res.Decision
	return writeJSON(c, http.StatusOK, res)
}
