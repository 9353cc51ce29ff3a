package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cmdgate/cmdgate/jobs"
)

// One job call, whatever front it came through (HTTP, MCP, the local CLI), and the one
// JSON object it answers: seed 003's schema, {"schema_version":1,"ok":...,"type":...}
// then the call's members, or "error" {code, message, ...}. Every front sends these
// bytes as they are, so that the API, the MCP tools and `cmdgate job` agree byte for
// byte.

// Job call limits and defaults.
const (
	DefaultSnapshotAfter = 10 * time.Second // also the most a run waits
	DefaultTailBytes     = 64 << 10
	DefaultTailLines     = 50
	MaxTailBytes         = 16 << 20
	DefaultJobWait       = 30 * time.Second
	MaxJobWait           = 5 * time.Minute
	jobSchemaVersion     = 1
)

// Job call types (the "type" member).
const (
	JobRun    = "run"
	JobStatus = "status"
	JobTailOp = "tail"
	JobWait   = "wait"
	JobList   = "list"
	JobKill   = "kill"
	JobGC     = "gc"
)

// JobCall is one job operation and its parameters.
type JobCall struct {
	Op string
	ID string // status, tail, wait, kill
	// Run is the job to start (run), with SnapshotAfter the longest wait for its end
	// before answering (capped at DefaultSnapshotAfter).
	Run           *JobRequest
	SnapshotAfter time.Duration
	MaxBytes      int64         // tail, run: bytes of each log (default 64 KiB)
	Lines         int           // tail: lines of each log (default 50; 0 with LinesSet: no limit)
	Timeout       time.Duration // wait (default 30 s, at most 5 min)
	Limit         int           // list (0: no limit)
	State         string        // list
	Signal        string        // kill
	OlderThan     time.Duration // gc (0: the retention)
}

type snapshotJSON struct {
	Encoding            string `json:"encoding"`
	StdoutTail          string `json:"stdout_tail"`
	StderrTail          string `json:"stderr_tail"`
	StdoutObservedBytes int64  `json:"stdout_observed_bytes"`
	StderrObservedBytes int64  `json:"stderr_observed_bytes"`
	StdoutIncludedBytes int64  `json:"stdout_included_bytes"`
	StderrIncludedBytes int64  `json:"stderr_included_bytes"`
}

func snapshotOf(t *JobTail) snapshotJSON {
	return snapshotJSON{Encoding: t.Stdout.Encoding, StdoutTail: t.Stdout.Text, StderrTail: t.Stderr.Text,
		StdoutObservedBytes: t.Stdout.ObservedBytes, StderrObservedBytes: t.Stderr.ObservedBytes,
		StdoutIncludedBytes: t.Stdout.IncludedBytes, StderrIncludedBytes: t.Stderr.IncludedBytes}
}

// DoJob carries out one job call and answers its JSON object and HTTP status.
func (s *Server) DoJob(ctx context.Context, caller Caller, call JobCall) ([]byte, int) {
	payload, err := s.doJob(ctx, caller, call)
	if err != nil {
		je := AsJobError(err)
		return JobReplyError(call.Op, je), JobHTTPStatus(je.Code)
	}
	return JobReply(call.Op, payload), 200
}

func (s *Server) doJob(ctx context.Context, caller Caller, call JobCall) (any, error) {
	maxBytes := call.MaxBytes
	switch {
	case maxBytes == 0:
		maxBytes = DefaultTailBytes
	case maxBytes < 0 || maxBytes > MaxTailBytes:
		return nil, &JobError{Code: jobs.CodeInvalidInput, Message: fmt.Sprintf("max-bytes must be between 1 and %d", MaxTailBytes)}
	}
	switch call.Op {
	case JobRun:
		if call.Run == nil {
			return nil, &JobError{Code: jobs.CodeInvalidInput, Message: "nothing to run"}
		}
		if call.SnapshotAfter < 0 {
			return nil, &JobError{Code: jobs.CodeInvalidInput, Message: "snapshot-after must not be negative"}
		}
		o, j, err := s.StartJob(ctx, caller, call.Run)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		t, err := s.Snapshot(ctx, caller, j, min(call.SnapshotAfter, DefaultSnapshotAfter), maxBytes)
		if err != nil {
			return nil, err
		}
		if t.Job.State == jobs.Failed { // its command could not be started (not found, say)
			return nil, &JobError{Code: JobCodeLaunchFailed, JobID: t.Job.ID, Decision: o.Decision, DecisionID: t.Job.DecisionID,
				Message: "the job could not run its command: " + t.Job.Reason}
		}
		return struct {
			JobID      string       `json:"job_id"`
			State      string       `json:"state"`
			Decision   string       `json:"decision"`
			DecisionID string       `json:"decision_id"`
			Revision   string       `json:"revision,omitempty"`
			Reasons    []Reason     `json:"reasons"`
			WaitedMS   int64        `json:"waited_ms"`
			Job        *jobs.Job    `json:"job"`
			Snapshot   snapshotJSON `json:"snapshot"`
		}{t.Job.ID, t.Job.State, o.Decision, t.Job.DecisionID, o.Revision, nonNil(o.Reasons), time.Since(start).Milliseconds(), t.Job, snapshotOf(t)}, nil
	case JobStatus:
		return s.Job(ctx, caller, call.ID)
	case JobTailOp:
		lines := call.Lines
		if lines < 0 {
			return nil, &JobError{Code: jobs.CodeInvalidInput, Message: "lines must not be negative"}
		}
		t, err := s.TailJob(ctx, caller, call.ID, maxBytes, lines)
		if err != nil {
			return nil, err
		}
		return struct {
			JobID string `json:"job_id"`
			State string `json:"state"`
			snapshotJSON
		}{t.Job.ID, t.Job.State, snapshotOf(t)}, nil
	case JobWait:
		timeout := call.Timeout
		switch {
		case timeout == 0:
			timeout = DefaultJobWait
		case timeout < 0 || timeout > MaxJobWait:
			return nil, &JobError{Code: jobs.CodeInvalidInput, Message: fmt.Sprintf("timeout must be between 1 and %d ms", MaxJobWait.Milliseconds())}
		}
		start := time.Now()
		j, done, err := s.WaitJob(ctx, caller, call.ID, timeout)
		if err != nil {
			return nil, err
		}
		return struct {
			*jobs.Job
			Finished bool  `json:"finished"`
			TimedOut bool  `json:"timed_out"`
			WaitedMS int64 `json:"waited_ms"`
		}{j, done, !done, time.Since(start).Milliseconds()}, nil
	case JobList:
		return s.Jobs(ctx, caller, call.Limit, call.State)
	case JobKill:
		j, sig, err := s.KillJob(ctx, caller, call.ID, call.Signal)
		if err != nil {
			return nil, err
		}
		return struct {
			*jobs.Job
			SentSignal string `json:"sent_signal"`
		}{j, sig}, nil
	case JobGC:
		if call.OlderThan < 0 {
			return nil, &JobError{Code: jobs.CodeInvalidInput, Message: "older-than must not be negative"}
		}
		removed, older, err := s.GCJobs(ctx, caller, call.OlderThan)
		if err != nil {
			return nil, err
		}
		return struct {
			Root       string   `json:"root"`
			Removed    []string `json:"removed"`
			OlderThanS int64    `json:"older_than_s"`
		}{s.JobRoot(), removed, int64(older.Seconds())}, nil
	}
	return nil, &JobError{Code: jobs.CodeInvalidInput, Message: fmt.Sprintf("unknown job operation %q", call.Op)}
}

func nonNil(r []Reason) []Reason {
	if r == nil {
		return []Reason{}
	}
	return r
}

// JobReply is the JSON object of a call that succeeded: the envelope, then payload's
// members (payload encodes as an object). Its type is "job." and the operation
// (job.run, job.status, ...), as cmdgate's other commands name theirs.
func JobReply(op string, payload any) []byte {
	typ := "job." + op
	head := fmt.Sprintf(`{"schema_version":%d,"ok":true,"type":%q`, jobSchemaVersion, typ)
	b, err := json.Marshal(payload)
	if err != nil {
		return JobReplyError(op, &JobError{Code: JobCodeInternal, Message: "cannot encode the answer: " + err.Error()})
	}
	if len(b) <= 2 || b[0] != '{' {
		return []byte(head + "}")
	}
	return append([]byte(head+","), b[1:]...)
}

// JobReplyError is the JSON object of a call that failed.
func JobReplyError(op string, e *JobError) []byte {
	b, _ := json.Marshal(struct {
		SchemaVersion int       `json:"schema_version"`
		OK            bool      `json:"ok"`
		Type          string    `json:"type"`
		Error         *JobError `json:"error"`
	}{jobSchemaVersion, false, "job." + op, e})
	return b
}

// jobRunFields are the members of a job request (POST /v1/jobs, MCP job_run).
var jobRunFields = map[string]string{
	"command":           "a string",
	"argv":              "an array of strings",
	"cwd":               "a string",
	"shell_mode":        "a string",
	"task":              "a string",
	"wait_ms":           "an integer",
	"timeout_ms":        "an integer",
	"snapshot_after_ms": "an integer",
	"max_bytes":         "an integer",
}

// DecodeJobRun reads the JSON body of a run call strictly (as DecodeRequest reads an
// exec body): command or argv, cwd, shell_mode, task, wait_ms (for an approval),
// timeout_ms (the job's maximum run time), snapshot_after_ms and max_bytes.
func (s *Server) DecodeJobRun(raw []byte) (JobCall, error) {
	call := JobCall{Op: JobRun, SnapshotAfter: DefaultSnapshotAfter}
	var maxRun time.Duration
	r, err := decodeRequest(raw, s.opts.Executor, jobRunFields, func(m member) (bool, error) {
		switch m.name {
		case "timeout_ms", "snapshot_after_ms", "max_bytes":
		default:
			return false, nil
		}
		n, err := jsonInt(m.name, m.value)
		if err != nil {
			return true, err
		}
		if n < 0 {
			return true, invalid("%s must not be negative", m.name)
		}
		switch m.name {
		case "timeout_ms":
			if n == 0 {
				return true, invalid("timeout_ms must be 1 or more (leave it out for no limit)")
			}
			maxRun = time.Duration(min(n, noRunLimit.Milliseconds())) * time.Millisecond
		case "snapshot_after_ms":
			call.SnapshotAfter = time.Duration(min(n, DefaultSnapshotAfter.Milliseconds())) * time.Millisecond
		case "max_bytes":
			if n == 0 || n > MaxTailBytes {
				return true, invalid("max_bytes must be between 1 and %d", MaxTailBytes)
			}
			call.MaxBytes = n
		}
		return true, nil
	})
	if err != nil {
		return call, err
	}
	call.Run = &JobRequest{Request: *r, MaxRunTime: maxRun}
	return call, nil
}

// noRunLimit is a job's timeout when it has no maximum run time, and the most one may
// ask.
const noRunLimit = 10 * 365 * 24 * time.Hour
