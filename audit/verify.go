package audit

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// ProblemKind classifies what Verify found wrong.
type ProblemKind string

// The problems Verify reports. Which one is named for a given tampering is a best
// judgement from the evidence (hashes, links, positions); the record named is where the
// chain stops being trustworthy.
const (
	// ProblemEdited: the record's content no longer matches its hash, or (when its hash
	// was recomputed too) the next record's link.
	ProblemEdited ProblemKind = "edited"
	// ProblemRemoved: records are missing (a gap in seq, or the records after the gap were
	// renumbered).
	ProblemRemoved ProblemKind = "removed"
	// ProblemInserted: a record that was not appended by the store sits in the chain.
	ProblemInserted ProblemKind = "inserted"
	// ProblemReordered: records were swapped or moved.
	ProblemReordered ProblemKind = "reordered"
	// ProblemTruncated: the chain ends before a record a signed checkpoint covers.
	ProblemTruncated ProblemKind = "truncated"
	// ProblemRewritten: the chain is consistent but differs from a signed checkpoint: it
	// was rewritten at or before the named record.
	ProblemRewritten ProblemKind = "rewritten"
	// ProblemBadSignature: a checkpoint's signature does not verify with the public key.
	ProblemBadSignature ProblemKind = "bad_signature"
	// ProblemUnsealedTail (VerifyOptions.Strict only): the store was shut down cleanly
	// at its head, which a checkpoint then covers, yet records follow the last
	// checkpoint: the checkpoints of the tail were removed.
	ProblemUnsealedTail ProblemKind = "unsealed_tail"
)

// Problem is the first thing wrong with the chain.
type Problem struct {
	Kind ProblemKind `json:"kind"`
	// Seq and ID name the record (ID is empty when the record is missing).
	Seq     int64  `json:"seq"`
	ID      string `json:"id,omitempty"`
	Message string `json:"message"`
}

// Head names the last record of the chain.
type Head struct {
	Seq  int64  `json:"seq"`
	ID   string `json:"id"`
	Hash string `json:"hash"`
	Time string `json:"time"`
}

// VerifyOptions configures Verify. The zero value checks with the store's own key.
type VerifyOptions struct {
	// PublicKey checks the checkpoint signatures instead of the key in the data
	// directory (an auditor's copy from `cmdgate audit pubkey`).
	PublicKey ed25519.PublicKey
	// Checkpoints are checkpoints saved earlier (VerifyResult.LastCheckpoint, or
	// audit.checkpoint copies); each must verify and match the chain.
	Checkpoints []Checkpoint
	// Witness is a witness file (Options.Witness) whose checkpoints must all verify and
	// match the chain; "" means the store's own Options.Witness, if any. A witness
	// that cannot be read is an error.
	Witness string
	// Strict fails (ProblemUnsealedTail) when the store was shut down cleanly and yet
	// records follow the last checkpoint. Without Strict they are only counted
	// (VerifyResult.Unsealed): a writer that is running, or that crashed, leaves the
	// records of its last CheckpointInterval unsealed.
	Strict bool
}

// VerifyResult is the outcome of Verify. OK is false exactly when Problem is set.
type VerifyResult struct {
	OK      bool  `json:"ok"`
	Records int64 `json:"records"`
	Head    *Head `json:"head"`
	// Checkpoints is how many signed checkpoints were checked.
	Checkpoints    int         `json:"checkpoints"`
	LastCheckpoint *Checkpoint `json:"last_checkpoint,omitempty"`
	// WitnessCheckpoints is how many of Checkpoints came from the witness file.
	WitnessCheckpoints int `json:"witness_checkpoints"`
	// Unsealed is how many records follow the last checkpoint (all of them when there
	// is none): records that can be cut from the end without a checkpoint noticing.
	Unsealed int64 `json:"unsealed"`
	// CleanShutdown is true when the last writer to close the store did so cleanly at
	// the head (a checkpoint then covers every record): no writer has appended since.
	CleanShutdown bool     `json:"clean_shutdown"`
	KeyID         string   `json:"key_id,omitempty"`
	Problem       *Problem `json:"problem,omitempty"`
}

// Verify walks the whole chain in order and reports the first record that was edited,
// removed, inserted or reordered, and checks every signed checkpoint (the checkpoints
// table, the audit.checkpoint file, opts.Checkpoints): its signature, that the chain
// still has its hash at its position, and that the chain reaches it (truncation). It
// reads one consistent snapshot, so it can run while others append. The error is for
// failures to read; a broken chain is a result with OK false.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) (*VerifyResult, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	pub := opts.PublicKey
	if pub == nil {
		pub = s.pub
	}
	res := &VerifyResult{}
	if pub != nil {
		res.KeyID = KeyID(pub)
	}
	// The file first: it is written after its checkpoint commits, so it is never ahead
	// of the snapshot read next.
	var cps []Checkpoint
	if c, err := ReadCheckpointFile(filepath.Join(s.dir, CheckpointFile)); err == nil {
		cps = append(cps, c)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cps = append(cps, opts.Checkpoints...)
	if w := cmp.Or(opts.Witness, s.opts.Witness); w != "" {
		wcps, err := ReadWitness(w)
		if err != nil {
			return nil, err
		}
		res.WitnessCheckpoints = len(wcps)
		cps = append(cps, wcps...)
	}

	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT seq, hash, time_ns, key_id, signature FROM checkpoints ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("verify: read checkpoints: %w", err)
	}
	for rows.Next() {
		var c Checkpoint
		if err := rows.Scan(&c.Seq, &c.Hash, &c.timeNS, &c.KeyID, &c.Signature); err != nil {
			rows.Close()
			return nil, fmt.Errorf("verify: read checkpoints: %w", err)
		}
		c.Time = formatTime(c.timeNS)
		cps = append(cps, c)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("verify: read checkpoints: %w", err)
	}
	mark, err := cleanShutdownSeq(ctx, tx)
	if err != nil {
		return nil, err
	}
	if len(cps) > 0 && pub == nil {
		return nil, fmt.Errorf("verify: %w: %d checkpoints to check and no audit.key in %s: pass the public key", ErrNoKey, len(cps), s.dir)
	}
	bySeq := map[int64][]Checkpoint{}
	var maxCP *Checkpoint
	for i := range cps {
		c := &cps[i]
		res.Checkpoints++
		if !c.VerifySignature(pub) {
			res.Problem = &Problem{Kind: ProblemBadSignature, Seq: c.Seq,
				Message: fmt.Sprintf("the checkpoint of record %d (key %s) does not verify with key %s", c.Seq, c.KeyID, KeyID(pub))}
			return res, nil
		}
		bySeq[c.Seq] = append(bySeq[c.Seq], *c)
		if maxCP == nil || c.Seq > maxCP.Seq {
			maxCP = c
		}
	}
	if maxCP != nil {
		last := *maxCP
		res.LastCheckpoint = &last
	}

	f, err := s.walk(ctx, tx, bySeq)
	if err != nil {
		return nil, err
	}
	res.Records = f.count
	if f.count > 0 {
		res.Head = &Head{Seq: f.last.seq, ID: f.last.id, Hash: f.last.hash, Time: formatTime(f.last.timeNS)}
	}
	if f.anomaly {
		res.Problem, err = s.classify(ctx, tx, f, bySeq)
		return res, err
	}
	if maxCP != nil && maxCP.Seq > f.last.seq {
		res.Problem = &Problem{Kind: ProblemTruncated, Seq: f.last.seq + 1,
			Message: fmt.Sprintf("the chain ends at record %d but a signed checkpoint covers record %d: the records after %d were removed", f.last.seq, maxCP.Seq, f.last.seq)}
		return res, nil
	}
	if mark > f.last.seq {
		res.Problem = &Problem{Kind: ProblemTruncated, Seq: f.last.seq + 1,
			Message: fmt.Sprintf("the chain ends at record %d but the store was shut down cleanly at record %d: the records after %d were removed", f.last.seq, mark, f.last.seq)}
		return res, nil
	}
	res.Unsealed = f.last.seq
	if maxCP != nil {
		res.Unsealed -= maxCP.Seq
	}
	res.CleanShutdown = f.count > 0 && mark == f.last.seq
	if opts.Strict && res.CleanShutdown && res.Unsealed > 0 {
		from := f.last.seq - res.Unsealed + 1
		res.Problem = &Problem{Kind: ProblemUnsealedTail, Seq: from,
			Message: fmt.Sprintf("records %d to %d follow the last checkpoint although the store was shut down cleanly at record %d, which a checkpoint then covered: the checkpoints of the tail were removed", from, f.last.seq, mark)}
		return res, nil
	}
	res.OK = true
	return res, nil
}

// cleanShutdownSeq reads the clean-shutdown mark (stateSchema): 0 when there is none,
// or the store predates it.
func cleanShutdownSeq(ctx context.Context, tx *sql.Tx) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT value FROM state WHERE key = 'clean_shutdown_seq'`).Scan(&seq)
	switch {
	case err == nil:
		return seq, nil
	case errors.Is(err, sql.ErrNoRows), strings.Contains(err.Error(), "no such table"):
		return 0, nil
	}
	return 0, fmt.Errorf("verify: read the clean-shutdown mark: %w", err)
}

// walkResult is what the fast walk found: how many records check out, the last of
// them, and whether the record after it does not.
type walkResult struct {
	count int64
	last  struct {
		seq, timeNS int64
		id, hash    string
	}
	anomaly bool
}

// vbatch is a run of records read together and hashed by one worker.
type vbatch struct {
	rows []vrow
	n    int
	ok   []bool // content hash of row i matches its stored hash at its stored seq
	done chan struct{}
}

const verifyBatch = 256

// walk checks the chain in order. One goroutine reads rows in batches, workers hash
// them in parallel, and this goroutine checks each record against the one before it
// (position, link, order, checkpoints). It stops at the first record that fails; the
// caller then classifies what is wrong there (classify).
func (s *Store) walk(ctx context.Context, tx *sql.Tx, bySeq map[int64][]Checkpoint) (*walkResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows, err := tx.QueryContext(ctx, verifySelect)
	if err != nil {
		return nil, fmt.Errorf("verify: read records: %w", err)
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	free := make(chan *vbatch, 2*workers+2)
	for range cap(free) {
		free <- &vbatch{rows: make([]vrow, verifyBatch), ok: make([]bool, verifyBatch)}
	}
	work := make(chan *vbatch, cap(free))
	ordered := make(chan *vbatch, cap(free))
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // reader
		defer wg.Done()
		defer close(work)
		defer close(ordered)
		defer rows.Close()
		for {
			var b *vbatch
			select {
			case b = <-free:
			case <-ctx.Done():
				return
			}
			b.n = 0
			b.done = make(chan struct{})
			for b.n < verifyBatch && rows.Next() {
				if err := b.rows[b.n].scan(rows); err != nil {
					readErr = err
					break
				}
				b.n++
			}
			if readErr == nil {
				readErr = rows.Err()
			}
			ordered <- b
			work <- b
			if b.n < verifyBatch || readErr != nil {
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() { // hashers
			defer wg.Done()
			var buf []byte
			for b := range work {
				for i := range b.n {
					r := &b.rows[i]
					b.ok[i] = false
					if r.seqOK && r.timeOK {
						var sum [sha256.Size]byte
						sum, buf = chainSum(buf, r.prev, &r.f)
						var hx [2 * sha256.Size]byte
						hex.Encode(hx[:], sum[:])
						b.ok[i] = bytes.Equal(hx[:], r.hash)
					}
				}
				close(b.done)
			}
		}()
	}

	res := &walkResult{}
	prevHash := []byte(genesisHash)
	var prevID []byte
	var prevTime int64
	expected := int64(1)
	check := func(b *vbatch, i int) bool {
		r := &b.rows[i]
		if !b.ok[i] || r.f.seq != expected || !bytes.Equal(r.prev, prevHash) {
			return false
		}
		if res.count > 0 && (r.f.timeNS < prevTime || bytes.Compare(r.f.id, prevID) <= 0) {
			return false
		}
		for _, c := range bySeq[r.f.seq] {
			if c.Hash != string(r.hash) {
				return false
			}
		}
		return true
	}
	for b := range ordered {
		<-b.done
		for i := 0; i < b.n && !res.anomaly; i++ {
			if !check(b, i) {
				res.anomaly = true
				break
			}
			r := &b.rows[i]
			res.count++
			expected = r.f.seq + 1
			prevHash = append(prevHash[:0], r.hash...)
			prevID = append(prevID[:0], r.f.id...)
			prevTime = r.f.timeNS
		}
		free <- b
		if res.anomaly {
			cancel()
			break
		}
	}
	cancel()
	for range ordered { // let the reader finish
	}
	wg.Wait()
	if readErr != nil && !res.anomaly {
		return nil, fmt.Errorf("verify: read records: %w", readErr)
	}
	if res.count > 0 {
		res.last.seq, res.last.timeNS = expected-1, prevTime
		res.last.id, res.last.hash = string(prevID), string(prevHash)
	}
	return res, nil
}

// classify names what is wrong with the first record after the ones the walk accepted,
// from that record, the one before it and the one after it.
func (s *Store) classify(ctx context.Context, tx *sql.Tx, f *walkResult, bySeq map[int64][]Checkpoint) (*Problem, error) {
	from, limit := int64(1), 2
	if f.count > 0 {
		from, limit = f.last.seq, 3
	}
	rows, err := tx.QueryContext(ctx, verifyWindow, from, limit)
	if err != nil {
		return nil, fmt.Errorf("verify: read records: %w", err)
	}
	defer rows.Close()
	v := newVerifier(bySeq)
	if f.count > 0 {
		if !rows.Next() {
			return nil, fmt.Errorf("verify: record %d vanished during the walk", from)
		}
		if err := v.next.scan(rows); err != nil {
			return nil, fmt.Errorf("verify: read records: %w", err)
		}
		v.haveNext = true
		v.advance() // into cur
		v.advance() // into prev
	}
	for rows.Next() {
		if err := v.next.scan(rows); err != nil {
			return nil, fmt.Errorf("verify: read records: %w", err)
		}
		v.haveNext = true
		if v.haveCur {
			break
		}
		v.advance()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read records: %w", err)
	}
	if !v.haveCur {
		return nil, fmt.Errorf("verify: the record after %d vanished during the walk", from)
	}
	if p := v.check(); p != nil {
		return p, nil
	}
	return &Problem{Kind: ProblemEdited, Seq: v.cur.f.seq, ID: string(v.cur.f.id),
		Message: fmt.Sprintf("record %d does not check out", v.cur.f.seq)}, nil
}

const verifyColumns = `seq, id, time_ns, kind, principal, role, request_id, decision_id, decision, revision, input, reasons, execution, detail, prev_hash, hash`

// verifySelect fetches each record as one text, its columns joined by US (0x1f): one
// column per row costs the driver far less than sixteen. No column of an untampered
// record holds a US (scalars refuse control characters, JSON escapes them); a row that
// does not split into sixteen fields is reported as edited.
const verifySelect = `SELECT ` + verifyRow + ` FROM records ORDER BY seq`

// verifyWindow reads a few records from a position, for classify.
const verifyWindow = `SELECT ` + verifyRow + ` FROM records WHERE seq >= ? ORDER BY seq LIMIT ?`

const verifyRow = `concat_ws(char(31), seq, id, time_ns, kind, principal, role, request_id,
	decision_id, decision, revision, coalesce(input, ''), reasons, coalesce(execution, ''),
	coalesce(detail, ''), prev_hash, hash)`

const fieldSep = 0x1f

// vrow is one record as stored, its bytes owned (copied out of the driver's buffer).
type vrow struct {
	f      canonicalFields[[]byte]
	seqOK  bool // the row split into its fields and seq parsed
	timeOK bool
	prev   []byte
	hash   []byte
	raw    sql.RawBytes
	buf    []byte
	fields [16][]byte
}

func (r *vrow) scan(rows *sql.Rows) error {
	if err := rows.Scan(&r.raw); err != nil {
		return err
	}
	r.buf = append(r.buf[:0], r.raw...)
	rest := r.buf
	n := 0
	for n < len(r.fields) {
		i := bytes.IndexByte(rest, fieldSep)
		if i < 0 {
			r.fields[n] = rest
			n++
			rest = nil
			break
		}
		r.fields[n] = rest[:i]
		rest = rest[i+1:]
		n++
	}
	r.seqOK, r.timeOK = false, false
	r.f = canonicalFields[[]byte]{}
	r.prev, r.hash = nil, nil
	if n != len(r.fields) || rest != nil {
		// Malformed: take what identifies the row, if anything.
		r.f.seq, _ = strconv.ParseInt(string(r.fields[0]), 10, 64)
		return nil
	}
	b := &r.fields
	var err error
	r.f.seq, err = strconv.ParseInt(string(b[0]), 10, 64)
	r.seqOK = err == nil
	r.f.timeNS, err = strconv.ParseInt(string(b[2]), 10, 64)
	r.timeOK = err == nil
	r.f.id, r.f.kind, r.f.principal, r.f.role = b[1], b[3], b[4], b[5]
	r.f.requestID, r.f.decisionID, r.f.decision, r.f.revision = b[6], b[7], b[8], b[9]
	r.f.input, r.f.reasons, r.f.execution, r.f.detail = b[10], b[11], b[12], b[13]
	r.prev, r.hash = b[14], b[15]
	return nil
}

// verifier walks the chain with one record of lookahead: cur is being checked, next
// follows it, and prev is the last record that checked out.
type verifier struct {
	prev, cur, next             *vrow
	rows                        [3]vrow
	havePrev, haveCur, haveNext bool
	bySeq                       map[int64][]Checkpoint
	buf                         []byte
}

func newVerifier(bySeq map[int64][]Checkpoint) *verifier {
	v := &verifier{bySeq: bySeq}
	v.prev, v.cur, v.next = &v.rows[0], &v.rows[1], &v.rows[2]
	return v
}

// advance moves the window one record on: cur (checked) becomes prev, next becomes cur.
func (v *verifier) advance() {
	if v.haveCur {
		v.prev, v.cur, v.next = v.cur, v.next, v.prev
		v.havePrev = true
	} else {
		v.cur, v.next = v.next, v.cur
	}
	v.haveCur, v.haveNext = v.haveNext, false
}

// contentHash computes the hash of r's content at position seq (its stored prev_hash).
func (v *verifier) contentHash(r *vrow, seq int64) []byte {
	f := r.f
	f.seq = seq
	var sum [sha256.Size]byte
	sum, v.buf = chainSum(v.buf, r.prev, &f)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum[:])
	return out
}

func (v *verifier) okAt(r *vrow, seq int64) bool {
	return r.seqOK && r.timeOK && bytes.Equal(v.contentHash(r, seq), r.hash)
}

// check examines cur against prev and next.
func (v *verifier) check() *Problem {
	cur := v.cur
	expected := int64(1)
	prevHash := []byte(genesisHash)
	if v.havePrev {
		expected = v.prev.f.seq + 1
		prevHash = v.prev.hash
	}
	id := string(cur.f.id)
	if !cur.seqOK {
		return &Problem{Kind: ProblemEdited, Seq: expected, ID: id, Message: fmt.Sprintf("the record after %d is malformed (a column has an impossible value)", expected-1)}
	}
	seq := cur.f.seq
	if seq != expected {
		return &Problem{Kind: ProblemRemoved, Seq: expected,
			Message: fmt.Sprintf("records %d to %d are missing before record %d (id %s): they were removed", expected, seq-1, seq, id)}
	}
	if !v.okAt(cur, seq) {
		switch {
		case v.haveNext && v.next.seqOK && v.next.f.seq == seq+1 && v.okAt(cur, seq+1) && v.okAt(v.next, seq):
			return &Problem{Kind: ProblemReordered, Seq: seq, ID: id,
				Message: fmt.Sprintf("records %d and %d were swapped", seq, seq+1)}
		case seq > 1 && v.okAt(cur, seq-1):
			pid := ""
			if v.havePrev {
				pid = string(v.prev.f.id)
			}
			return &Problem{Kind: ProblemInserted, Seq: seq - 1, ID: pid,
				Message: fmt.Sprintf("record %d was inserted: the record after it was appended as %d and renumbered", seq-1, seq-1)}
		case v.okAt(cur, seq+1):
			return &Problem{Kind: ProblemRemoved, Seq: seq,
				Message: fmt.Sprintf("a record before record %d (id %s) was removed and the records after it renumbered", seq, id)}
		case v.haveNext && v.next.seqOK && v.okAt(v.next, seq):
			// The record after it belongs at this position: this one was slipped in.
			return &Problem{Kind: ProblemInserted, Seq: seq, ID: id,
				Message: fmt.Sprintf("record %d (id %s) was inserted: the record after it was appended as %d", seq, id, seq)}
		case !cur.timeOK:
			return &Problem{Kind: ProblemEdited, Seq: seq, ID: id, Message: fmt.Sprintf("record %d has a malformed time", seq)}
		}
		return &Problem{Kind: ProblemEdited, Seq: seq, ID: id,
			Message: fmt.Sprintf("record %d (id %s) was edited: its content does not match its hash", seq, id)}
	}
	if !bytes.Equal(cur.prev, prevHash) {
		// cur is intact but does not link to the record before it.
		if !v.havePrev {
			return &Problem{Kind: ProblemEdited, Seq: seq, ID: id,
				Message: fmt.Sprintf("record %d (id %s) does not start the chain: its prev_hash is not the genesis hash", seq, id)}
		}
		if v.haveNext && bytes.Equal(v.next.prev, cur.hash) {
			// cur is linked from its successor: the record before it changed.
			return &Problem{Kind: ProblemEdited, Seq: v.prev.f.seq, ID: string(v.prev.f.id),
				Message: fmt.Sprintf("record %d (id %s) was edited or replaced: its hash is not the one record %d links to", v.prev.f.seq, v.prev.f.id, seq)}
		}
		return &Problem{Kind: ProblemInserted, Seq: seq, ID: id,
			Message: fmt.Sprintf("record %d (id %s) was inserted: it does not link to record %d", seq, id, v.prev.f.seq)}
	}
	if v.havePrev && (cur.f.timeNS < v.prev.f.timeNS || bytes.Compare(cur.f.id, v.prev.f.id) <= 0) {
		return &Problem{Kind: ProblemReordered, Seq: seq, ID: id,
			Message: fmt.Sprintf("record %d (id %s) is out of order: its time or id is not after record %d's", seq, id, seq-1)}
	}
	for _, c := range v.bySeq[seq] {
		if c.Hash != string(cur.hash) {
			return &Problem{Kind: ProblemRewritten, Seq: seq, ID: id,
				Message: fmt.Sprintf("record %d (id %s) differs from the signed checkpoint: the chain was rewritten at or before it", seq, id)}
		}
	}
	return nil
}
