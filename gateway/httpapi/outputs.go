package httpapi

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/gateway"
)

// handleOutput answers a page of a kept output: GET /v1/outputs/{id}?stream=stdout|stderr
// &start=BYTE&size=BYTES (size at most 4096, the default).
func (f *Front) handleOutput(c echo.Context) error {
	stream, start, size := "", int64(0), 0
	for name, vals := range c.QueryParams() {
		if len(vals) != 1 {
			return gateway.Invalid("parameter %s is given %d times", gateway.Truncate(name, 64), len(vals))
		}
		var err error
		switch name {
		case "stream":
			stream = vals[0]
		case "start":
			if start, err = strconv.ParseInt(vals[0], 10, 64); err != nil || start < 0 {
				return gateway.Invalid("start must be a byte offset, a whole number from 0")
			}
		case "size":
			n, err := strconv.ParseInt(vals[0], 10, 64)
			if err != nil || n < 1 {
				return gateway.Invalid("size must be a whole number of bytes from 1 (at most 4096 are returned)")
			}
			size = int(min(n, 1<<20))
		default:
			return gateway.Invalid("unknown parameter %q (known: size, start, stream)", gateway.Truncate(name, 64))
		}
	}
	p, err := f.core.ReadOutput(c.Request().Context(), caller(c, "output"), c.Param("id"), stream, start, size)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, p)
}
