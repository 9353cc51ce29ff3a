package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// writer is the state of the goroutine that owns the write connection. Appenders
// enqueue prepared records; the writer takes everything queued (up to MaxBatch), chains
// it after the head it reads inside the write transaction, commits once, and wakes the
// appenders of the batch. One fsync covers the batch: that is the group commit.
type writer struct {
	s    *Store
	conn *sql.Conn

	insRecords    *multiInsert
	insCheckpoint *sql.Stmt
	selHead       *sql.Stmt
	begin, end    *sql.Stmt // BEGIN IMMEDIATE and COMMIT, prepared once rather than per commit

	buf     []byte // scratch for hashing
	recArgs []any
	unckpt  int // records committed since the checkpointer was last woken
}

func newWriter(ctx context.Context, s *Store, conn *sql.Conn) (*writer, error) {
	w := &writer{s: s, conn: conn,
		insRecords: newMultiInsert(conn, `INSERT INTO records (seq, id, time_ns, kind, principal,
			role, request_id, decision_id, decision, revision, input, reasons, execution, detail,
			prev_hash, hash, rules, body) VALUES `, 18),
	}
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&w.insCheckpoint, `INSERT INTO checkpoints (seq, hash, time_ns, key_id, signature) VALUES (?, ?, ?, ?, ?)`},
		{&w.selHead, `SELECT seq, id, time_ns, hash FROM records ORDER BY seq DESC LIMIT 1`},
		{&w.begin, `BEGIN IMMEDIATE`},
		{&w.end, `COMMIT`},
	} {
		var err error
		if *st.stmt, err = conn.PrepareContext(ctx, st.sql); err != nil {
			w.closeStmts()
			return nil, fmt.Errorf("prepare audit writer: %w", err)
		}
	}
	// The state table (the clean-shutdown mark) came after the first schema; a store of
	// that schema gets it on its first read-write open. Older readers ignore it. The
	// indexes the search index took over go on that open too.
	upgrade := []string{stateSchema}
	for _, name := range oldIndexes {
		upgrade = append(upgrade, `DROP INDEX IF EXISTS `+name)
	}
	for _, q := range upgrade {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			w.closeStmts()
			return nil, fmt.Errorf("prepare audit writer: %w", err)
		}
	}
	return w, nil
}

// close releases the statements and the connection. Unfinalized statements would keep
// SQLite from closing the connection (and from checkpointing the WAL on close).
func (w *writer) close() error {
	return errors.Join(w.closeStmts(), w.conn.Close())
}

// closeStmts releases the statements prepared so far.
func (w *writer) closeStmts() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.insCheckpoint, w.selHead, w.begin, w.end} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range w.insRecords.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// head is the last record of the chain.
type head struct {
	seq    int64
	id     id128
	timeNS int64
	hash   string
}

func (w *writer) head(ctx context.Context) (head, error) {
	h := head{hash: genesisHash}
	var idText string
	err := w.selHead.QueryRowContext(ctx).Scan(&h.seq, &idText, &h.timeNS, &h.hash)
	if errors.Is(err, sql.ErrNoRows) {
		return head{hash: genesisHash}, nil
	}
	if err != nil {
		return head{}, fmt.Errorf("read audit head: %w", err)
	}
	if h.id, err = parseID(idText); err != nil {
		return head{}, fmt.Errorf("read audit head: record %d: %w", h.seq, err)
	}
	return h, nil
}

// run is the writer goroutine. It exits after Close closed s.stop and everything
// queued before is committed.
func (s *Store) run(ctx context.Context, w *writer) {
	defer close(s.done)
	defer w.close()
	batch := make([]*appendReq, 0, s.opts.MaxBatch)
	wait := time.NewTimer(groupWait)
	wait.Stop()
	defer wait.Stop()
	last := 0 // size of the previous batch
	// sealC fires CheckpointInterval after the first commit that no checkpoint covers
	// yet; nil while there is none.
	var sealC <-chan time.Time
	seal := time.NewTimer(time.Hour)
	seal.Stop()
	defer seal.Stop()
	for {
		batch = batch[:0]
		stopping := false
		select {
		case r := <-s.queue:
			batch = append(batch, r)
		case <-s.stop:
			stopping = true
		case <-sealC:
			sealC = nil
			if err := w.seal(ctx, false); err != nil {
				s.opts.OnError(err)
			}
			continue
		}
		batch = s.fill(batch)
		// After a batch of several, more appenders are on their way (the last ones are
		// preparing their next records): give them a moment to queue rather than paying
		// a commit for a few. A commit costs far more than a record, so aiming at twice
		// the last batch lets batches grow while the load lasts. The wait ends as soon as
		// the batch is as large as the last one and no other Append is under way (the
		// appenders are all here), and is bounded anyway; after a batch of one (a lone
		// appender) the writer commits at once.
		target := min(max(2*last, 8), s.opts.MaxBatch)
		enough := func() bool {
			return len(batch) >= target || len(batch) >= last && s.appending.Load() <= int64(len(batch))
		}
		if !stopping && last > 1 && !enough() {
			wait.Reset(groupWait)
		collect:
			for !enough() {
				select {
				case r := <-s.queue:
					batch = append(batch, r)
					batch = s.fill(batch)
				case <-wait.C:
					break collect
				}
			}
			wait.Stop()
		}
		last = len(batch)
		if len(batch) > 0 && w.commit(ctx, batch) && sealC == nil && s.opts.CheckpointInterval > 0 {
			seal.Reset(s.opts.CheckpointInterval)
			sealC = seal.C
		}
		if stopping {
			if len(s.queue) > 0 {
				continue // still draining; s.stop stays closed, so we come back here
			}
			s.closeErr = w.seal(ctx, true)
			return
		}
	}
}

// groupWait bounds how long the writer waits for a batch to fill (run).
const groupWait = time.Millisecond

// fill adds what is queued to the batch, without waiting, up to MaxBatch.
func (s *Store) fill(batch []*appendReq) []*appendReq {
	for len(batch) < s.opts.MaxBatch {
		select {
		case r := <-s.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit appends a batch in one transaction and wakes its appenders. If anything
// fails, the transaction is rolled back and every append of the batch fails: nothing of
// it is stored, and the chain head stays where it was. It reports whether the batch
// was stored.
func (w *writer) commit(ctx context.Context, batch []*appendReq) bool {
	cp, err := w.commitBatch(ctx, batch)
	for _, r := range batch {
		if err != nil {
			r.rec, r.err = Record{}, err
		}
		close(r.done)
	}
	if err == nil {
		w.s.unindexed.Add(int64(len(batch)))
		w.s.kickIndexer()
		if w.unckpt += len(batch); w.unckpt >= ckptEvery {
			w.unckpt = 0
			w.s.kickCheckpointer()
		}
		if cp != nil {
			w.s.publish(*cp)
		}
	}
	return err == nil
}

func (w *writer) commitBatch(ctx context.Context, batch []*appendReq) (cp *Checkpoint, err error) {
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return nil, fmt.Errorf("append to audit log: begin: %w", err)
	}
	defer func() {
		if err != nil {
			w.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	h, err := w.head(ctx)
	if err != nil {
		return nil, err
	}
	first := h.seq + 1
	w.recArgs = w.recArgs[:0]
	for _, r := range batch {
		h = w.chain(h, r)
	}
	if err := w.insRecords.exec(ctx, w.recArgs); err != nil {
		return nil, fmt.Errorf("append to audit log: insert records %d-%d: %w", first, h.seq, err)
	}
	if n := int64(w.s.opts.CheckpointEvery); n > 0 && (first-1)/n != h.seq/n {
		c := w.s.sign(h.seq, h.hash, h.timeNS)
		if err := w.insertCheckpoint(ctx, c); err != nil {
			return nil, err
		}
		cp = &c
	}
	if _, err := w.end.ExecContext(ctx); err != nil {
		return nil, fmt.Errorf("append to audit log: commit: %w", err)
	}
	return cp, nil
}

// chain assigns seq, time, id and hash to one record after h and queues its rows.
func (w *writer) chain(h head, r *appendReq) head {
	now := w.s.opts.Now().UnixNano()
	t := max(now, h.timeNS)
	id := nextID(h.id, uint64(t/int64(time.Millisecond)))
	f := r.p.f
	f.seq, f.id, f.timeNS = h.seq+1, id.String(), t
	var hash string
	hash, w.buf = chainHash(w.buf, h.hash, &f)
	w.recArgs = append(w.recArgs, f.seq, f.id, f.timeNS, f.kind, f.principal, f.role,
		f.requestID, f.decisionID, f.decision, f.revision, nullable(f.input), f.reasons,
		nullable(f.execution), nullable(f.detail), h.hash, hash, r.p.rules, r.p.body)
	rec := r.p.rec
	rec.Seq, rec.ID, rec.Time, rec.PrevHash, rec.Hash = f.seq, f.id, time.Unix(0, t).UTC(), h.hash, hash
	r.rec = rec
	return head{seq: f.seq, id: id, timeNS: t, hash: hash}
}

func (w *writer) insertCheckpoint(ctx context.Context, c Checkpoint) error {
	if _, err := w.insCheckpoint.ExecContext(ctx, c.Seq, c.Hash, c.timeNS, c.KeyID, c.Signature); err != nil {
		return fmt.Errorf("append to audit log: insert checkpoint %d: %w", c.Seq, err)
	}
	return nil
}

// seal signs a checkpoint of the head when the last checkpoint is older (the timer
// after appends, and Close) and publishes its copies. At shutdown it also marks the
// store as shut down cleanly at the head, in the same transaction: Verify then expects
// no record after the last checkpoint and the chain to reach the mark.
func (w *writer) seal(ctx context.Context, shutdown bool) (err error) {
	what := "timed checkpoint"
	if shutdown {
		what = "shutdown checkpoint"
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	defer func() {
		if err != nil {
			w.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	h, err := w.head(ctx)
	if err != nil {
		return err
	}
	var last sql.NullInt64
	if err := w.conn.QueryRowContext(ctx, `SELECT max(seq) FROM checkpoints`).Scan(&last); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var cp *Checkpoint
	if h.seq > 0 && (!last.Valid || last.Int64 < h.seq) {
		c := w.s.sign(h.seq, h.hash, h.timeNS)
		if err := w.insertCheckpoint(ctx, c); err != nil {
			return err
		}
		cp = &c
	}
	if shutdown && h.seq > 0 {
		if _, err := w.conn.ExecContext(ctx, `INSERT OR REPLACE INTO state (key, value) VALUES ('clean_shutdown_seq', ?)`, h.seq); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if _, err := w.end.ExecContext(ctx); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	if cp != nil {
		w.s.publish(*cp)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// multiInsert runs INSERT ... VALUES (...), (...), ... statements of many rows, which
// costs far less per row than one statement per row. Statements are prepared for row
// counts that are powers of two, and a batch is split into such chunks.
type multiInsert struct {
	conn   *sql.Conn
	prefix string
	cols   int
	stmts  map[int]*sql.Stmt
}

const maxRowsPerInsert = 256

func newMultiInsert(conn *sql.Conn, prefix string, cols int) *multiInsert {
	return &multiInsert{conn: conn, prefix: prefix, cols: cols, stmts: map[int]*sql.Stmt{}}
}

func (m *multiInsert) exec(ctx context.Context, args []any) error {
	rows := len(args) / m.cols
	for rows > 0 {
		n := maxRowsPerInsert
		for n > rows {
			n /= 2
		}
		st, err := m.stmt(ctx, n)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, args[:n*m.cols]...); err != nil {
			return err
		}
		args = args[n*m.cols:]
		rows -= n
	}
	return nil
}

func (m *multiInsert) stmt(ctx context.Context, rows int) (*sql.Stmt, error) {
	if st := m.stmts[rows]; st != nil {
		return st, nil
	}
	tuple := "(?" + strings.Repeat(", ?", m.cols-1) + ")"
	q := m.prefix + tuple + strings.Repeat(", "+tuple, rows-1)
	st, err := m.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	m.stmts[rows] = st
	return st, nil
}
