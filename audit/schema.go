package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// applicationID marks the SQLite file as a cmdgate audit store ("cmga").
const applicationID = 0x636D6761

// schemaVersion is PRAGMA user_version of the layout below.
const schemaVersion = 1

// schema is the layout of audit.db, the chain. seq is the rowid, so records are stored
// in chain order and "newest first" is a reverse rowid scan. The chain has no other
// index: every commit writes each page it touches whole to the WAL, and an index leaf
// per indexed column would nearly double what a commit of a few records writes. There
// is no index on id or time: both increase along the chain, so a binary search over seq
// finds them. Principal, decision and kind are indexed in the search index
// (record_fields), which is written in bulk.
//
// rules (" r1 r2 ") and body (" w1 w2 ... ", the distinct words of the masked strings)
// are derived from the record for search and not covered by the hash: the search index
// (audit-index.db, indexSchema) is built from them, and queries match the records it
// does not hold yet with instr() on them.
var schema = []string{
	`CREATE TABLE records (
		seq         INTEGER PRIMARY KEY,
		id          TEXT NOT NULL,
		time_ns     INTEGER NOT NULL,
		kind        TEXT NOT NULL,
		principal   TEXT NOT NULL,
		role        TEXT NOT NULL,
		request_id  TEXT NOT NULL,
		decision_id TEXT NOT NULL,
		decision    TEXT NOT NULL,
		revision    TEXT NOT NULL,
		input       TEXT,
		reasons     TEXT NOT NULL,
		execution   TEXT,
		detail      TEXT,
		prev_hash   TEXT NOT NULL,
		hash        TEXT NOT NULL,
		rules       TEXT NOT NULL,
		body        TEXT NOT NULL
	)`,
	`CREATE TABLE checkpoints (
		seq       INTEGER PRIMARY KEY,
		hash      TEXT NOT NULL,
		time_ns   INTEGER NOT NULL,
		key_id    TEXT NOT NULL,
		signature TEXT NOT NULL
	)`,
	fmt.Sprintf(`PRAGMA application_id = %d`, applicationID),
	fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion),
}

// oldIndexes are the indexes of principal, decision and kind that audit.db held before
// the search index took them over (record_fields). The first read-write open of such a
// store drops them (newWriter); cmdgate of any version reads the store with or without
// them, only a query that filters on those columns without the search index scans.
var oldIndexes = []string{"records_principal", "records_decision", "records_kind"}

// stateSchema is the state table of audit.db, created by the first read-write open
// of a store (it is not part of schemaVersion 1's layout, which older readers check):
// clean_shutdown_seq is the head when a writer last closed the store cleanly. It is
// not covered by the hash or a signature: Verify reads it as a claim that the chain
// reached that record and that a checkpoint covered it.
const stateSchema = `CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value) WITHOUT ROWID`

// indexApplicationID marks audit-index.db ("cmgi").
const indexApplicationID = 0x636D6769

// indexSchema is the layout of audit-index.db, the search index: the rules and words of
// the records up to meta.index_seq (whose hash is meta.index_hash, to notice a chain
// that is not the one indexed). It is derived data, rebuilt when missing or stale.
var indexSchema = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID`,
	`INSERT INTO meta (key, value) VALUES ('index_seq', 0), ('index_hash', ''), ('fields_seq', 0)`,
	`CREATE TABLE record_rules (
		rule TEXT NOT NULL,
		seq  INTEGER NOT NULL,
		PRIMARY KEY (rule, seq)
	) WITHOUT ROWID`,
	// Words only (detail=none): queries ask for words, never phrases.
	`CREATE VIRTUAL TABLE records_fts USING fts5(body, content='', columnsize=0, detail=none, tokenize='unicode61 remove_diacritics 0')`,
	fieldsSchema,
	fmt.Sprintf(`PRAGMA application_id = %d`, indexApplicationID),
	fmt.Sprintf(`PRAGMA user_version = %d`, indexVersion),
}

// fieldsSchema indexes the records by principal, decision and kind (field is one of
// those column names; empty values are left out), for queries that filter on them.
// meta.fields_seq is the watermark up to which it is filled, equal to index_seq; an
// index of version 1 has neither (the chain indexed those columns then), and one that a
// cmdgate of that version indexed into since has a fields_seq that differs from
// index_seq (its watermark update sets every other key of meta to the hash): checkIndex
// (syncFields) fills the table afresh then.
const fieldsSchema = `CREATE TABLE IF NOT EXISTS record_fields (
		field TEXT NOT NULL,
		value TEXT NOT NULL,
		seq   INTEGER NOT NULL,
		PRIMARY KEY (field, value, seq)
	) WITHOUT ROWID`

// indexVersion is PRAGMA user_version of indexSchema.
const indexVersion = 2

// indexedFields are the columns of records that record_fields indexes.
var indexedFields = []string{"principal", "decision", "kind"}

// fieldsFrom is the statement that adds the fields of the records from ? (exclusive) to
// ? (inclusive) to record_fields; its arguments are from and to once per field.
var fieldsFrom = func() string {
	var parts []string
	for _, f := range indexedFields {
		parts = append(parts, fmt.Sprintf(`SELECT '%[1]s', %[1]s, seq FROM chain.records WHERE seq > ? AND seq <= ? AND %[1]s != ''`, f))
	}
	return `INSERT OR IGNORE INTO record_fields (field, value, seq) ` + strings.Join(parts, " UNION ALL ")
}()

// checkSchema reports whether the database is an audit store of a version this code
// reads (ok), an empty database (empty), or an error wrapping ErrNotStore or
// ErrSchemaTooNew.
func checkSchema(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, path string) (empty bool, err error) {
	// One statement, so one snapshot: another process creating the store meanwhile is
	// seen entirely or not at all.
	var app, ver int64
	var tables int
	err = q.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema)`).Scan(&app, &ver, &tables)
	if err != nil {
		if isNotADB(err) {
			return false, fmt.Errorf("%s: %w", path, ErrNotStore)
		}
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	switch {
	case app == 0 && ver == 0 && tables == 0:
		return true, nil
	case app != applicationID:
		return false, fmt.Errorf("%s: %w (application_id %#x)", path, ErrNotStore, app)
	case ver > schemaVersion:
		return false, fmt.Errorf("%s: %w (schema %d, this cmdgate reads up to %d)", path, ErrSchemaTooNew, ver, schemaVersion)
	case ver < 1:
		return false, fmt.Errorf("%s: %w (schema %d)", path, ErrNotStore, ver)
	}
	return false, nil
}

func isNotADB(err error) bool {
	var coder interface{ Code() int }
	if errors.As(err, &coder) && coder.Code()&0xff == 26 { // SQLITE_NOTADB
		return true
	}
	return strings.Contains(err.Error(), "file is not a database")
}

// createSchema creates the tables in an empty database, inside the caller's write
// transaction.
func createSchema(ctx context.Context, conn *sql.Conn) error {
	for _, stmt := range schema {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create audit schema: %w", err)
		}
	}
	return nil
}
