package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// More files of a job directory.
const (
	// KillFile is a kill request (KillRequest), written by whoever kills the job before
	// it signals the supervisor; the supervisor records it in the job's final state.
	KillFile = "kill.json"
	// SupervisorLog holds the supervisor's own diagnostics.
	SupervisorLog = "supervisor.log"
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

// startGrace is how long a job may have no supervisor pid before it counts as lost: the
// time between its directory being made and its supervisor starting.
const startGrace = time.Minute

// Alive reports whether the job's supervisor is still running. On Linux the process
// of that pid must also be a supervisor of this job (its command line names the job
// id), so a reused pid does not keep a lost job running.
func Alive(j *Job) bool {
	if j.PID <= 0 {
		return time.Since(j.UpdatedAt) < startGrace
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(j.PID), "cmdline"))
		if err != nil {
			return false
		}
		if !bytes.Contains(b, []byte(j.ID)) {
			return false
		}
		// A zombie (exited, not yet reaped by the process that started it) is gone.
		st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(j.PID), "stat"))
		if err == nil {
			if i := bytes.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'Z' {
				return false
			}
		}
		return true
	}
	p, err := os.FindProcess(j.PID)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// LostReason is the reason of a job whose supervisor is gone without recording an end.
func LostReason(j *Job) string {
	if j.PID <= 0 {
		return "its supervisor never started"
	}
	return fmt.Sprintf("its supervisor (pid %d) is gone without recording how the job ended", j.PID)
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

// Settle returns j as it stands: a job recorded as running whose supervisor is gone
// becomes failed (LostReason), stored so. The metadata is read again once the
// supervisor is seen gone, since a supervisor writes the job's end before it exits.
func (s *Store) Settle(j *Job) (*Job, error) {
	if j.Finished() || Alive(j) {
		return j, nil
	}
	again, err := s.read(j.ID)
	if err != nil {
		return j, nil // removed meanwhile: what was read stands
	}
	if again.Finished() || Alive(again) {
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
