package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cmdgate/cmdgate/audit"
)

const auditUsage = `usage: cmdgate audit <command> [flags]

Offline tools for the audit log in the data directory (--data, $CMDGATE_DATA,
$XDG_DATA_HOME/cmdgate, ~/.local/share/cmdgate). They never create a store: a directory
without one is an error. They can run while the gateway appends.

commands:
  query    one page of records, newest first, as one JSON object {records, next_cursor}
           flags: --since T --until T --principal P --decision D --kind K --rule R
                  -q TEXT --limit N (default 50, at most 1000) --cursor C
  verify   walk the hash chain and check the signed checkpoints; exits 1 and names the
           first broken record when the log was tampered with
           flags: --pubkey FILE (an auditor's copy of the public key)
                  --checkpoint FILE (a checkpoint saved earlier; repeatable)
                  --witness FILE (the witness file of audit.witness)
                  --strict (records after the last checkpoint of a cleanly shut down
                  store are a failure, not only counted)
  export   every matching record as JSON lines, oldest first (one record per line, OPA
           decision-log field names); the same filters as query, --limit N (0: all)
  pubkey   the checkpoint public key (PEM, PKIX) with its key id; --out FILE writes the PEM
  append   append the records given as JSON lines on stdin (the record form query prints;
           seq, id, time and hashes are assigned anew, secrets masked). For importing
           events from other tools and for tests; creates the store if there is none.

-q TEXT matches records containing every word of TEXT (letters and digits, any case);
a word followed by * matches the words it begins: -q 'curl kube*'.
T is RFC 3339 (2030-01-02T15:04:05Z), a date (2030-01-02, UTC) or a duration before now
(24h, 90m).`

// auditSubUsage describes each audit subcommand for its -h.
var auditSubUsage = map[string]string{
	"query": "One page of records, newest first, as one JSON object {records, next_cursor}.\n" +
		"-q TEXT matches records containing every word of TEXT; a word followed by * matches\n" +
		"the words it begins. T is RFC 3339, a date (UTC) or a duration before now (24h).\n",
	"verify": "Walks the hash chain and checks the signed checkpoints. Exits 1 and names the first\n" +
		"broken record when the log was edited, cut, reordered or rolled back. Prints how many\n" +
		"records follow the last checkpoint (unsealed) and whether the gateway shut down\n" +
		"cleanly; --strict fails when it did and records are unsealed. --witness FILE checks\n" +
		"the checkpoints the gateway appended there too (audit.witness), which a rollback or a\n" +
		"deletion of the data directory cannot take back.\n",
	"export": "Every matching record as JSON lines, oldest first, with OPA decision-log field\n" +
		"names; the filters of query, and --limit N (0: all).\n",
	"pubkey": "The public key that signs the checkpoints (PEM, PKIX) and its key id.\n",
	"append": "Appends the records given as JSON lines on stdin (the form query prints; seq, id,\n" +
		"time and hashes are assigned anew, secrets masked). Creates the store if there is none.\n",
}

// runAudit implements `cmdgate audit query|verify|export|pubkey|append`.
func (m *Main) runAudit(ctx context.Context, args []string) int {
	if code, done := m.groupHelp(args, func(w io.Writer) { fmt.Fprintln(w, auditUsage) }); done {
		return code
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "query", "verify", "export", "pubkey", "append":
	default:
		fmt.Fprintf(m.Stderr, "cmdgate audit: unknown command %q (query, verify, export, pubkey, append)\n", sub)
		return exitUsage
	}
	typ := "audit." + sub // audit.query, audit.verify, ...: noun.verb like every CLI answer
	fs := flag.NewFlagSet("audit "+sub, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cmdgate audit %s [flags]\n\n%s\nflags:\n", sub, auditSubUsage[sub])
		fs.PrintDefaults()
	}
	data := fs.String("data", "", "data directory (default: $CMDGATE_DATA, $XDG_DATA_HOME/cmdgate, ~/.local/share/cmdgate)")
	var qf queryFlags
	if sub == "query" || sub == "export" {
		qf.register(fs, sub)
	}
	var pubkey, out *string
	var vf verifyFlags
	switch sub {
	case "verify":
		pubkey = fs.String("pubkey", "", "verify the checkpoints with this public key (PEM), an auditor's own copy")
		fs.Var(&vf.checkpoints, "checkpoint", "a checkpoint saved earlier (JSON file) the log must still hold; repeatable")
		fs.StringVar(&vf.witness, "witness", "", "the witness file the gateway appends every checkpoint to (audit.witness); each must verify and match the log")
		fs.BoolVar(&vf.strict, "strict", false, "fail when records follow the last checkpoint although the gateway shut down cleanly")
	case "pubkey":
		out = fs.String("out", "", "write the public key (PEM) to this file as well")
	}
	if pubkey == nil {
		pubkey = new(string)
	}
	if out == nil {
		out = new(string)
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(operands) != 0 {
		fmt.Fprintf(m.Stderr, "cmdgate audit %s: unexpected argument %q\n", sub, operands[0])
		return exitUsage
	}
	dir, err := m.dataDir(*data)
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	var q audit.Query
	if sub == "query" || sub == "export" {
		if q, err = qf.query(time.Now()); err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
		}
	}

	store, err := audit.Open(ctx, dir, audit.Options{ReadOnly: sub != "append"})
	if errors.Is(err, audit.ErrNoStore) && vf.witness != "" {
		// The log is gone: the witness says whether there was one.
		cps, werr := audit.ReadWitness(vf.witness)
		if werr != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", werr.Error())
		}
		if len(cps) > 0 {
			return m.writeError(typ, "CHAIN_BROKEN", fmt.Sprintf("%v, but the witness %s holds %d checkpoints, the last of record %d: the audit log was deleted", err, vf.witness, len(cps), cps[len(cps)-1].Seq))
		}
	}
	if err != nil {
		return m.auditError(typ, err)
	}
	defer store.Close(context.WithoutCancel(ctx))

	switch sub {
	case "query":
		page, err := store.Query(ctx, q)
		if err != nil {
			return m.auditError(typ, err)
		}
		return m.writeResult(typ, page)
	case "export":
		// Export writes JSON lines, not one envelope: a failure after the first line goes
		// to stderr only, with exit status 1.
		n, err := store.Export(ctx, m.Stdout, q)
		if err != nil {
			if n == 0 {
				return m.auditError(typ, err)
			}
			fmt.Fprintf(m.Stderr, "cmdgate audit export: after %d records: %v\n", n, err)
			return exitError
		}
		return exitOK
	case "pubkey":
		return m.auditPubkey(typ, store, *out)
	case "verify":
		return m.auditVerify(ctx, typ, store, *pubkey, vf)
	case "append":
		return m.auditAppend(ctx, typ, store)
	}
	return exitUsage
}

// auditError maps an audit error to the CLI envelope.
func (m *Main) auditError(typ string, err error) int {
	code := "INTERNAL"
	var re *audit.RecordError
	switch {
	case errors.Is(err, audit.ErrNoStore):
		code = "NOT_FOUND"
	case errors.Is(err, audit.ErrNotStore), errors.Is(err, audit.ErrSchemaTooNew), errors.Is(err, audit.ErrNoKey):
		code = "FAILED_PRECONDITION"
	case errors.Is(err, audit.ErrInvalidQuery), errors.Is(err, audit.ErrBadWitness), errors.As(err, &re):
		code = "INVALID_ARGUMENT"
	}
	return m.writeError(typ, code, err.Error())
}

func (m *Main) auditPubkey(typ string, store *audit.Store, out string) int {
	pub := store.PublicKey()
	if pub == nil {
		return m.writeError(typ, "FAILED_PRECONDITION", fmt.Sprintf("no %s in %s", audit.KeyFile, store.Dir()))
	}
	pemBytes, err := audit.MarshalPublicKey(pub)
	if err != nil {
		return m.writeError(typ, "INTERNAL", err.Error())
	}
	if out != "" {
		if err := os.WriteFile(out, pemBytes, 0o644); err != nil {
			return m.writeError(typ, "INTERNAL", fmt.Sprintf("write public key: %v", err))
		}
	}
	return m.writeResult(typ, struct {
		Algorithm string `json:"algorithm"`
		KeyID     string `json:"key_id"`
		PublicKey string `json:"public_key"`
		File      string `json:"file,omitempty"`
	}{"ed25519", audit.KeyID(pub), string(pemBytes), out})
}

// verifyFlags are the flags of `cmdgate audit verify` beside --pubkey.
type verifyFlags struct {
	checkpoints stringList
	witness     string
	strict      bool
}

func (m *Main) auditVerify(ctx context.Context, typ string, store *audit.Store, pubkeyFile string, vf verifyFlags) int {
	opts := audit.VerifyOptions{Witness: vf.witness, Strict: vf.strict}
	if pubkeyFile != "" {
		data, err := os.ReadFile(pubkeyFile)
		if err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", fmt.Sprintf("read public key: %v", err))
		}
		if opts.PublicKey, err = audit.ParsePublicKey(data); err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", fmt.Sprintf("%s: %v", pubkeyFile, err))
		}
	}
	for _, f := range vf.checkpoints {
		c, err := audit.ReadCheckpointFile(f)
		if err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
		}
		opts.Checkpoints = append(opts.Checkpoints, c)
	}
	res, err := store.Verify(ctx, opts)
	if err != nil {
		return m.auditError(typ, err)
	}
	// The envelope's ok is the result's ok.
	out := struct {
		Records            int64             `json:"records"`
		Head               *audit.Head       `json:"head"`
		Checkpoints        int               `json:"checkpoints"`
		LastCheckpoint     *audit.Checkpoint `json:"last_checkpoint,omitempty"`
		WitnessCheckpoints int               `json:"witness_checkpoints"`
		Unsealed           int64             `json:"unsealed"`
		CleanShutdown      bool              `json:"clean_shutdown"`
		KeyID              string            `json:"key_id,omitempty"`
		Problem            *audit.Problem    `json:"problem,omitempty"`
	}{res.Records, res.Head, res.Checkpoints, res.LastCheckpoint, res.WitnessCheckpoints, res.Unsealed, res.CleanShutdown, res.KeyID, res.Problem}
	if res.OK {
		return m.writeResult(typ, out)
	}
	// The chain is broken: the envelope says so (ok false, error CHAIN_BROKEN) and still
	// carries the result, so that the auditor sees what checked out and where it stopped.
	p := res.Problem
	msg := fmt.Sprintf("audit log in %s is broken at record %d (%s): %s", store.Dir(), p.Seq, p.Kind, p.Message)
	body, err := json.Marshal(out)
	if err != nil {
		return m.writeError(typ, "INTERNAL", err.Error())
	}
	head, _ := json.Marshal(struct {
		SchemaVersion int      `json:"schema_version"`
		OK            bool     `json:"ok"`
		Type          string   `json:"type"`
		Error         cliError `json:"error"`
	}{schemaVersion, false, typ, cliError{Code: "CHAIN_BROKEN", Message: msg}})
	line := append(head[:len(head)-1], ',')
	line = append(line, body[1:]...)
	m.Stdout.Write(append(line, '\n'))
	fmt.Fprintf(m.Stderr, "cmdgate %s: %s\n", typ, msg)
	return exitError
}

func (m *Main) auditAppend(ctx context.Context, typ string, store *audit.Store) int {
	sc := bufio.NewScanner(m.Stdin)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var n int
	var last audit.Record
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal([]byte(text), &r); err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", fmt.Sprintf("stdin line %d: %v (%d records appended before it)", line, err, n))
		}
		got, err := store.Append(ctx, r)
		if err != nil {
			m.auditError(typ, fmt.Errorf("stdin line %d: %w (%d records appended before it)", line, err, n))
			return exitError
		}
		n++
		last = got
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return m.writeError(typ, "INVALID_ARGUMENT", fmt.Sprintf("read stdin: %v (%d records appended)", err, n))
	}
	result := struct {
		Appended int         `json:"appended"`
		Head     *audit.Head `json:"head,omitempty"`
	}{Appended: n}
	if n > 0 {
		result.Head = &audit.Head{Seq: last.Seq, ID: last.ID, Hash: last.Hash, Time: last.Time.UTC().Format(audit.TimeLayout)}
	}
	return m.writeResult(typ, result)
}

// queryFlags are the filters of query and export.
type queryFlags struct {
	since, until, principal, decision, kind, rule, text, cursor *string
	limit                                                       *int
}

func (f *queryFlags) register(fs *flag.FlagSet, sub string) {
	f.since = fs.String("since", "", "records at or after T")
	f.until = fs.String("until", "", "records before T")
	f.principal = fs.String("principal", "", "principal name")
	f.decision = fs.String("decision", "", "decision: allow, deny, ask, ...")
	f.kind = fs.String("kind", "", "kind: decision, execution, approval, grant, job, policy_load, auth_failure")
	f.rule = fs.String("rule", "", "a rule among the reasons")
	f.text = fs.String("q", "", "free text: every word must occur; word* matches the words it begins")
	f.cursor = fs.String("cursor", "", "continue after the page that returned this next_cursor")
	def := 0
	if sub == "query" {
		def = audit.DefaultLimit
	}
	f.limit = fs.Int("limit", def, "page size")
}

func (f *queryFlags) query(now time.Time) (audit.Query, error) {
	q := audit.Query{Principal: *f.principal, Decision: *f.decision, Kind: audit.Kind(*f.kind),
		Rule: *f.rule, Text: *f.text, Limit: *f.limit, Cursor: *f.cursor}
	var err error
	if q.Since, err = parseWhen(*f.since, now); err != nil {
		return q, fmt.Errorf("--since: %w", err)
	}
	if q.Until, err = parseWhen(*f.until, now); err != nil {
		return q, fmt.Errorf("--until: %w", err)
	}
	return q, nil
}

// parseWhen reads RFC 3339, a date (UTC) or a duration before now; "" is zero.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339, YYYY-MM-DD, or a duration such as 24h)", s)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
