package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// More files of a job directory.
const (
	// KillFile is a kill request (KillRequest), written by whoever kills the job before
	// it signals the supervisor; the supervisor records it in the job's final state.
	KillFile = "kill.json"
	// hostsDir, in the root, holds the job hosts' sockets, locks and logs.
	hostsDir = ".hosts"
	// runningDir, in the root, holds one empty file per job that may still run, named
	// by its id: counting a principal's running jobs reads these, not every job.
	runningDir = ".running"
)

// KillRequest is who asked for a job to be killed, with which signal, and when.
type KillRequest struct {
	Signal string    `json:"signal"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// Signals a kill takes. An unknown name is KILL (seed 003).
const (
	SigTerm = "TERM"
	SigInt  = "INT"
	SigKill = "KILL"
)

// NormalizeSignal is the signal a kill uses for name: TERM (the default for ""), INT,
// or KILL for KILL and every name it does not know. A SIG prefix and case are
// ignored.
func NormalizeSignal(name string) string {
	n := bytes.ToUpper([]byte(name))
	n = bytes.TrimPrefix(n, []byte("SIG"))
	switch string(n) {
	case "":
		if name == "" {
			return SigTerm
		}
	case SigTerm, "15":
		return SigTerm
	case SigInt, "2":
		return SigInt
	}
	return SigKill
}

// startGrace is how long a job may have no host pid before it counts as lost: the
// time between its directory being made and its host taking it.
const startGrace = time.Minute

// lockFile, in a job's directory, is locked by the job host for as long as it runs the
// job: a job whose lock is free is not running, whatever its job.json says.
const lockFile = ".lock"

// Alive reports whether the job is still in the hands of a job host: its lock is held
// (see Hold). The kernel releases the lock when the host dies, so a lost job is seen
// at once, and a reused pid means nothing.
func (s *Store) Alive(j *Job) bool {
	if j.PID <= 0 {
		return time.Since(j.UpdatedAt) < startGrace
	}
	return lockHeld(filepath.Join(s.Dir(j.ID), lockFile))
}

// Hold locks job id for the host that runs it, until release.
func (s *Store) Hold(id string) (release func(), err error) {
	release, err = holdLock(filepath.Join(s.Dir(id), lockFile))
	if err != nil {
		return nil, &Error{Code: CodeIO, Message: "cannot lock job " + id, Err: err}
	}
	return release, nil
}

// HostKey names the job host of a gateway configuration: the same data directory,
// workspace, backend and configuration file share one.
func HostKey(dataDir, workspace, sandbox, config string) string {
	h := sha256.Sum256([]byte(dataDir + "\x00" + workspace + "\x00" + sandbox + "\x00" + config))
	return hex.EncodeToString(h[:8])
}

// HostPaths are the socket a job host of key listens on and the lock it holds while it
// does, in the root's .hosts directory.
func (s *Store) HostPaths(key string) (socket, lock string) {
	dir := filepath.Join(s.Root, hostsDir)
	return filepath.Join(dir, key+".sock"), filepath.Join(dir, key+".lock")
}

// LostReason is the reason of a job whose supervisor is gone without recording an end.
func LostReason(j *Job) string {
	if j.PID <= 0 {
		return "no job host took it"
	}
	return fmt.Sprintf("its job host (pid %d) is gone without recording how the job ended", j.PID)
}

// Get reads a job by its full id, and settles it first (see Settle).
func (s *Store) Get(id string) (*Job, error) {
	if !ValidID(id) {
		return nil, errorf(CodeInvalidInput, "job id %q is not 32 lowercase hex characters", id)
	}
	j, err := s.read(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errorf(CodeNotFound, "no job %s", id)
	}
	if err != nil {
		return nil, &Error{Code: CodeIO, Message: "cannot read job " + id, Err: err}
	}
	return s.Settle(j)
}

// Settle returns j as it stands: a job recorded as running whose host is gone
// becomes failed (LostReason), stored so. The metadata is read again once the host is
// seen gone, since a host writes the job's end before it lets the job go.
func (s *Store) Settle(j *Job) (*Job, error) {
	if j.Finished() || s.Alive(j) {
		return j, nil
	}
	again, err := s.read(j.ID)
	if err != nil {
		return j, nil // removed meanwhile: what was read stands
	}
	if again.Finished() || s.Alive(again) {
		return again, nil
	}
	now := time.Now().UTC()
	again.State, again.Reason, again.FinishedAt = Failed, LostReason(again), &now
	if err := s.Save(again); err != nil {
		return nil, err
	}
	s.Unmark(again.ID)
	return again, nil
}

// Mark records that job id may be running (see runningDir).
func (s *Store) Mark(id string) error {
	dir := filepath.Join(s.Root, runningDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &Error{Code: CodeIO, Message: "cannot create " + dir, Err: err}
	}
	if err := os.WriteFile(filepath.Join(dir, id), nil, 0o600); err != nil {
		return &Error{Code: CodeIO, Message: "cannot mark the job running", Err: err}
	}
	return nil
}

// Unmark forgets the running mark of job id.
func (s *Store) Unmark(id string) { os.Remove(filepath.Join(s.Root, runningDir, id)) }

// Running lists the jobs still running, settled: a mark whose job ended, vanished or
// lost its supervisor is cleared on the way.
func (s *Store) Running() ([]*Job, error) {
	entries, err := os.ReadDir(filepath.Join(s.Root, runningDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Code: CodeIO, Message: "cannot read the running jobs", Err: err}
	}
	var out []*Job
	for _, e := range entries {
		id := e.Name()
		if !ValidID(id) {
			continue
		}
		j, err := s.read(id)
		if err != nil {
			s.Unmark(id)
			continue
		}
		if j, err = s.Settle(j); err != nil {
			return nil, err
		}
		if j.Finished() {
			s.Unmark(id)
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// WriteKill stores a kill request in the job's directory.
func (s *Store) WriteKill(id string, k KillRequest) error {
	b, _ := json.Marshal(k)
	path := filepath.Join(s.Dir(id), KillFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return &Error{Code: CodeIO, Message: "cannot write the kill request", Err: err}
	}
	if err := os.Rename(tmp, path); err != nil {
		return &Error{Code: CodeIO, Message: "cannot write the kill request", Err: err}
	}
	return nil
}

// ReadKill reads the kill request of a job, if there is one.
func (s *Store) ReadKill(id string) (KillRequest, bool) {
	var k KillRequest
	b, err := os.ReadFile(filepath.Join(s.Dir(id), KillFile))
	if err != nil || json.Unmarshal(b, &k) != nil {
		return k, false
	}
	return k, true
}
