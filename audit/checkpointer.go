package audit

import (
	"context"
	"database/sql"
	"time"
)

// ckptEvery is how many committed records make the writer wake the checkpointer.
const ckptEvery = 1000

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
