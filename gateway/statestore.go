package gateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// StateFile is the state store in the data directory: approvals, grants and tasks,
// which must survive a restart.
const StateFile = "state.db"

// stateStore keeps approvals in SQLite, each as its JSON document beside the columns
// the queries select on. Every write is durable (synchronous FULL) before it returns.
type stateStore struct {
	db *sql.DB
}

const stateSchema = `
CREATE TABLE IF NOT EXISTS approvals (
	id         TEXT PRIMARY KEY,
	state      TEXT NOT NULL,
	principal  TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	doc        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_state ON approvals(state, expires_at);
CREATE INDEX IF NOT EXISTS approvals_principal ON approvals(principal, id);
CREATE TABLE IF NOT EXISTS grants (
	id         TEXT PRIMARY KEY,
	principal  TEXT NOT NULL,
	expires_at INTEGER NOT NULL,
	max_uses   INTEGER NOT NULL,
	uses       INTEGER NOT NULL DEFAULT 0,
	revoked    INTEGER NOT NULL DEFAULT 0,
	doc        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS grants_live ON grants(revoked, expires_at);
CREATE TABLE IF NOT EXISTS tasks (
	id         TEXT PRIMARY KEY,
	principal  TEXT NOT NULL,
	state      TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	doc        BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_principal ON tasks(principal, created_at);
CREATE INDEX IF NOT EXISTS tasks_state ON tasks(state);
`

func openStateStore(ctx context.Context, dir string) (*stateStore, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	u := url.URL{Scheme: "file", Path: filepath.Join(dir, StateFile), RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("state store: %w", err)
	}
	db.SetMaxOpenConns(1) // one writer; reads are few and short
	if _, err := db.ExecContext(ctx, stateSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("state store %s: %w", filepath.Join(dir, StateFile), err)
	}
	return &stateStore{db: db}, nil
}

func (s *stateStore) close() error { return s.db.Close() }

// insertApproval stores a new approval.
func (s *stateStore) insertApproval(ctx context.Context, a *Approval) error {
	doc, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO approvals (id, state, principal, created_at, expires_at, doc) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, a.State, a.Principal.Name, a.CreatedAt.UnixNano(), a.ExpiresAt.UnixNano(), doc)
	return err
}

// updateApproval stores a's new state when the stored one is still from: false when
// it is not (another decision came first).
func (s *stateStore) updateApproval(ctx context.Context, a *Approval, from string) (bool, error) {
	doc, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE approvals SET state = ?, doc = ? WHERE id = ? AND state = ?`, a.State, doc, a.ID, from)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

var errNoApproval = errors.New("no such approval")

func (s *stateStore) approval(ctx context.Context, id string) (*Approval, error) {
	var doc []byte
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM approvals WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoApproval
	}
	if err != nil {
		return nil, err
	}
	var a Approval
	if err := json.Unmarshal(doc, &a); err != nil {
		return nil, fmt.Errorf("approval %s: %w", id, err)
	}
	return &a, nil
}

// approvals lists approvals newest first: of one principal unless principal is "",
// in one state unless state is "", at most limit.
func (s *stateStore) approvals(ctx context.Context, principal, state string, limit int) ([]*Approval, error) {
	out, err := s.selectApprovals(ctx, `SELECT doc FROM approvals
		WHERE (? = '' OR principal = ?) AND (? = '' OR state = ?) ORDER BY id DESC LIMIT ?`,
		principal, principal, state, state, limit)
	if out == nil {
		out = []*Approval{}
	}
	return out, err
}

// dueApprovals are the pending approvals whose expiry passed at now.
func (s *stateStore) dueApprovals(ctx context.Context, now time.Time) ([]*Approval, error) {
	return s.selectApprovals(ctx, `SELECT doc FROM approvals WHERE state = ? AND expires_at <= ?`, ApprovalPending, now.UnixNano())
}

// approvalsIn are the approvals in a state.
func (s *stateStore) approvalsIn(ctx context.Context, state string) ([]*Approval, error) {
	return s.selectApprovals(ctx, `SELECT doc FROM approvals WHERE state = ?`, state)
}

func (s *stateStore) selectApprovals(ctx context.Context, query string, args ...any) ([]*Approval, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Approval
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		a := new(Approval)
		if err := json.Unmarshal(doc, a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// insertGrant stores a new grant.
func (s *stateStore) insertGrant(ctx context.Context, g *Grant) error {
	doc, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO grants (id, principal, expires_at, max_uses, doc) VALUES (?, ?, ?, ?, ?)`,
		g.ID, g.Principal, g.ExpiresAt.UnixNano(), g.MaxUses, doc)
	return err
}

// useGrant counts one use of a grant when it is still live at now: false when it is
// not (revoked, expired, or out of uses).
func (s *stateStore) useGrant(ctx context.Context, id string, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE grants SET uses = uses + 1
		WHERE id = ? AND revoked = 0 AND expires_at > ? AND (max_uses = 0 OR uses < max_uses)`, id, now.UnixNano())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// revokeGrant marks a live grant revoked, storing g (with its revocation) as its
// document: false when it was revoked already.
func (s *stateStore) revokeGrant(ctx context.Context, g *Grant) (bool, error) {
	doc, err := json.Marshal(g)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE grants SET revoked = 1, doc = ? WHERE id = ? AND revoked = 0`, doc, g.ID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// grant reads one grant.
func (s *stateStore) grant(ctx context.Context, id string) (*Grant, error) {
	gs, err := s.selectGrants(ctx, `SELECT doc, uses FROM grants WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, errNoGrant
	}
	return gs[0], nil
}

var errNoGrant = errors.New("no such grant")

// liveGrants are the grants neither revoked, expired at now, nor out of uses.
func (s *stateStore) liveGrants(ctx context.Context, now time.Time) ([]*Grant, error) {
	return s.selectGrants(ctx, `SELECT doc, uses FROM grants
		WHERE revoked = 0 AND expires_at > ? AND (max_uses = 0 OR uses < max_uses) ORDER BY id`, now.UnixNano())
}

func (s *stateStore) selectGrants(ctx context.Context, query string, args ...any) ([]*Grant, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Grant{}
	for rows.Next() {
		var doc []byte
		var uses int
		if err := rows.Scan(&doc, &uses); err != nil {
			return nil, err
		}
		g := new(Grant)
		if err := json.Unmarshal(doc, g); err != nil {
			return nil, err
		}
		g.Uses = uses
		out = append(out, g)
	}
	return out, rows.Err()
}

// dataVersion is SQLite's data_version of the store's connection: it changes when
// another connection (another process on the same data directory) commits.
func (s *stateStore) dataVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, err
}
