package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Kind says what a record is about.
type Kind string

// The record kinds.
const (
	// KindDecision is the policy decision for one request. The gateway appends it, and
	// Append returns, before anything runs.
	KindDecision Kind = "decision"
	// KindExecution is the outcome of running what a decision allowed; DecisionID names
	// that decision.
	KindExecution Kind = "execution"
	// KindApproval is a human's answer to an "ask" decision; DecisionID names it.
	KindApproval Kind = "approval"
	// KindGrant is a change of a grant (an approval that covers more than one request):
	// created, used (DecisionID names the decision it allowed) or revoked.
	KindGrant Kind = "grant"
	// KindJob is an event of a background job other than its decision and its end (an
	// execution record): killed (who, which signal), not started, removed by gc.
	KindJob Kind = "job"
	// KindTask is an event of a task environment (a container of seed 001): created,
	// each preparation step (clone, checkout, dependency install), ready, failed,
	// stopped, deleted, reaped, a removal that failed.
	KindTask Kind = "task"
	// KindPolicyLoad is the loading (or failed loading) of a policy bundle.
	KindPolicyLoad Kind = "policy_load"
	// KindAuthFailure is a request refused for a missing, unknown or revoked token.
	KindAuthFailure Kind = "auth_failure"
)

// Valid reports whether k is one of the record kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindDecision, KindExecution, KindApproval, KindGrant, KindJob, KindTask, KindPolicyLoad, KindAuthFailure:
		return true
	}
	return false
}

// Principal is who made the request (the token's name and role).
type Principal struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// Reason is one reason of a policy decision (contract 2 of docs/architecture.md).
type Reason struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Command is the index in input.commands the reason is about, nil when it is about
	// the request as a whole.
	Command *int `json:"command"`
}

// Execution summarises one run. Output itself is never stored, only its size.
type Execution struct {
	ExitCode        int    `json:"exit_code"`
	DurationMS      int64  `json:"duration_ms"`
	TimedOut        bool   `json:"timed_out"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	StdoutBytes     int64  `json:"stdout_bytes"`
	StderrBytes     int64  `json:"stderr_bytes"`
	Error           string `json:"error"`
}

// Record is one event of the audit log.
//
// The caller of Store.Append fills Kind, Principal, RequestID, DecisionID, Input,
// Decision, Reasons, Revision, Execution and Detail; the store assigns Seq, ID, Time,
// PrevHash and Hash, masks secrets in Input, Detail, reason messages and Execution.Error,
// and stores Input and Detail in canonical JSON form.
type Record struct {
	// Seq is the position in the chain, from 1.
	Seq int64
	// ID is unique and sortable: 26 characters of Crockford base32 (ULID layout), strictly
	// increasing along the chain.
	ID string
	// Time is when the store appended the record, UTC, never earlier than the time of the
	// record before it.
	Time time.Time
	Kind Kind
	// Principal made the request; empty for events without one (a policy load).
	Principal Principal
	// RequestID is the gateway's id of the request this event belongs to.
	RequestID string
	// DecisionID is the ID of the decision record an execution or approval refers to;
	// empty for other kinds. (A decision record is its own decision: its JSON and export
	// forms show its ID here, and the hash covers an empty value, doc.go.)
	DecisionID string
	// Input is the policy input (contract 1 of docs/architecture.md) as JSON, secrets masked; null
	// when absent.
	Input json.RawMessage
	// Decision is the action: allow, deny or ask for a decision; approve or reject for an
	// approval; free for other kinds.
	Decision string
	Reasons  []Reason
	// Revision is the policy bundle revision the decision was taken with.
	Revision string
	// Execution is set on execution records.
	Execution *Execution
	// InputTemplate, when set instead of Input, is an input prepared once for many
	// records (Store.PrepareInput): the record's input is the template's with RequestID
	// at request.id, stored as Input. Records come back from the store without it.
	InputTemplate *InputTemplate
	// Detail carries kind-specific JSON (policy_load: bundle and error; auth_failure:
	// remote address and reason; approval: approver and comment); null when absent.
	Detail json.RawMessage
	// PrevHash is the Hash of the record before this one (64 zeros for the first).
	PrevHash string
	// Hash is SHA-256 over PrevHash and the canonical encoding of the record (doc.go).
	Hash string
}

// recordJSON is the JSON form of a Record, as `cmdgate audit query` prints it and
// `cmdgate audit append` reads it. Time uses the canonical layout.
type recordJSON struct {
	Seq        int64           `json:"seq"`
	ID         string          `json:"id"`
	Time       string          `json:"time"`
	Kind       Kind            `json:"kind"`
	Principal  Principal       `json:"principal"`
	RequestID  string          `json:"request_id"`
	DecisionID string          `json:"decision_id"`
	Input      json.RawMessage `json:"input"`
	Decision   string          `json:"decision"`
	Reasons    []Reason        `json:"reasons"`
	Revision   string          `json:"revision"`
	Execution  *Execution      `json:"execution"`
	Detail     json.RawMessage `json:"detail"`
	PrevHash   string          `json:"prev_hash"`
	Hash       string          `json:"hash"`
}

// MarshalJSON encodes the record with snake_case names and the time in the canonical
// layout (nine fractional digits, UTC), so that the output carries every value the hash
// covers.
func (r Record) MarshalJSON() ([]byte, error) {
	j := recordJSON{
		Seq: r.Seq, ID: r.ID, Kind: r.Kind, Principal: r.Principal, RequestID: r.RequestID,
		DecisionID: r.DecisionID, Input: r.Input, Decision: r.Decision, Reasons: r.Reasons,
		Revision: r.Revision, Execution: r.Execution, Detail: r.Detail, PrevHash: r.PrevHash,
		Hash: r.Hash,
	}
	if !r.Time.IsZero() {
		j.Time = formatTime(r.Time.UnixNano())
	}
	if r.Kind == KindDecision && r.DecisionID == "" {
		// Looked up by its decision id like every other record of the decision; the
		// hash covers "" here (doc.go), as in the export.
		j.DecisionID = r.ID
	}
	if j.Reasons == nil {
		j.Reasons = []Reason{}
	}
	if len(j.Input) == 0 {
		j.Input = json.RawMessage("null")
	}
	if len(j.Detail) == 0 {
		j.Detail = json.RawMessage("null")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (r *Record) UnmarshalJSON(b []byte) error {
	var j recordJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var t time.Time
	if j.Time != "" {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, j.Time); err != nil {
			return fmt.Errorf("record time: %w", err)
		}
	}
	input, err := canonicalOrNil(j.Input)
	if err != nil {
		return fmt.Errorf("record input: %w", err)
	}
	detail, err := canonicalOrNil(j.Detail)
	if err != nil {
		return fmt.Errorf("record detail: %w", err)
	}
	if j.Kind == KindDecision && j.DecisionID == j.ID {
		j.DecisionID = "" // the form MarshalJSON gives a decision record
	}
	*r = Record{
		Seq: j.Seq, ID: j.ID, Time: t, Kind: j.Kind, Principal: j.Principal,
		RequestID: j.RequestID, DecisionID: j.DecisionID, Input: input,
		Decision: j.Decision, Reasons: j.Reasons, Revision: j.Revision,
		Execution: j.Execution, Detail: detail, PrevHash: j.PrevHash,
		Hash: j.Hash,
	}
	return nil
}

// canonicalOrNil returns the canonical form of a JSON document, nil for null or absent.
func canonicalOrNil(m json.RawMessage) (json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	v, err := parseJSON(m, maxJSONDepth)
	if err != nil {
		return nil, err
	}
	if v.kind == jsonNull {
		return nil, nil
	}
	return appendCanonical(nil, &v), nil
}

// TimeLayout is the canonical time layout: RFC 3339, UTC, always nine fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format(TimeLayout)
}
