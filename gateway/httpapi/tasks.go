package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/cmdgate/cmdgate/gateway"
)

// Per-task Docker environments: POST /v1/tasks, GET /v1/tasks, GET /v1/tasks/{id} and
// DELETE /v1/tasks/{id}. Every answer is the task document (gateway.Task), or the list
// of them; a gateway without tasks answers NOT_FOUND with the core's message, so the
// routes are there whatever the configuration.

func (f *Front) mountTasks(v1 *echo.Group, timeout echo.MiddlewareFunc) {
	reader := f.require(gateway.RoleAgent, gateway.RoleAuditor)
	v1.POST("/tasks", f.handleTaskCreate, f.require(gateway.RoleAgent)) // wait_ms bounds it
	v1.GET("/tasks", f.handleTasks, reader, timeout)
	v1.GET("/tasks/:id", f.handleTask, reader) // wait_ms bounds it
	// The core bounds a removal (three tries of the engine's operation timeout) and
	// finishes it whatever happens to the request.
	v1.DELETE("/tasks/:id", f.handleTaskDelete, f.require(gateway.RoleAgent))
}

// tasksOff is the core's answer on a gateway without tasks (NOT_FOUND, saying so),
// before anything of the request is read: nil on a gateway with tasks.
func (f *Front) tasksOff(c echo.Context) error {
	if f.core.TasksEnabled() {
		return nil
	}
	_, err := f.core.Tasks(c.Request().Context(), caller(c, "tasks"), "", 0)
	return err
}

// tasksPage is the answer of GET /v1/tasks.
type tasksPage struct {
	Tasks []*gateway.Task `json:"tasks"`
}

// handleTaskCreate creates a task: the body is a gateway.TaskRequest, read strictly
// (gateway.DecodeTaskRequest) → 201 with the task as created, or with wait_ms as it is
// once prepared (or when the wait ended).
func (f *Front) handleTaskCreate(c echo.Context) error {
	if err := f.tasksOff(c); err != nil {
		return err
	}
	if len(c.QueryParams()) > 0 {
		return gateway.Invalid("POST /v1/tasks takes no query parameters: the request is the body")
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	req, err := gateway.DecodeTaskRequest(raw)
	if err != nil {
		return err
	}
	t, err := f.core.CreateTask(c.Request().Context(), caller(c, "task_create"), req)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, t)
}

// handleTasks lists the tasks the caller may see, newest first: ?state= (live, created,
// initializing, ready, running, stopped, deleted, failed; default every state) and
// ?limit= (1 to 1000, default 100). An agent sees its own.
func (f *Front) handleTasks(c echo.Context) error {
	if err := f.tasksOff(c); err != nil {
		return err
	}
	state, limit := "", 100
	for name, vals := range c.QueryParams() {
		if len(vals) != 1 {
			return gateway.Invalid("parameter %s is given %d times", gateway.Truncate(name, 64), len(vals))
		}
		switch name {
		case "state":
			state = vals[0]
		case "limit":
			n, err := strconv.Atoi(vals[0])
			if err != nil || n < 1 || n > 1000 {
				return gateway.Invalid("limit must be an integer from 1 to 1000")
			}
			limit = n
		default:
			return gateway.Invalid("unknown parameter %q (known: limit, state)", gateway.Truncate(name, 64))
		}
	}
	list, err := f.core.Tasks(c.Request().Context(), caller(c, "tasks"), state, limit)
	if err != nil {
		return err
	}
	if list == nil {
		list = []*gateway.Task{}
	}
	return writeJSON(c, http.StatusOK, tasksPage{list})
}

// handleTask answers one task; ?wait_ms=N waits up to N ms (at most
// gateway.MaxTaskWait) while it is created or initializing.
func (f *Front) handleTask(c echo.Context) error {
	if err := f.tasksOff(c); err != nil {
		return err
	}
	var wait time.Duration
	for name, vals := range c.QueryParams() {
		n, err := strconv.ParseInt(vals[0], 10, 64)
		if name != "wait_ms" || len(vals) != 1 || err != nil || n < 0 {
			return gateway.Invalid("the only parameter is wait_ms, a whole number of milliseconds")
		}
		wait = time.Duration(min(n, gateway.MaxTaskWait.Milliseconds())) * time.Millisecond
	}
	t, err := f.core.WaitTask(c.Request().Context(), caller(c, "task"), c.Param("id"), wait)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, t)
}

// handleTaskDelete stops and removes a task's container → the task, deleted.
func (f *Front) handleTaskDelete(c echo.Context) error {
	if err := f.tasksOff(c); err != nil {
		return err
	}
	if len(c.QueryParams()) > 0 {
		return gateway.Invalid("DELETE /v1/tasks/{id} takes no parameters")
	}
	t, err := f.core.DeleteTask(c.Request().Context(), caller(c, "task_delete"), c.Param("id"))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, t)
}
