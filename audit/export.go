package audit

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
)

// ExportLine is one line of Export: a record under the field names of OPA's decision
// log where they fit (decision_id, path, input, result, timestamp, bundles, labels),
// plus cmdgate's own fields. Absent fields are empty in the record (doc.go lists how
// to rebuild the canonical encoding from a line).
type ExportLine struct {
	// DecisionID is the decision this line is about: the record's own id for a
	// decision, the decision it refers to for an execution or approval.
	DecisionID string `json:"decision_id,omitempty"`
	ID         string `json:"id"`
	Seq        int64  `json:"seq"`
	Kind       Kind   `json:"kind"`
	// Timestamp is the record time, RFC 3339 with nine fractional digits, UTC.
	Timestamp string `json:"timestamp"`
	// Path is the policy entry point of a decision: "cmdgate/decision".
	Path      string                  `json:"path,omitempty"`
	Principal Principal               `json:"principal"`
	RequestID string                  `json:"request_id,omitempty"`
	Input     json.RawMessage         `json:"input,omitempty"`
	Result    *ExportResult           `json:"result,omitempty"`
	Bundles   map[string]ExportBundle `json:"bundles,omitempty"`
	Execution *Execution              `json:"execution,omitempty"`
	Detail    json.RawMessage         `json:"detail,omitempty"`
	Labels    map[string]string       `json:"labels"`
	PrevHash  string                  `json:"prev_hash"`
	Hash      string                  `json:"hash"`
}

// ExportResult is the policy result of a line: the decision and its reasons.
type ExportResult struct {
	Action  string   `json:"action"`
	Reasons []Reason `json:"reasons"`
}

// ExportBundle names the policy bundle revision, as OPA's bundles field does.
type ExportBundle struct {
	Revision string `json:"revision"`
}

// BundleName is the key of the policy bundle in ExportLine.Bundles.
const BundleName = "cmdgate"

// NewExportLine maps a record to its export form.
func NewExportLine(r Record) ExportLine {
	l := ExportLine{
		ID: r.ID, Seq: r.Seq, Kind: r.Kind, Timestamp: formatTime(r.Time.UnixNano()),
		Principal: r.Principal, RequestID: r.RequestID, Input: r.Input, Execution: r.Execution,
		Detail: r.Detail, Labels: map[string]string{"app": "cmdgate"}, PrevHash: r.PrevHash, Hash: r.Hash,
		DecisionID: r.DecisionID,
	}
	if r.Kind == KindDecision {
		l.DecisionID = r.ID
		l.Path = "cmdgate/decision"
	}
	if r.Decision != "" || len(r.Reasons) > 0 {
		l.Result = &ExportResult{Action: r.Decision, Reasons: r.Reasons}
		if l.Result.Reasons == nil {
			l.Result.Reasons = []Reason{}
		}
	}
	if r.Revision != "" {
		l.Bundles = map[string]ExportBundle{BundleName: {Revision: r.Revision}}
	}
	return l
}

// Export writes the matching records to w as JSON lines (one ExportLine per line),
// oldest first, streaming from one consistent snapshot. q.Limit 0 exports every
// match; q.Cursor is not supported (bound exports with Since and Until). It returns the
// number of lines written.
func (s *Store) Export(ctx context.Context, w io.Writer, q Query) (int64, error) {
	if q.Cursor != "" {
		return 0, fmt.Errorf("%w: export does not take a cursor: bound it with since and until", ErrInvalidQuery)
	}
	if q.Limit < 0 {
		return 0, fmt.Errorf("%w: negative limit", ErrInvalidQuery)
	}
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	tx, err := s.sdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("export audit log: %w", err)
	}
	defer tx.Rollback()
	p, err := s.plan(ctx, tx, q)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var n int64
	err = s.each(ctx, tx, p, false, q.Limit, func(r Record) (bool, error) {
		if err := enc.Encode(NewExportLine(r)); err != nil {
			return false, fmt.Errorf("export audit log: %w", err)
		}
		n++
		return true, nil
	})
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("export audit log: %w", ferr)
	}
	return n, err
}
