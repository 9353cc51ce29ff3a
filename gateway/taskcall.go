package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// What the fronts use of tasks besides CreateTask, Task, Tasks and DeleteTask: the
// strict reading of a task request (POST /v1/tasks, MCP task_create) and the wait for a
// task to be prepared (GET /v1/tasks/{id}?wait_ms=, MCP task_show).

// taskRequestFields and taskLimitsFields are the members of a task request and of its
// limits, with their JSON types, for the errors that name a wrong one.
var (
	taskRequestFields = map[string]string{
		"repo_url":          "a string",
		"ref":               "a string",
		"pull_request":      "an integer",
		"target_branch":     "a string",
		"image":             "a string",
		"limits":            "an object",
		"network":           "a string",
		"auto_install_deps": "a boolean",
		"clone_depth":       "an integer",
		"wait_ms":           "an integer",
	}
	taskLimitsFields = map[string]string{
		"cpus":            "a number",
		"memory":          "a number of bytes or a size such as \"4g\"",
		"pids":            "an integer",
		"disk":            "a number of bytes or a size such as \"10g\"",
		"timeout_seconds": "an integer",
	}
)

// DecodeTaskRequest reads the JSON form of a TaskRequest (the body of POST /v1/tasks,
// the arguments of MCP task_create) as strictly as DecodeRequest reads an exec body:
// one JSON object and nothing after it, valid UTF-8, no unknown or repeated members,
// every member of its exact type (no null; integers without fraction or exponent), no
// NUL character or unpaired surrogate escape in any string. Every error is
// INVALID_ARGUMENT naming the member. What the values mean (the URL, the refs, the
// limits' bounds) is CreateTask's to check.
func DecodeTaskRequest(raw []byte) (*TaskRequest, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("the request body is empty: send a JSON object such as {\"repo_url\": \"https://github.com/OWNER/REPO\"}")
	}
	if !utf8.Valid(raw) {
		return nil, invalid("the request body is not valid UTF-8")
	}
	members, err := objectMembers(raw, taskRequestFields)
	if err != nil {
		return nil, err
	}
	r := &TaskRequest{}
	for _, m := range members {
		switch m.name {
		case "repo_url":
			r.RepoURL, err = taskString(m.name, m.value)
		case "ref":
			r.Ref, err = taskString(m.name, m.value)
		case "target_branch":
			r.TargetBranch, err = taskString(m.name, m.value)
		case "image":
			r.Image, err = taskString(m.name, m.value)
		case "network":
			r.Network, err = taskString(m.name, m.value)
		case "pull_request":
			var n int64
			if n, err = taskInt(m.name, m.value); err == nil {
				if n <= 0 || n > 1<<31 {
					err = invalid("pull_request must be a positive number")
				}
				r.PullRequest = int(n)
			}
		case "clone_depth":
			var n int64
			if n, err = taskInt(m.name, m.value); err == nil {
				if n < 0 || n > 1<<31 {
					err = invalid("clone_depth must be 0 (the whole history) or more")
				}
				d := int(n)
				r.CloneDepth = &d
			}
		case "wait_ms":
			if r.WaitMS, err = taskInt(m.name, m.value); err == nil && r.WaitMS < 0 {
				err = invalid("wait_ms must not be negative")
			}
		case "auto_install_deps":
			var b bool
			if b, err = taskBool(m.name, m.value); err == nil {
				r.AutoInstall = &b
			}
		case "limits":
			r.Limits, err = decodeTaskLimits(m.value)
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// decodeTaskLimits reads the limits member: an object of the known members.
func decodeTaskLimits(v json.RawMessage) (*TaskLimitsInput, error) {
	if len(v) == 0 || v[0] != '{' {
		return nil, invalid("field limits must be an object, got %s", rawKind(v))
	}
	members, err := objectMembers(v, taskLimitsFields)
	if err != nil {
		return nil, Invalid("field limits: %s", AsError(err).Message)
	}
	l := &TaskLimitsInput{}
	for _, m := range members {
		name := "limits." + m.name
		switch m.name {
		case "cpus":
			if len(m.value) == 0 || (m.value[0] != '-' && (m.value[0] < '0' || m.value[0] > '9')) {
				return nil, invalid("field %s must be a number, got %s", name, rawKind(m.value))
			}
			if err := json.Unmarshal(m.value, &l.CPUs); err != nil {
				return nil, invalid("field %s is out of range", name)
			}
		case "pids":
			l.Pids, err = taskInt(name, m.value)
		case "timeout_seconds":
			l.TimeoutSeconds, err = taskInt(name, m.value)
		case "memory", "disk":
			var size json.RawMessage
			switch {
			case len(m.value) > 0 && m.value[0] == '"':
				if _, err = decodeString(name, m.value); err == nil {
					size = m.value
				}
			default:
				if _, err = taskInt(name, m.value); err != nil {
					err = invalid("field %s must be %s, got %s", name, taskLimitsFields[m.name], rawKind(m.value))
				}
				size = m.value
			}
			if m.name == "memory" {
				l.Memory = size
			} else {
				l.Disk = size
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// taskString, taskInt and taskBool read a member of a task request of that JSON type,
// naming the member and the type it has when it is another.
func taskString(name string, v json.RawMessage) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", invalid("field %s must be a string, got %s", name, rawKind(v))
	}
	return decodeString(name, v)
}

func taskInt(name string, v json.RawMessage) (int64, error) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || bytes.ContainsAny(v, ".eE") {
		return 0, invalid("field %s must be an integer, got %s", name, rawKind(v))
	}
	return jsonInt(name, v)
}

func taskBool(name string, v json.RawMessage) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid("field %s must be a boolean, got %s", name, rawKind(v))
}

// WaitTask is Task, waiting up to wait (at most MaxTaskWait) while the task is created
// or initializing: the task as it is once prepared (ready, or failed with the reason),
// or as it is when the wait ended. A wait of 0 or less does not wait.
func (s *Server) WaitTask(ctx context.Context, caller Caller, id string, wait time.Duration) (*Task, error) {
	if s.tasks == nil || wait <= 0 {
		return s.Task(ctx, caller, id)
	}
	return s.waitTask(ctx, caller, id, min(wait, MaxTaskWait))
}
