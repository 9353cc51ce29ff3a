// Package audit is cmdgate's append-only, hash-chained decision log: it stores every
// decision, execution, approval, policy load and authentication failure durably, with
// secrets masked, and lets auditors query, export and verify it.
//
// # Records
//
// A Record is one event. Its Kind is one of:
//
//   - decision: the policy decision for one request (allow, deny, ask), its reasons and
//     the policy input it was taken on;
//   - execution: the outcome of running what a decision allowed (exit code, duration,
//     truncation, byte counts; never the output itself), DecisionID naming the decision;
//   - approval: a human's answer to an ask decision, DecisionID naming it;
//   - policy_load: a policy bundle (re)load, Revision naming it, Detail saying more;
//   - auth_failure: a request refused for a missing, unknown or revoked token.
//
// The store assigns each record its position in the chain (Seq, from 1), a sortable ID
// (26 characters, ULID layout: millisecond time then randomness, Crockford base32), the
// time (UTC, never earlier than the record before), PrevHash and Hash. IDs and times
// increase along the chain.
//
// # Files
//
// Open(ctx, dir, opts) keeps everything in one data directory (created with mode 0700;
// files are created with mode 0600):
//
//   - audit.db: the chain, a SQLite database (pure Go driver, WAL mode); audit.db-wal and
//     audit.db-shm exist while it is open. This is the log.
//   - audit-index.db: the search index (rules, words, principal, decision and kind of the
//     records), derived from audit.db. Deleting it loses nothing: it is rebuilt on the
//     next read-write open, and read-only opens without it scan instead.
//   - audit.key: the ed25519 checkpoint key, PKCS #8 PEM, created on first open;
//   - audit.checkpoint: the latest signed checkpoint, JSON.
//
// and, when Options.Witness names one, a witness file elsewhere: every checkpoint
// appended as one JSON line (see Checkpoints).
//
// Options.ReadOnly opens an existing store without creating or changing anything (the
// offline `cmdgate audit` commands); a directory without audit.db is ErrNoStore, a file
// that is not an audit store ErrNotStore, one written by a newer cmdgate
// ErrSchemaTooNew.
//
// # Durability and the write-ahead rule
//
// Append returns only after the record's transaction is committed and the WAL fsync'd
// (synchronous=FULL): a record Append returned is on disk and survives a crash of the
// process or the machine. The gateway appends the decision record before anything runs
// and refuses the request when Append fails: nothing runs without a durable record of
// the decision that allowed it. When Append fails, nothing of the record is stored; the
// one exception is a context that ends after the record was handed to the writer, which
// Append reports as such ("may still be stored"): the caller must then act as if the
// record was not stored.
//
// # Concurrency
//
// A Store is safe for concurrent use. Appends go to one writer goroutine that owns the
// write connection; it takes everything queued (up to Options.MaxBatch), chains the
// records in queue order, commits them in one transaction and wakes their appenders
// (group commit: one fsync for many appends, each append still durable when it
// returns). Each commit reads the chain head inside SQLite's write lock, so several
// processes appending to one store still form one linear chain. Two more goroutines
// work beside the writer, each on its own connection: the indexer fills audit-index.db
// (a separate file, so that SQLite's one-writer-per-file lock does not make appends
// wait for indexing), and the checkpointer copies the WAL into audit.db. Appenders
// validate, mask and encode their records on their own goroutines. Readers (Query,
// Export, Verify, Get) read consistent snapshots beside all of them. Close drains the
// queue, writes a shutdown checkpoint, lets the indexer catch up, and waits for the
// three goroutines.
//
// # Canonical encoding
//
// The hash of a record covers its canonical encoding: the JSON object below, encoded
// per RFC 8785 (JSON Canonicalization Scheme: members sorted by their names' UTF-16 code
// units, no white space, strings with only '"', '\' and U+0000..U+001F escaped,
// control characters as \b \t \n \f \r or \u00xx with lowercase hex, everything else as
// UTF-8, numbers as ECMAScript prints doubles), with exactly these members:
//
//	decision     string   the action ("" when none)
//	decision_id  string   the decision an execution or approval refers to ("" otherwise,
//	                      a decision record included: its JSON and export forms show
//	                      its own id there, the hash covers "")
//	detail       any      the kind-specific detail, null when none
//	execution    object   {duration_ms, error, exit_code, stderr_bytes, stderr_truncated,
//	                      stdout_bytes, stdout_truncated, timed_out}, null when none
//	id           string   the record id
//	input        any      the policy input (secrets masked), null when none
//	kind         string
//	principal    object   {name, role}
//	reasons      array    of {command (integer or null), message, rule}; [] when none
//	request_id   string
//	revision     string   the policy bundle revision
//	seq          integer  the position in the chain, from 1
//	time         string   UTC, RFC 3339 with exactly nine fractional digits and "Z",
//	                      e.g. "2030-01-02T03:04:05.000000006Z"
//	v            integer  1, the version of this encoding
//
// and
//
//	hash = lowercase hex of SHA-256( prev_hash || "\n" || canonical )
//
// where prev_hash is the 64 hex digits of the previous record's hash, and 64 zeros for
// the first record. Input and Detail are stored in canonical form, so the stored text
// is part of the hashed bytes as is.
//
// # Verifying the chain with your own tool
//
// From `cmdgate audit export` (JSON lines, oldest first, every record), for each line in
// order:
//
//  1. Rebuild the canonical object: seq, id, kind, principal, input, execution and
//     detail from the line's fields of those names (absent means null); time from
//     "timestamp"; request_id from "request_id" (absent: ""); decision_id from
//     "decision_id" except for kind "decision", where it is "" (the line's decision_id is
//     the record's own id); decision and reasons from result.action and result.reasons
//     (absent: "" and []); revision from bundles.cmdgate.revision (absent: ""); v = 1.
//  2. Encode it per RFC 8785 and compute the hash as above, with prev_hash the hash of
//     the line before (64 zeros for seq 1).
//  3. Check that the computed hash equals the line's "hash", that the line's "prev_hash"
//     equals the previous line's "hash", and that seq is the previous seq plus one.
//  4. Check every checkpoint you hold (see below): the line at its seq has its hash, and
//     the export reaches its seq.
//
// The test TestIndependentVerificationOfExport does exactly this with its own encoder.
// Store.Verify (`cmdgate audit verify`) does the same on the database and also names
// the first record that was edited (its content no longer matches its hash, or its hash
// was recomputed and the next record's link no longer matches), removed (a gap in seq,
// or the records after it renumbered), inserted (a record that does not belong between
// its neighbours) or reordered (records swapped, or time or id going backwards), and
// checks the checkpoints.
//
// # Checkpoints
//
// Every Options.CheckpointEvery records (default 1000), Options.CheckpointInterval
// (default 5 s) after records were appended that no checkpoint covers yet, and on
// Close, the writer signs the head with the ed25519 key in audit.key and stores the
// checkpoint in the database, in audit.checkpoint and, with Options.Witness, as a line
// appended to the witness file. The signed message is exactly
//
//	"cmdgate-audit-checkpoint v1\nseq <seq>\nhash <hash>\ntime <time>\n"
//
// (the record's seq in decimal, its hash, its canonical time), the signature is base64
// (standard, padded), and the key id is the first 16 hex digits of SHA-256 over the raw
// 32-byte public key. `cmdgate audit pubkey` prints the public key as a PEM "PUBLIC KEY"
// (PKIX) block, which openssl reads. Verify checks each checkpoint's signature, that the
// chain still has the checkpointed hash at its seq (a consistent but rewritten chain is
// "rewritten"), and that the chain reaches it ("truncated": records were removed from the
// end).
//
// The tail. Records that follow the last checkpoint could be cut without a checkpoint
// noticing; Verify counts them (VerifyResult.Unsealed). The timer keeps that window to
// CheckpointInterval while the writer runs, and Close seals the head and, in the same
// transaction, marks the store as shut down cleanly at it (the state table,
// clean_shutdown_seq). After a clean shutdown no record is unsealed, so: a chain that
// ends before the mark is "truncated" (records and their checkpoint removed), and with
// VerifyOptions.Strict (`cmdgate audit verify --strict`) records after the last
// checkpoint of a cleanly shut down store are "unsealed_tail" (the tail's checkpoints
// removed). A crash leaves up to CheckpointInterval of records unsealed and no mark:
// they are counted, never a failure, since a crash is not tampering.
//
// What the data directory cannot prove about itself: someone who can write it can also
// read audit.key, edit the mark, rewrite the chain and sign new checkpoints, or put back
// an old copy of the whole directory. Against that, keep evidence outside it:
//
//   - the witness (Options.Witness, `audit.witness`): a file the gateway can append to
//     but not rewrite (on another file system or machine, or made append-only with
//     `chattr +a`, which only root can undo). Verify with VerifyOptions.Witness
//     (`--witness FILE`) checks every checkpoint in it: a rolled-back directory, a
//     deleted database ("truncated", "rewritten") or a replaced key ("bad_signature") no
//     longer matches it;
//   - the public key and checkpoints an auditor saved: `cmdgate audit verify` prints the
//     last checkpoint; pass saved ones back with --checkpoint and the public key with
//     --pubkey.
//
// # Masking
//
// Before anything is stored, Append masks secrets in the input, the detail, the reason
// messages and the execution error, replacing each secret value by Marker ("****");
// values are replaced, never hashed. MaskOptions documents the rules and
// DefaultSecretNames, DefaultSecretFlags and DefaultValuePrefixes the default patterns:
// values of variables, JSON members, options, headers and query parameters named like
// *TOKEN*, *SECRET*, *PASSWORD*, *KEY*, *CREDENTIAL*, *AUTHORIZATION*, *COOKIE*,
// *SESSION*, ...; Authorization and Cookie headers; credentials in URLs; --token value
// pairs; options such as sshpass -p and mysql -pSECRET; well-known token formats
// (ghp_..., xoxb-..., AKIA...); PEM private keys; and every other occurrence of a value
// found that way. The masked values never reach the data directory (the database, its
// WAL, the search index). Masking cannot recognise a secret that nothing marks as one
// (a password typed as a bare argument of an unknown tool, or piped on stdin).
//
// A caller that appends many records of one input but for its request id (the gateway,
// for a command an agent repeats) can prepare the input once (Store.PrepareInput) and
// give the template instead of the input (Record.InputTemplate): the record is stored
// byte for byte as with the whole input, with RequestID at request.id, without parsing
// and masking the input again. Where the rest of the record holds a secret that masking
// would also replace in the input, or the id is one, the input is prepared from scratch.
//
// # Search
//
// Query filters by time range, principal, decision, kind, rule and free text, newest
// first, with an opaque cursor; Export streams the same selection oldest first as JSON
// lines with OPA decision-log field names (ExportLine). Free text matches records that
// contain every word of the text (runs of letters, digits and marks, case-insensitive);
// a word followed by '*' matches the words it begins (slower for a short, common
// prefix: the index merges the postings of every word it begins). Id and time are found
// by binary search over the chain (both increase along it); rules, words, principal,
// decision and kind are indexed in audit-index.db by the indexer, in bulk (a chunk at a
// time, and whatever is left once appends pause), so that an append writes the chain's
// pages and no index pages. Records the index does not hold yet are matched by scanning
// them, so results are the same either way. A query with both a rule and text is driven
// by whichever of the two indexes selects fewer records, and one on several of
// principal, decision and kind by the one that selects fewest. The search index and the
// search columns of audit.db are derived data: they are not covered by the hash, and
// tampering with them can only hide records from search, which Verify does not report.
package audit
