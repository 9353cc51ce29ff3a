package audit

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// IndexFile is the search index beside the chain: record_rules, records_fts and
// record_fields for the records up to its watermark. It is derived from audit.db,
// written by its own goroutine and connection so that indexing runs beside the appends
// (SQLite lets one writer at a time into a database file), and rebuilt when it is
// missing or does not match the chain. Losing it loses nothing: queries match the
// records it does not hold by scanning them.
const IndexFile = "audit-index.db"

// The indexer works in transactions of indexChunk records: as soon as a whole chunk
// waits, and for the rest once no append came for indexIdle.
const (
	indexChunk = 2048
	indexIdle  = 250 * time.Millisecond
)

// searchConnector opens connections to the search index with the chain attached
// read-only as "chain"; with memory set, to an empty in-memory index (a read-only store
// whose index file is missing or stale), so that queries scan the chain.
type searchConnector struct {
	driver.Connector
	chainURI string
	memory   bool
}

func (c searchConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, errors.New("open search index: the sqlite connection cannot execute statements")
	}
	if c.memory {
		for _, q := range indexSchema {
			if _, err := ex.ExecContext(ctx, q, nil); err != nil {
				conn.Close()
				return nil, fmt.Errorf("create in-memory search index: %w", err)
			}
		}
	}
	if _, err := ex.ExecContext(ctx, `ATTACH DATABASE ? AS chain`, []driver.NamedValue{{Ordinal: 1, Value: c.chainURI}}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open search index: attach the chain: %w", err)
	}
	return conn, nil
}

// fileURI is a SQLite URI for path with the given query.
func fileURI(path string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// openIndex opens (read-write: creates, checks, rebuilds) the search index into s.sdb.
func (s *Store) openIndex(ctx context.Context) error {
	chainURI := fileURI(filepath.Join(s.dir, DBFile), url.Values{"mode": {"ro"}})
	path := filepath.Join(s.dir, IndexFile)
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "mmap_size(1073741824)")
	if s.opts.ReadOnly {
		q.Set("mode", "ro")
		if _, err := os.Stat(path); err == nil {
			if db, err := openSearch(fileURI(path, q), chainURI, false); err == nil {
				if err := checkIndex(ctx, db, false); err == nil {
					s.sdb = db
					return nil
				}
				db.Close()
			}
		}
		// No usable index: an empty one in memory; queries scan the chain.
		db, err := openSearch("file::memory:", chainURI, true)
		if err != nil {
			return err
		}
		s.sdb = db
		return nil
	}

	// Derived data: WAL keeps it consistent through crashes, and a commit lost with
	// the machine is redone from the watermark, so no fsync per commit.
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "temp_store(MEMORY)")
	for attempt := 0; ; attempt++ {
		if err := createFile(path); err != nil {
			return err
		}
		db, err := openSearch(fileURI(path, q), chainURI, false)
		if err != nil {
			return err
		}
		err = checkIndex(ctx, db, true)
		if err == nil {
			s.sdb = db
			return nil
		}
		db.Close()
		if attempt > 0 || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("open search index %s: %w", path, err)
		}
		// Not an index of ours, damaged, or of another chain: start it afresh.
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove unusable search index: %w", err)
			}
		}
	}
}

func openSearch(dsn, chainURI string, memory bool) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("open search index: %w", err)
	}
	db := sql.OpenDB(searchConnector{Connector: c, chainURI: chainURI, memory: memory})
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return db, nil
}

// createFile creates path with mode 0600 if it does not exist.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = f.Close()
	} else if errors.Is(err, fs.ErrExist) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// checkIndex checks that db is a search index of this chain: an empty file gets the
// schema (writable only), and an index whose watermark record is not in the chain any
// more, or has another hash, is emptied (writable) or refused.
func checkIndex(ctx context.Context, db *sql.DB, writable bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var app, tables int64
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema)`).Scan(&app, &tables); err != nil {
		return err
	}
	if app == 0 && tables == 0 {
		if !writable {
			return errors.New("empty search index")
		}
		// Several processes may open a new data directory at once: the one that takes
		// the write lock first creates the index, the others find it made.
		created, err := createIndex(ctx, conn)
		if err != nil || created {
			return err
		}
		if err := conn.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id)`).Scan(&app); err != nil {
			return err
		}
	}
	if app != indexApplicationID {
		return fmt.Errorf("not a search index (application_id %#x)", app)
	}
	if err := syncFields(ctx, conn, writable); err != nil {
		return err
	}
	var seq int64
	var hash, chainHash string
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT value FROM meta WHERE key = 'index_seq'), (SELECT value FROM meta WHERE key = 'index_hash')`).Scan(&seq, &hash); err != nil {
		return err
	}
	if seq == 0 {
		return nil
	}
	err = conn.QueryRowContext(ctx, `SELECT hash FROM chain.records WHERE seq = ?`, seq).Scan(&chainHash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if chainHash == hash {
		return nil
	}
	if !writable {
		return errors.New("the search index is not of this chain")
	}
	return execTx(ctx, conn,
		`DELETE FROM record_rules`,
		`DELETE FROM record_fields`,
		`INSERT INTO records_fts (records_fts) VALUES ('delete-all')`,
		`UPDATE meta SET value = 0 WHERE key IN ('index_seq', 'fields_seq')`,
		`UPDATE meta SET value = '' WHERE key = 'index_hash'`)
}

// syncFields makes record_fields hold the fields of the records the index holds, no
// more and no fewer (see fieldsSchema): when the table is missing or meta.fields_seq is
// not index_seq, it fills the table afresh up to index_seq, in one transaction, so the
// index stays whole. A read-only open cannot, and leaves such an index unused.
func syncFields(ctx context.Context, conn *sql.Conn, writable bool) (err error) {
	synced := func() (bool, error) {
		var ok bool
		err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = 'record_fields')
			AND (SELECT value FROM meta WHERE key = 'fields_seq') IS (SELECT value FROM meta WHERE key = 'index_seq')`).Scan(&ok)
		return ok, err
	}
	if ok, err := synced(); err != nil || ok {
		return err
	}
	if !writable {
		return errors.New("the search index's record_fields is missing or behind (an older cmdgate wrote it)")
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			err = fmt.Errorf("fill record_fields of the search index: %w", err)
		}
	}()
	if ok, err := synced(); err != nil || ok { // another process did it meanwhile
		if err == nil {
			_, err = conn.ExecContext(ctx, "COMMIT")
		}
		return err
	}
	var seq int64
	if err := conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'index_seq'`).Scan(&seq); err != nil {
		return err
	}
	for _, q := range []string{fieldsSchema, `DELETE FROM record_fields`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, fieldsFrom, fieldsArgs(0, seq)...); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('fields_seq', ?)`, seq); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, indexVersion)); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// fieldsArgs are the arguments of fieldsFrom.
func fieldsArgs(from, to int64) []any {
	var args []any
	for range indexedFields {
		args = append(args, from, to)
	}
	return args
}

// createIndex creates the index's schema if the file is still empty once the write lock
// is held, and reports whether it did.
func createIndex(ctx context.Context, conn *sql.Conn) (created bool, err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var app, tables int64
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema)`).Scan(&app, &tables); err != nil {
		return false, err
	}
	if app == 0 && tables == 0 {
		for _, q := range indexSchema {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return false, err
			}
		}
		created = true
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return created, err
}

// execTx runs statements in one write transaction.
func execTx(ctx context.Context, conn *sql.Conn, stmts ...string) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// indexer is the goroutine that fills the search index. The writer kicks it after each
// commit; it indexes whole chunks at once and the rest when appends pause, serves
// flushIndex, and after the writer has exited (Close) indexes what is left and exits.
func (s *Store) indexer(ctx context.Context, conn *sql.Conn) {
	defer close(s.ixDone)
	ix := &indexWriter{conn: conn, rules: newMultiInsert(conn, `INSERT OR IGNORE INTO record_rules (rule, seq) VALUES `, 2)}
	defer ix.close()
	idle := time.NewTimer(indexIdle)
	idle.Stop()
	defer idle.Stop()
	pending := true // an earlier run may have left a backlog
	for {
		var idleC <-chan time.Time
		if pending && !s.indexPaused.Load() {
			idle.Reset(indexIdle)
			idleC = idle.C
		}
		select {
		case <-s.ixKick:
			// s.unindexed counts this process's commits, so that a kick costs no query;
			// index() reads the real watermark.
			pending = true
			for !s.indexPaused.Load() && s.unindexed.Load() >= indexChunk {
				n, err := ix.index(ctx)
				if err != nil || n == 0 {
					break // retried on the next kick or when idle
				}
				s.unindexed.Add(-n)
			}
		case <-idleC:
			if ix.indexAll(ctx) == nil {
				pending = false
				s.unindexed.Store(0)
			}
		case reply := <-s.ixFlush:
			err := ix.indexAll(ctx)
			if err == nil {
				s.unindexed.Store(0)
			}
			reply <- err
		case <-s.done:
			s.ixErr = ix.indexAll(ctx)
			return
		}
	}
}

// kickIndexer tells the indexer that records were committed, without waiting.
func (s *Store) kickIndexer() {
	select {
	case s.ixKick <- struct{}{}:
	default:
	}
}

// flushIndex returns once every record committed before the call is in the search
// index. Queries do not need it (they scan what is not indexed); tests, benchmarks and
// tools use it to reach a known state.
func (s *Store) flushIndex(ctx context.Context) error {
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	reply := make(chan error, 1)
	select {
	case s.ixFlush <- reply:
	case <-s.ixDone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// indexWriter is the indexer's connection and statements.
type indexWriter struct {
	conn  *sql.Conn
	rules *multiInsert
}

func (ix *indexWriter) close() error {
	var errs []error
	for _, st := range ix.rules.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, ix.conn.Close())...)
}

func (ix *indexWriter) indexAll(ctx context.Context) error {
	for {
		n, err := ix.index(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
}

// index adds the next indexChunk records after the watermark to record_rules,
// records_fts and record_fields and moves the watermarks, in one transaction. It
// returns how many records it indexed.
func (ix *indexWriter) index(ctx context.Context) (n int64, err error) {
	c := ix.conn
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return 0, fmt.Errorf("index audit records: %w", err)
	}
	defer func() {
		if err != nil {
			c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			err = fmt.Errorf("index audit records: %w", err)
		}
	}()
	var from, last int64
	if err := c.QueryRowContext(ctx, `SELECT (SELECT value FROM meta WHERE key = 'index_seq'), coalesce((SELECT max(seq) FROM chain.records), 0)`).Scan(&from, &last); err != nil {
		return 0, err
	}
	to := min(last, from+indexChunk)
	if to <= from {
		_, err := c.ExecContext(ctx, "COMMIT")
		return 0, err
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO records_fts (rowid, body)
		SELECT seq, body FROM chain.records WHERE seq > ? AND seq <= ? AND body != ''`, from, to); err != nil {
		return 0, err
	}
	if _, err := c.ExecContext(ctx, fieldsFrom, fieldsArgs(from, to)...); err != nil {
		return 0, err
	}
	rows, err := c.QueryContext(ctx, `SELECT seq, rules FROM chain.records WHERE seq > ? AND seq <= ? AND rules != ''`, from, to)
	if err != nil {
		return 0, err
	}
	type ruleRow struct {
		rule string
		seq  int64
	}
	var rr []ruleRow
	for rows.Next() {
		var seq int64
		var rules string
		if err := rows.Scan(&seq, &rules); err != nil {
			rows.Close()
			return 0, err
		}
		for _, r := range strings.Fields(rules) {
			rr = append(rr, ruleRow{r, seq})
		}
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	// In key order, each b-tree leaf is visited once.
	slices.SortFunc(rr, func(a, b ruleRow) int {
		if c := strings.Compare(a.rule, b.rule); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	args := make([]any, 0, 2*len(rr))
	for _, r := range rr {
		args = append(args, r.rule, r.seq)
	}
	if err := ix.rules.exec(ctx, args); err != nil {
		return 0, err
	}
	var hash string
	if err := c.QueryRowContext(ctx, `SELECT hash FROM chain.records WHERE seq <= ? ORDER BY seq DESC LIMIT 1`, to).Scan(&hash); err != nil {
		return 0, err
	}
	if _, err := c.ExecContext(ctx, `UPDATE meta SET value = CASE key WHEN 'index_seq' THEN ? WHEN 'fields_seq' THEN ? ELSE ? END`, to, to, hash); err != nil {
		return 0, err
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	return to - from, nil
}
