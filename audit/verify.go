package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
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
}

// VerifyResult is the outcome of Verify. OK is false exactly when Problem is set.
type VerifyResult struct {
	OK      bool  `json:"ok"`
	Records int64 `json:"records"`
	Head    *Head `json:"head"`
	// Checkpoints is how many signed checkpoints were checked.
	Checkpoints    int         `json:"checkpoints"`
	LastCheckpoint *Checkpoint `json:"last_checkpoint,omitempty"`
	KeyID          string      `json:"key_id,omitempty"`
	Problem        *Problem    `json:"problem,omitempty"`
}

// Verify walks the whole chain in order and reports the first record that was edited,
// removed, inserted or reordered, and checks every signed checkpoint (the checkpoints
// table, the audit.checkpoint file, opts.Checkpoints): its signature, that the chain
// still has its hash at its position, and that the chain reaches it (truncation). It
// reads one consistent snapshot, so it can run while others append. The error is for
// failures to read; a broken chain is a result with OK false.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) (*VerifyResult, error) {
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

	rows, err = tx.QueryContext(ctx, `SELECT `+verifyColumns+` FROM records ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("verify: read records: %w", err)
	}
	defer rows.Close()
	v := newVerifier(bySeq)
	for rows.Next() {
		if err := v.next.scan(rows); err != nil {
			return nil, fmt.Errorf("verify: read records: %w", err)
		}
		v.haveNext = true
		if v.haveCur {
			if p := v.check(); p != nil {
				res.Problem = p
				return v.finish(res), nil
			}
		}
		v.advance()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("verify: read records: %w", err)
	}
	v.haveNext = false
	if v.haveCur {
		if p := v.check(); p != nil {
			res.Problem = p
			return v.finish(res), nil
		}
		v.advance()
	}
	v.finish(res)
	if maxCP != nil && maxCP.Seq > v.lastSeq {
		res.Problem = &Problem{Kind: ProblemTruncated, Seq: v.lastSeq + 1,
			Message: fmt.Sprintf("the chain ends at record %d but a signed checkpoint covers record %d: the records after %d were removed", v.lastSeq, maxCP.Seq, v.lastSeq)}
		res.OK = false
		return res, nil
	}
	res.OK = true
	return res, nil
}

const verifyColumns = `seq, id, time_ns, kind, principal, role, request_id, decision_id, decision, revision, input, reasons, execution, detail, prev_hash, hash`

// vrow is one record as stored, its bytes owned (copied out of the driver's buffers).
type vrow struct {
	f      canonicalFields[[]byte]
	seqOK  bool
	timeOK bool
	prev   []byte
	hash   []byte
	raw    [16]sql.RawBytes
	dst    []any
	bufs   [16][]byte
}

func (r *vrow) scan(rows *sql.Rows) error {
	if r.dst == nil {
		r.dst = make([]any, 16)
		for i := range r.raw {
			r.dst[i] = &r.raw[i]
		}
	}
	if err := rows.Scan(r.dst...); err != nil {
		return err
	}
	for i := range r.raw {
		r.bufs[i] = append(r.bufs[i][:0], r.raw[i]...)
	}
	b := &r.bufs
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
	lastSeq, count              int64
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
		v.count++
		v.lastSeq = v.prev.f.seq
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
		return &Problem{Kind: ProblemEdited, Seq: expected, ID: id, Message: fmt.Sprintf("the record after %d has a malformed seq", expected-1)}
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

// finish fills the record count and head from the last record that checked out.
func (v *verifier) finish(res *VerifyResult) *VerifyResult {
	res.Records = v.count
	if v.havePrev {
		res.Head = &Head{Seq: v.prev.f.seq, ID: string(v.prev.f.id), Hash: string(v.prev.hash), Time: formatTime(v.prev.f.timeNS)}
	}
	return res
}
