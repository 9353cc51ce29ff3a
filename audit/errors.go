package audit

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is; the messages of wrapped errors name the
// directory, field or value position involved, never the value itself (it may be a secret).
var (
	// ErrNoStore reports that the directory holds no audit store (no audit.db). Read-only
	// opens return it instead of creating an empty store.
	ErrNoStore = errors.New("no audit log")
	// ErrNotStore reports that audit.db exists but is not a cmdgate audit store.
	ErrNotStore = errors.New("not a cmdgate audit store")
	// ErrSchemaTooNew reports a store written by a newer cmdgate than this one.
	ErrSchemaTooNew = errors.New("audit store schema is newer than this cmdgate")
	// ErrReadOnly reports an append to a store opened with Options.ReadOnly.
	ErrReadOnly = errors.New("audit store is open read-only")
	// ErrClosed reports use of a closed store.
	ErrClosed = errors.New("audit store is closed")
	// ErrInvalidRecord is wrapped by every *RecordError.
	ErrInvalidRecord = errors.New("invalid audit record")
	// ErrInvalidQuery is wrapped by errors about a Query (bad cursor, bad limit, ...).
	ErrInvalidQuery = errors.New("invalid audit query")
	// ErrNoKey reports that no checkpoint key is available to check signatures.
	ErrNoKey = errors.New("no checkpoint public key")
	// ErrNotFound reports a record id that is not in the store.
	ErrNotFound = errors.New("audit record not found")
	// ErrBadWitness is wrapped by the errors of a witness file that cannot be read or
	// holds a line that is not a checkpoint (ReadWitness, VerifyOptions.Witness).
	ErrBadWitness = errors.New("unreadable audit witness")
)

// RecordError is returned by Append for a record it refuses: Field names the part of the
// record (e.g. "input", "principal.name", "reasons[2].rule"), Reason says what is wrong.
// Nothing of a refused record is stored.
type RecordError struct {
	Field  string
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("invalid audit record: %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) true.
func (e *RecordError) Unwrap() error { return ErrInvalidRecord }
