package audit

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query selects records. The zero value selects every record, newest first, in pages of
// DefaultLimit. All filters must match.
type Query struct {
	// Since and Until bound the record time: Since <= time < Until. Zero means unbounded.
	Since, Until time.Time
	Principal    string // principal name, exactly
	Decision     string // allow, deny, ask, ... exactly
	Kind         Kind
	Rule         string // a rule among the record's reasons, exactly
	// Text matches records containing every word of it: words are runs of letters,
	// digits and marks, matched case-insensitively against the words of all the record's
	// (masked) strings. A word followed by '*' matches the words it begins ("kube*");
	// on a short, common prefix that is slower than whole words.
	Text string
	// Limit is the page size: 0 means DefaultLimit, at most MaxLimit.
	Limit int
	// Cursor continues after the page that returned it as Page.NextCursor.
	Cursor string
}

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Page is one page of query results, newest first.
type Page struct {
	Records []Record `json:"records"`
	// NextCursor fetches the next (older) page; empty on the last page.
	NextCursor string `json:"next_cursor"`
}

const cursorPrefix = "c1."

func encodeCursor(seq int64) string {
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(seq, 10)))
}

func decodeCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(c, cursorPrefix))
	if err != nil || !strings.HasPrefix(c, cursorPrefix) {
		return 0, fmt.Errorf("%w: malformed cursor", ErrInvalidQuery)
	}
	seq, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || seq < 1 {
		return 0, fmt.Errorf("%w: malformed cursor", ErrInvalidQuery)
	}
	return seq, nil
}

// plan is a validated query turned into SQL pieces.
type plan struct {
	lo, hi   int64 // seq range, inclusive
	empty    bool  // nothing can match
	where    []string
	args     []any
	rule     string
	words    []queryWord
	indexSeq int64 // records up to here are in record_rules, records_fts and record_fields
	// byRule drives a query with both a rule and text by record_rules (checking the
	// words on records.body) rather than by records_fts: the smaller index wins.
	byRule bool
	// field drives a query with neither rule nor text but with a principal, decision or
	// kind by record_fields: the field (fields[field]) that selects the fewest records.
	fields []fieldFilter
	field  int
}

// fieldFilter is a filter on one of indexedFields.
type fieldFilter struct{ col, v string }

func (s *Store) plan(ctx context.Context, tx *sql.Tx, q Query) (*plan, error) {
	if q.Kind != "" && !q.Kind.Valid() {
		return nil, fmt.Errorf("%w: unknown kind %q", ErrInvalidQuery, sanitize(string(q.Kind)))
	}
	for _, f := range []struct{ name, v string }{{"principal", q.Principal}, {"decision", q.Decision}, {"rule", q.Rule}, {"text", q.Text}} {
		if err := checkText(f.name, f.v, maxMessageLen); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrInvalidQuery, err.(*RecordError).Reason)
		}
	}
	p := &plan{rule: q.Rule}
	if q.Text != "" {
		p.words = queryWords(q.Text)
		if len(p.words) == 0 {
			return nil, fmt.Errorf("%w: text has no words (letters or digits)", ErrInvalidQuery)
		}
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0), (SELECT value FROM meta WHERE key = 'index_seq') FROM chain.records`).Scan(&last, &p.indexSeq); err != nil {
		return nil, fmt.Errorf("query audit log: %w", err)
	}
	p.lo, p.hi = 1, last
	if !q.Since.IsZero() {
		lo, err := lowerBound(ctx, tx, `time_ns`, q.Since.UnixNano(), last)
		if err != nil {
			return nil, err
		}
		p.lo = lo
	}
	if !q.Until.IsZero() {
		hi, err := lowerBound(ctx, tx, `time_ns`, q.Until.UnixNano(), last)
		if err != nil {
			return nil, err
		}
		p.hi = min(p.hi, hi-1)
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		p.hi = min(p.hi, c-1)
	}
	p.empty = p.lo > p.hi
	if p.rule != "" && len(p.words) > 0 && !p.empty {
		// Both indexes could drive: estimate each side's size (capped) and take the
		// smaller, so that few rows are visited to fill a page. Prefix words make
		// FTS5 merge whole doclists, even to count: the rule drives then.
		p.byRule = true
		if !slices.ContainsFunc(p.words, func(w queryWord) bool { return w.prefix }) {
			const capRows = 5000
			var byRule, byText int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM record_rules WHERE rule = ? LIMIT ?)`, p.rule, capRows).Scan(&byRule); err != nil {
				return nil, fmt.Errorf("query audit log: %w", err)
			}
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM records_fts WHERE records_fts MATCH ? LIMIT ?)`, ftsQuery(p.words), capRows).Scan(&byText); err != nil {
				return nil, fmt.Errorf("query audit log: %w", err)
			}
			p.byRule = byRule <= byText
		}
	}
	for _, f := range []fieldFilter{{"principal", q.Principal}, {"decision", q.Decision}, {"kind", string(q.Kind)}} {
		if f.v != "" {
			p.where = append(p.where, "r."+f.col+" = ?")
			p.args = append(p.args, f.v)
			p.fields = append(p.fields, f)
		}
	}
	if len(p.fields) > 1 && p.rule == "" && len(p.words) == 0 && !p.empty && p.indexSeq >= p.lo {
		// Drive by the field that selects the fewest indexed records (counted up to a
		// cap); the others are checked on the records.
		const capRows = 5000
		least := -1
		for i, f := range p.fields {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM record_fields WHERE field = ? AND value = ? AND seq BETWEEN ? AND ? LIMIT ?)`,
				f.col, f.v, p.lo, min(p.hi, p.indexSeq), capRows).Scan(&n); err != nil {
				return nil, fmt.Errorf("query audit log: %w", err)
			}
			if least < 0 || n < least {
				p.field, least = i, n
			}
		}
	}
	return p, nil
}

// lowerBound returns the least seq whose column value is >= v, or last+1: a binary
// search that relies on the column (time_ns) never decreasing along the chain.
func lowerBound(ctx context.Context, tx *sql.Tx, col string, v any, last int64) (int64, error) {
	lo, hi := int64(1), last+1
	stmt, err := tx.PrepareContext(ctx, `SELECT seq, `+col+` >= ? FROM chain.records WHERE seq >= ? ORDER BY seq LIMIT 1`)
	if err != nil {
		return 0, fmt.Errorf("query audit log: %w", err)
	}
	defer stmt.Close()
	for lo < hi {
		mid := lo + (hi-lo)/2
		var seq int64
		var ge bool
		err := stmt.QueryRowContext(ctx, v, mid).Scan(&seq, &ge)
		if errors.Is(err, sql.ErrNoRows) {
			hi = mid
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("query audit log: %w", err)
		}
		if ge {
			hi = mid
		} else {
			lo = seq + 1
		}
	}
	return lo, nil
}

// selects returns the SQL statements that together produce the matching records in seq
// order (descending for queries, ascending for export), and their arguments. With a
// rule, text, principal, decision or kind filter there are two: the indexed part (seq
// <= indexSeq) through record_rules, records_fts or record_fields, and the tail after
// it through the records' own columns.
func (p *plan) selects(desc bool, limit int) (stmts []string, args [][]any) {
	order := "ASC"
	if desc {
		order = "DESC"
	}
	lim := ""
	if limit > 0 {
		lim = " LIMIT " + strconv.Itoa(limit)
	}
	cols := "r." + strings.ReplaceAll(recordColumns, ", ", ", r.")
	if p.rule == "" && len(p.words) == 0 && len(p.fields) == 0 {
		where := append([]string{"r.seq BETWEEN ? AND ?"}, p.where...)
		a := append([]any{p.lo, p.hi}, p.args...)
		return []string{`SELECT ` + cols + ` FROM chain.records r WHERE ` + strings.Join(where, " AND ") + ` ORDER BY r.seq ` + order + lim}, [][]any{a}
	}

	// Indexed part.
	var indexed string
	var ia []any
	if p.lo <= min(p.hi, p.indexSeq) {
		where := append([]string{}, p.where...)
		a := append([]any{}, p.args...)
		var from, seqCol string
		switch {
		case p.rule == "" && len(p.words) == 0:
			f := p.fields[p.field]
			from = `record_fields rf JOIN chain.records r ON r.seq = rf.seq`
			seqCol = "rf.seq"
			where = append(where, "rf.field = ?", "rf.value = ?")
			a = append(a, f.col, f.v)
		case len(p.words) > 0 && !p.byRule:
			from = `records_fts f JOIN chain.records r ON r.seq = f.rowid`
			seqCol = "f.rowid"
			where = append(where, "records_fts MATCH ?")
			a = append(a, ftsQuery(p.words))
			if p.rule != "" {
				where = append(where, "EXISTS (SELECT 1 FROM record_rules rr WHERE rr.rule = ? AND rr.seq = r.seq)")
				a = append(a, p.rule)
			}
		default:
			from = `record_rules rr JOIN chain.records r ON r.seq = rr.seq`
			seqCol = "rr.seq"
			where = append(where, "rr.rule = ?")
			a = append(a, p.rule)
			where, a = p.bodyFilter(where, a)
		}
		where = append(where, seqCol+" BETWEEN ? AND ?")
		a = append(a, p.lo, min(p.hi, p.indexSeq))
		indexed = `SELECT ` + cols + ` FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + seqCol + ` ` + order + lim
		ia = a
	}
	// Tail part.
	var tail string
	var ta []any
	if max(p.lo, p.indexSeq+1) <= p.hi {
		where := append([]string{"r.seq BETWEEN ? AND ?"}, p.where...)
		a := append([]any{max(p.lo, p.indexSeq+1), p.hi}, p.args...)
		if p.rule != "" {
			where = append(where, "instr(r.rules, ?) > 0")
			a = append(a, " "+p.rule+" ")
		}
		where, a = p.bodyFilter(where, a)
		tail = `SELECT ` + cols + ` FROM chain.records r WHERE ` + strings.Join(where, " AND ") + ` ORDER BY r.seq ` + order + lim
		ta = a
	}
	// The tail holds the newer records.
	first, second := indexed, tail
	fa, sa := ia, ta
	if desc {
		first, second, fa, sa = tail, indexed, ta, ia
	}
	for _, x := range []struct {
		q string
		a []any
	}{{first, fa}, {second, sa}} {
		if x.q != "" {
			stmts = append(stmts, x.q)
			args = append(args, x.a)
		}
	}
	return stmts, args
}

// queryWord is a word of Query.Text; prefix when it was followed by '*'.
type queryWord struct {
	w      string
	prefix bool
}

// queryWords splits text into words as appendWords does, noting the words followed by
// '*'.
func queryWords(text string) []queryWord {
	var out []queryWord
	for _, w := range appendWords(nil, text) {
		out = append(out, queryWord{w: w})
	}
	// Find, in order, where each word ends in text, to see whether a '*' follows it.
	lower := strings.ToLower(text)
	pos := 0
	for i := range out {
		j := strings.Index(lower[pos:], out[i].w)
		if j < 0 {
			break
		}
		pos += j + len(out[i].w)
		out[i].prefix = pos < len(lower) && lower[pos] == '*'
	}
	return out
}

// bodyFilter matches the words against records.body (" w1 w2 ... "), as records_fts
// does: each word whole, or as a prefix when asked.
func (p *plan) bodyFilter(where []string, args []any) ([]string, []any) {
	for _, w := range p.words {
		where = append(where, "instr(r.body, ?) > 0")
		if w.prefix {
			args = append(args, " "+w.w)
		} else {
			args = append(args, " "+w.w+" ")
		}
	}
	return where, args
}

// ftsQuery writes words as an FTS5 query: each word a string, all required, prefixes
// starred.
func ftsQuery(words []queryWord) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(w.w, `"`, `""`))
		b.WriteByte('"')
		if w.prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}

const recordColumns = `seq, id, time_ns, kind, principal, role, request_id, decision_id, decision, revision, input, reasons, execution, detail, prev_hash, hash`

func scanRecord(rows *sql.Rows) (Record, error) {
	var r Record
	var timeNS int64
	var input, execution, detail sql.NullString
	var reasons string
	if err := rows.Scan(&r.Seq, &r.ID, &timeNS, &r.Kind, &r.Principal.Name, &r.Principal.Role,
		&r.RequestID, &r.DecisionID, &r.Decision, &r.Revision, &input, &reasons, &execution,
		&detail, &r.PrevHash, &r.Hash); err != nil {
		return Record{}, fmt.Errorf("read audit record: %w", err)
	}
	r.Time = time.Unix(0, timeNS).UTC()
	if input.Valid && input.String != "" {
		r.Input = json.RawMessage(input.String)
	}
	if detail.Valid && detail.String != "" {
		r.Detail = json.RawMessage(detail.String)
	}
	if reasons != "" {
		if err := json.Unmarshal([]byte(reasons), &r.Reasons); err != nil {
			return Record{}, fmt.Errorf("read audit record %d: reasons: %w", r.Seq, err)
		}
	}
	if execution.Valid && execution.String != "" {
		r.Execution = &Execution{}
		if err := json.Unmarshal([]byte(execution.String), r.Execution); err != nil {
			return Record{}, fmt.Errorf("read audit record %d: execution: %w", r.Seq, err)
		}
	}
	return r, nil
}

// each runs the plan and calls fn for each record, in order, until fn returns false, an
// error, or limit records (0: no limit).
func (s *Store) each(ctx context.Context, tx *sql.Tx, p *plan, desc bool, limit int, fn func(Record) (bool, error)) error {
	if p.empty {
		return nil
	}
	stmts, args := p.selects(desc, limit)
	n := 0
	for i, q := range stmts {
		rows, err := tx.QueryContext(ctx, q, args[i]...)
		if err != nil {
			return fmt.Errorf("query audit log: %w", err)
		}
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				rows.Close()
				return err
			}
			more, err := fn(r)
			n++
			if err != nil || !more || (limit > 0 && n >= limit) {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("query audit log: %w", err)
		}
	}
	return nil
}

// Query returns one page of matching records, newest first.
func (s *Store) Query(ctx context.Context, q Query) (*Page, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return nil, fmt.Errorf("%w: limit %d is not between 1 and %d", ErrInvalidQuery, limit, MaxLimit)
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	tx, err := s.sdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("query audit log: %w", err)
	}
	defer tx.Rollback()
	p, err := s.plan(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	page := &Page{Records: []Record{}}
	err = s.each(ctx, tx, p, true, limit+1, func(r Record) (bool, error) {
		page.Records = append(page.Records, r)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(page.Records) > limit {
		page.Records = page.Records[:limit]
		page.NextCursor = encodeCursor(page.Records[limit-1].Seq)
	}
	return page, nil
}

// Get returns the record with the given id, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (Record, error) {
	if _, err := parseID(id); err != nil {
		return Record{}, fmt.Errorf("%w: %q is not a record id", ErrNotFound, sanitize(id))
	}
	if err := s.checkOpen(); err != nil {
		return Record{}, err
	}
	tx, err := s.sdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Record{}, fmt.Errorf("get audit record: %w", err)
	}
	defer tx.Rollback()
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM chain.records`).Scan(&last); err != nil {
		return Record{}, fmt.Errorf("get audit record: %w", err)
	}
	// ids increase along the chain.
	seq, err := lowerBound(ctx, tx, "id", id, last)
	if err != nil {
		return Record{}, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+recordColumns+` FROM chain.records WHERE seq >= ? ORDER BY seq LIMIT 1`, seq)
	if err != nil {
		return Record{}, fmt.Errorf("get audit record: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return Record{}, err
		}
		if r.ID == id {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("%w: %s", ErrNotFound, id)
}
