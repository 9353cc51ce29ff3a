package audit

import (
	"context"
	"database/sql"
	"time"
)

// ckptEvery is how many committed records make the writer wake the checkpointer.
//
// Small, so that a checkpoint often catches up with the writer: once it has copied the
// whole WAL, the next commit starts the WAL over and writes over frames already on
// disk. A commit that grows the WAL file makes its fsync write the file's new size too
// (a journal commit of the file system), and under steady load a WAL that never starts
// over grows without end. Against 1000, measured on a 2-core VM in alternating runs:
// BenchmarkAppend/c64 24,900–26,500 → 26,900–28,800 records/s with a WAL that starts
// over (wal-KB/record 0.04–0.14), c1 0.40–0.47 → 0.28–0.37 ms per durable record (its
// WAL still mostly grows: a lone appender rarely leaves the checkpointer a moment to
// finish), and the WAL after 10 s of 64 connections of /v1/decide 397 → 8 MB.
const ckptEvery = 100

// checkpointer copies the WAL into the database file (a PASSIVE checkpoint, which
// never blocks the writer or readers) when the writer kicks it, and at least every few
// seconds. Doing it here rather than in the committing connection (SQLite's
// autocheckpoint) takes the work off the writer goroutine, whose speed bounds append
// throughput. It exits when the writer has (s.done), and the last connection to close
// then checkpoints what is left.
func (s *Store) checkpointer(ctx context.Context, conn *sql.Conn) {
	defer close(s.ckptDone)
	defer conn.Close()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.kick:
		case <-tick.C:
		case <-s.done:
			return
		}
		// Best effort: a checkpoint that cannot complete (a long reader holds old
		// frames) leaves the WAL longer, never wrong.
		conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	}
}

// kickCheckpointer wakes the checkpointer without waiting.
func (s *Store) kickCheckpointer() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
