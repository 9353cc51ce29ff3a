package audit

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// File names inside the data directory.
const (
	DBFile         = "audit.db"
	KeyFile        = "audit.key"        // ed25519 private key, PKCS #8 PEM, mode 0600
	CheckpointFile = "audit.checkpoint" // the latest signed checkpoint, JSON
)

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// ReadOnly opens an existing store for query, verify and export only: nothing is
	// created or written, Append returns ErrReadOnly, and a directory without audit.db
	// gives ErrNoStore.
	ReadOnly bool
	// CheckpointEvery is how many records pass between signed checkpoints; 0 means
	// 1000, a negative value disables periodic checkpoints (Close still writes one).
	CheckpointEvery int
	// CheckpointInterval is how soon after records were appended the writer signs a
	// checkpoint of the head, so that no record stays outside a signed checkpoint for
	// longer; 0 means 5 s, a negative value disables timed checkpoints.
	CheckpointInterval time.Duration
	// Witness, when set, is a file every checkpoint is also appended to (one JSON line
	// each, the form of audit.checkpoint): a place apart from the data directory that
	// the gateway can append to but not rewrite (another file system, a file made
	// append-only with `chattr +a`, a FIFO read by a log shipper). Verify reads it (with
	// VerifyOptions.Witness): deleting or rolling back the database and its
	// checkpoints together is then detected. Open fails when it cannot be opened for
	// appending.
	Witness string
	// OnError receives the errors of the checkpoint copies that are not the database's
	// own (audit.checkpoint, the witness): they do not fail appends, and nil ignores
	// them.
	OnError func(error)
	// MaxBatch caps how many appends one group commit takes; 0 means 1024.
	MaxBatch int
	// MaxInputBytes caps the size of Input and of Detail; 0 means 1 MiB.
	MaxInputBytes int
	// Mask configures secret masking (MaskOptions; the zero value uses the defaults).
	Mask MaskOptions
	// Now is the clock; nil means time.Now. Record times never go backwards along the
	// chain whatever it returns.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.CheckpointEvery == 0 {
		o.CheckpointEvery = 1000
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = 5 * time.Second
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = 1 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Store is the audit log of one data directory. All methods are safe for concurrent
// use. Several processes may open the same store; appends from all of them form one
// chain (each group commit reads the head inside SQLite's write lock).
type Store struct {
	dir    string
	opts   Options
	db     *sql.DB // the chain (audit.db): the writer, the checkpointer, Verify, Get
	sdb    *sql.DB // the search index (audit-index.db) with the chain attached: queries
	masker *Masker
	priv   ed25519.PrivateKey // nil when read-only
	pub    ed25519.PublicKey  // nil when read-only and the key file is missing

	mu     sync.RWMutex // held for reading while enqueueing, for writing by Close
	closed bool

	queue    chan *appendReq
	stop     chan struct{} // closed by Close: no more sends on queue
	done     chan struct{} // closed by the writer when it has exited
	closeErr error         // the writer's shutdown error, read after done

	kick     chan struct{} // wakes the checkpointer; capacity 1
	ckptDone chan struct{} // closed when the checkpointer has exited

	witness *os.File // Options.Witness opened for appending; nil when none

	ixKick  chan struct{}   // wakes the indexer; capacity 1
	ixFlush chan chan error // flushIndex requests
	ixDone  chan struct{}   // closed when the indexer has exited
	ixErr   error           // the indexer's last error, read after ixDone
	// unindexed approximates the records committed and not yet indexed (this
	// process's commits; other processes' are caught when idle).
	unindexed atomic.Int64
	// appending counts the Append calls under way, from their start to their return:
	// the writer waits for those it does not have yet.
	appending atomic.Int64

	// indexPaused stops the indexer's own indexing (flushIndex and Close still index),
	// so that tests can reach a state with a not yet indexed tail.
	indexPaused atomic.Bool
}

type appendReq struct {
	p    *prepared
	rec  Record
	err  error
	done chan struct{}
}

// Open opens the audit store in dir, creating the directory (mode 0700), the database
// and the checkpoint key when they do not exist, unless opts.ReadOnly is set. ctx bounds
// the opening only; the store lives until Close.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	opts.setDefaults()
	masker, err := NewMasker(opts.Mask)
	if err != nil {
		return nil, fmt.Errorf("open audit store: %w", err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open audit store %s: %w", dir, err)
	}
	dbPath := filepath.Join(dir, DBFile)
	if opts.ReadOnly {
		st, err := os.Stat(dbPath)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s", ErrNoStore, dir)
		}
		if err != nil {
			return nil, fmt.Errorf("open audit store %s: %w", dir, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %w (not a regular file)", dbPath, ErrNotStore)
		}
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create audit directory %s: %w", dir, err)
		}
		// Create the file ourselves, mode 0600: SQLite would use 0644, and gives the WAL
		// and shared-memory files the mode of the database file.
		if err := createFile(dbPath); err != nil {
			return nil, err
		}
	}

	s := &Store{dir: dir, opts: opts, masker: masker}
	s.db, err = sql.Open("sqlite", dsn(dbPath, opts.ReadOnly))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	s.db.SetMaxOpenConns(8)
	s.db.SetMaxIdleConns(8)
	if err := s.init(ctx, dbPath); err != nil {
		s.db.Close()
		return nil, err
	}
	if err := s.openIndex(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	if opts.ReadOnly {
		if s.pub, err = readPublicKey(filepath.Join(dir, KeyFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.closeDBs()
			return nil, err
		}
		return s, nil
	}
	if s.priv, err = loadOrCreateKey(filepath.Join(dir, KeyFile)); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.pub = s.priv.Public().(ed25519.PublicKey)
	if opts.Witness != "" {
		if s.witness, err = openWitness(opts.Witness); err != nil {
			s.closeDBs()
			return nil, err
		}
	}

	// The writer, the checkpointer and the indexer each own one connection for as long
	// as the store is open.
	var conns [3]*sql.Conn
	for i, db := range []*sql.DB{s.db, s.db, s.sdb} {
		if conns[i], err = db.Conn(ctx); err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			s.closeWitness()
			s.closeDBs()
			return nil, fmt.Errorf("open %s: %w", dbPath, err)
		}
	}
	w, err := newWriter(ctx, s, conns[0])
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		s.closeWitness()
		s.closeDBs()
		return nil, err
	}
	// The three goroutines' context is never done: Close stops them through s.stop and
	// waits for them. With a context that can be done, the SQLite driver starts a
	// goroutine for every statement run on it, to interrupt the statement when the
	// context ends: four for each commit.
	wctx := context.WithoutCancel(ctx)
	s.queue = make(chan *appendReq, opts.MaxBatch)
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	s.kick = make(chan struct{}, 1)
	s.ckptDone = make(chan struct{})
	s.ixKick = make(chan struct{}, 1)
	s.ixFlush = make(chan chan error)
	s.ixDone = make(chan struct{})
	go s.run(wctx, w)
	go s.checkpointer(wctx, conns[1])
	go s.indexer(wctx, conns[2])
	return s, nil
}

// closeDBs closes the connection pools.
func (s *Store) closeDBs() error {
	var errs []error
	if s.sdb != nil {
		errs = append(errs, s.sdb.Close())
	}
	return errors.Join(append(errs, s.db.Close())...)
}

// dsn builds the SQLite URI. Every connection gets a busy timeout (another process may
// hold the write lock for a commit); writers get WAL and synchronous=FULL, which makes
// every commit durable (fsync of the WAL) before it returns.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	// Readers map the file instead of copying pages through read(2); writes still
	// go through the WAL with write(2) and fsync.
	q.Add("_pragma", "mmap_size(1073741824)")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		// Statement journals of multi-row inserts stay in memory instead of spilling to
		// a temporary file.
		q.Add("_pragma", "temp_store(MEMORY)")
		// Commits do not checkpoint the WAL into the database file themselves: the
		// store's checkpointer goroutine does, beside the writer (checkpointer.go).
		q.Add("_pragma", "wal_autocheckpoint(0)")
	}
	return fileURI(path, q)
}

// init checks the file is an audit store and creates the schema in an empty one.
func (s *Store) init(ctx context.Context, dbPath string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		if isNotADB(err) {
			return fmt.Errorf("%s: %w", dbPath, ErrNotStore)
		}
		return fmt.Errorf("open %s: %w", dbPath, err)
	}
	defer conn.Close()
	empty, err := checkSchema(ctx, conn, dbPath)
	if err != nil || !empty {
		return err
	}
	if s.opts.ReadOnly {
		return fmt.Errorf("%w in %s (audit.db is empty)", ErrNoStore, s.dir)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("create audit store %s: %w", dbPath, err)
	}
	// Another process may have created it meanwhile.
	if empty, err = checkSchema(ctx, conn, dbPath); err == nil && empty {
		err = createSchema(ctx, conn)
	}
	if err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return fmt.Errorf("create audit store %s: %w", dbPath, err)
	}
	return syncDir(s.dir)
}

// checkOpen returns ErrClosed once Close was called.
func (s *Store) checkOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Dir returns the data directory of the store.
func (s *Store) Dir() string { return s.dir }

// Append masks r, chains it after the current head and stores it. It returns the
// stored record (with Seq, ID, Time, PrevHash and Hash, and its masked Input) only once
// it is durable: its transaction is committed and the WAL fsync'd. Concurrent appends
// are committed together (group commit). On any error nothing of r is stored, except
// when ctx ends after r was handed to the writer: the error then says the record may
// still be stored, and the caller must act as if it was not (not run anything).
func (s *Store) Append(ctx context.Context, r Record) (Record, error) {
	s.appending.Add(1)
	defer s.appending.Add(-1)
	if s.opts.ReadOnly {
		return Record{}, ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("append %s record: %w", r.Kind, err)
	}
	p, err := s.prepare(r)
	if err != nil {
		return Record{}, err
	}
	req := &appendReq{p: p, done: make(chan struct{})}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return Record{}, ErrClosed
	}
	select {
	case s.queue <- req:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return Record{}, fmt.Errorf("append %s record: %w", r.Kind, ctx.Err())
	}
	select {
	case <-req.done:
		return req.rec, req.err
	case <-ctx.Done():
		return Record{}, fmt.Errorf("append %s record: %w (the record may still be stored)", r.Kind, ctx.Err())
	}
}

// Close stops accepting appends, lets the writer commit what is queued, brings the
// search indexes up to date, writes a shutdown checkpoint and closes the database. If ctx ends first, Close returns its
// error and the writer finishes in the background.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	var err error
	if !s.opts.ReadOnly {
		close(s.stop)
		// The writer exits first; the checkpointer and the indexer (which indexes what
		// is left) follow it.
		for _, done := range []chan struct{}{s.done, s.ckptDone, s.ixDone} {
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("close audit store %s: %w", s.dir, ctx.Err())
			}
		}
		err = errors.Join(s.closeErr, s.ixErr, s.closeWitness())
	}
	if cerr := s.closeDBs(); cerr != nil && err == nil {
		err = fmt.Errorf("close audit store %s: %w", s.dir, cerr)
	}
	return err
}

// syncDir fsyncs a directory so that files created in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
