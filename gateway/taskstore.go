package gateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The tasks of the state store: each task's document beside the columns the queries
// select on. Every write is durable before it returns.

var errNoTask = errors.New("no such task")

// putTask stores a task's document, new or changed.
func (s *stateStore) putTask(ctx context.Context, t *Task) error {
	doc, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO tasks (id, principal, state, created_at, doc) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET state = excluded.state, doc = excluded.doc`,
		t.ID, t.Principal.Name, t.State, t.CreatedAt.UnixNano(), doc)
	return err
}

func (s *stateStore) task(ctx context.Context, id string) (*Task, error) {
	var doc []byte
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM tasks WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoTask
	}
	if err != nil {
		return nil, err
	}
	t := new(Task)
	if err := json.Unmarshal(doc, t); err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

// tasks lists tasks newest first: of one principal unless principal is "", in one of
// states unless states is empty, at most limit.
func (s *stateStore) tasks(ctx context.Context, principal string, states []string, limit int) ([]*Task, error) {
	query := `SELECT doc FROM tasks WHERE (? = '' OR principal = ?)`
	args := []any{principal, principal}
	if len(states) > 0 {
		query += ` AND state IN (?` + strings.Repeat(", ?", len(states)-1) + `)`
		for _, st := range states {
			args = append(args, st)
		}
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Task{}
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		t := new(Task)
		if err := json.Unmarshal(doc, t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
