// Package jobs keeps background jobs on disk: one directory per job under a job root,
// holding the job's metadata (job.json) and its two output logs (stdout.log,
// stderr.log), so that jobs and their output outlive the process that started them.
// It is the storage of cmdgate's background jobs (the `cmdgate job` commands and the
// gateway's jobs API); it starts nothing itself.
//
// Ids are 32 lowercase hex characters: the first 20 random, the last 12 the creation
// time in milliseconds, so that a short prefix names one job and the directory names
// sort by age: a listing reads only the directories it shows. Every lookup takes a unique prefix of
// at least 6 characters.
//
// Metadata is replaced atomically (a temporary file renamed over job.json), so a
// reader never sees half of it. Logs are capped per stream (Log): past the cap the
// observed byte count keeps growing and the log ends with a line saying where it
// stopped.
package jobs

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Error codes, as `cmdgate job` prints them (seed 003's).
const (
	CodeNotFound     = "job_not_found"
	CodeAmbiguous    = "ambiguous_job_id"
	CodeInvalidInput = "invalid_input"
	CodeInvalidState = "invalid_state"
	CodeIO           = "io_error"
)

// Error is an error with a code.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Job states.
const (
	Running = "running"
	Exited  = "exited" // ExitCode is set
	Killed  = "killed" // Signal is set
	Failed  = "failed" // it could not start, or its supervisor was lost: Reason says why
)

// Job is a job's metadata, job.json.
type Job struct {
	ID    string `json:"job_id"`
	State string `json:"state"`
	// Principal started the job; only it (and auditors and admins) may see it.
	Principal string   `json:"principal"`
	Role      string   `json:"role,omitempty"`
	Command   string   `json:"command,omitempty"` // a shell script
	Argv      []string `json:"argv,omitempty"`    // or an argument vector
	Cwd       string   `json:"cwd"`
	Task      string   `json:"task,omitempty"`
	// ShellMode is how the command reaches the system ("default": through the shell,
	// "direct": argv as is); Network whether the decision granted the network.
	ShellMode string `json:"shell_mode,omitempty"`
	Network   bool   `json:"network,omitempty"`
	// MaxRunTimeMS, when set, is how long the job may run before it is killed.
	MaxRunTimeMS int64 `json:"max_run_time_ms,omitempty"`
	// DecisionID is the audit record of the decision that let it start.
	DecisionID string `json:"decision_id,omitempty"`
	// RequestID and Source are the request's id and the front it came through.
	RequestID  string     `json:"request_id,omitempty"`
	Source     string     `json:"source,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	DurationMS int64      `json:"duration_ms,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	// Signal is the signal a killed job was stopped with (TERM, INT or KILL);
	// KilledBy who asked ("max_run_time" when its maximum run time passed).
	Signal   string `json:"signal,omitempty"`
	KilledBy string `json:"killed_by,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// PID is the process id of the job host that runs it; Host names that host (its
	// key: kills and waits go to it).
	PID  int    `json:"pid,omitempty"`
	Host string `json:"host,omitempty"`
	// Observed bytes per stream (they go on past the cap), and whether a log was capped.
	StdoutObservedBytes int64 `json:"stdout_observed_bytes"`
	StderrObservedBytes int64 `json:"stderr_observed_bytes"`
	StdoutCapped        bool  `json:"stdout_capped,omitempty"`
	StderrCapped        bool  `json:"stderr_capped,omitempty"`
}

// Finished reports whether the job reached a final state.
func (j *Job) Finished() bool { return j.State != Running }

// Files of a job directory.
const (
	MetaFile   = "job.json"
	StdoutFile = "stdout.log"
	StderrFile = "stderr.log"
)

// MinPrefix is the shortest id prefix a lookup takes.
const MinPrefix = 6

// Store is a job root.
type Store struct {
	Root string
}

// NewID returns a new job id: 20 random hex characters, then 12 of the creation time
// in milliseconds. The random part comes first so that a short prefix names one job;
// the time last so that listings sort by age without reading any file.
func NewID(now time.Time) string {
	var b [16]byte
	rand.Read(b[:10])
	ms := uint64(now.UnixMilli())
	for i := 0; i < 6; i++ {
		b[10+i] = byte(ms >> (40 - 8*i))
	}
	return hex.EncodeToString(b[:])
}

// idTime is the creation-time part of an id, which sorts as the time does.
func idTime(id string) string { return id[20:] }

// ValidID reports whether id is a whole job id.
func ValidID(id string) bool { return len(id) == 32 && isHex(id) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// RootEnv is the variable that names the job root when --root does not.
const RootEnv = "CMDGATE_JOB_ROOT"

// ResolveRoot is the job root: flag (--root), else $CMDGATE_JOB_ROOT, else
// $XDG_DATA_HOME/cmdgate/jobs, else ~/.local/share/cmdgate/jobs.
func ResolveRoot(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if r := getenv(RootEnv); r != "" {
		return filepath.Abs(r)
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "cmdgate", "jobs"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", errorf(CodeInvalidInput, "no job root: give --root or set %s (there is no home directory)", RootEnv)
		}
	}
	return filepath.Join(home, ".local", "share", "cmdgate", "jobs"), nil
}

// Dir is a job's directory.
func (s *Store) Dir(id string) string { return filepath.Join(s.Root, id) }

// Create makes the directory of a new job, with its metadata.
func (s *Store) Create(j *Job) error {
	if !ValidID(j.ID) {
		return errorf(CodeInvalidInput, "job id %q is not 32 lowercase hex characters", j.ID)
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return &Error{Code: CodeIO, Message: "cannot create the job root " + s.Root, Err: err}
	}
	dir := s.Dir(j.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return &Error{Code: CodeIO, Message: "cannot create the job directory", Err: err}
	}
	return s.Update(j) // the logs come with the first output (a missing log is empty)
}

// Save replaces a job's metadata atomically and durably (synced before the rename),
// setting UpdatedAt: for a job's end.
func (s *Store) Save(j *Job) error { return s.write(j, true) }

// Update replaces a job's metadata atomically, not waiting for the disk: for the states
// a crash makes moot (a job that runs is lost with the machine, and Settle finds it so).
func (s *Store) Update(j *Job) error { return s.write(j, false) }

func (s *Store) write(j *Job, sync bool) error {
	j.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return &Error{Code: CodeIO, Message: "cannot encode the job", Err: err}
	}
	dir := s.Dir(j.ID)
	tmp, err := os.CreateTemp(dir, ".job-*.json")
	if err != nil {
		return &Error{Code: CodeIO, Message: "cannot write the job's metadata", Err: err}
	}
	_, werr := tmp.Write(append(b, '\n'))
	var serr error
	if sync {
		serr = tmp.Sync()
	}
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return &Error{Code: CodeIO, Message: "cannot write the job's metadata", Err: err}
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, MetaFile)); err != nil {
		os.Remove(tmp.Name())
		return &Error{Code: CodeIO, Message: "cannot write the job's metadata", Err: err}
	}
	return nil
}

// read reads one job's metadata.
func (s *Store) read(id string) (*Job, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir(id), MetaFile))
	if err != nil {
		return nil, err
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, err
	}
	if j.ID != id || j.State == "" || j.StartedAt.IsZero() {
		return nil, fmt.Errorf("%s: not the metadata of job %s", MetaFile, id)
	}
	return &j, nil
}

// ids lists the job directory names of the root, newest first; a root that does not
// exist has none.
func (s *Store) ids() ([]string, error) {
	entries, err := os.ReadDir(s.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Code: CodeIO, Message: "cannot read the job root " + s.Root, Err: err}
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && ValidID(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.SortFunc(out, func(a, b string) int { // newest first
		if c := strings.Compare(idTime(b), idTime(a)); c != 0 {
			return c
		}
		return strings.Compare(b, a)
	})
	return out, nil
}

// Resolve finds the job an id or a unique prefix of at least MinPrefix characters
// names: CodeNotFound, CodeAmbiguous or CodeInvalidInput otherwise. visible, when set,
// hides the jobs it refuses as if they did not exist.
func (s *Store) Resolve(idOrPrefix string, visible func(*Job) bool) (*Job, error) {
	p := strings.ToLower(idOrPrefix)
	if len(p) < MinPrefix || len(p) > 32 || !isHex(p) {
		return nil, errorf(CodeInvalidInput, "a job id is 32 hex characters; a prefix of %d or more of them also names one", MinPrefix)
	}
	if ValidID(p) { // a whole id: no need to look at the others
		j, err := s.read(p)
		if err != nil || (visible != nil && !visible(j)) {
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, &Error{Code: CodeIO, Message: "cannot read job " + p, Err: err}
			}
			return nil, errorf(CodeNotFound, "no job %s", idOrPrefix)
		}
		return s.Settle(j)
	}
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	var found []*Job
	for _, id := range ids {
		if !strings.HasPrefix(id, p) {
			continue
		}
		j, err := s.read(id)
		if err != nil || (visible != nil && !visible(j)) {
			continue
		}
		if j, err = s.Settle(j); err != nil {
			return nil, err
		}
		found = append(found, j)
	}
	switch len(found) {
	case 0:
		return nil, errorf(CodeNotFound, "no job %s", idOrPrefix)
	case 1:
		return found[0], nil
	}
	return nil, errorf(CodeAmbiguous, "%d jobs start with %s: give more of the id", len(found), idOrPrefix)
}

// Listing is what List answers.
type Listing struct {
	Root      string `json:"root"`
	Jobs      []*Job `json:"jobs"`
	Truncated bool   `json:"truncated"`
	// Skipped counts the job directories looked at whose metadata could not be read.
	Skipped int `json:"skipped"`
}

// List lists jobs newest first (by started_at), at most limit (0: no limit), in one
// state unless state is "", those visible refuses left out. It reads the directories
// newest first and stops once it has limit jobs and one more, so a listing's cost
// follows limit rather than the number of jobs.
func (s *Store) List(limit int, state string, visible func(*Job) bool) (*Listing, error) {
	switch state {
	case "", Running, Exited, Killed, Failed:
	default:
		return nil, errorf(CodeInvalidInput, "state must be running, exited, killed or failed")
	}
	if limit < 0 {
		return nil, errorf(CodeInvalidInput, "limit must be 0 (no limit) or more")
	}
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	l := &Listing{Root: s.Root, Jobs: []*Job{}}
	for _, id := range ids {
		j, err := s.read(id)
		if err != nil {
			l.Skipped++
			continue
		}
		if j, err = s.Settle(j); err != nil {
			return nil, err
		}
		if (state != "" && j.State != state) || (visible != nil && !visible(j)) {
			continue
		}
		if limit > 0 && len(l.Jobs) == limit {
			l.Truncated = true
			break
		}
		l.Jobs = append(l.Jobs, j)
	}
	slices.SortStableFunc(l.Jobs, func(a, b *Job) int { return b.StartedAt.Compare(a.StartedAt) })
	return l, nil
}

// GC removes the finished jobs that finished before cutoff, and answers their ids.
func (s *Store) GC(cutoff time.Time, visible func(*Job) bool) ([]string, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	removed := []string{}
	for _, id := range ids {
		j, err := s.read(id)
		if err != nil || !j.Finished() || j.FinishedAt == nil || !j.FinishedAt.Before(cutoff) || (visible != nil && !visible(j)) {
			continue
		}
		if err := os.RemoveAll(s.Dir(id)); err != nil {
			return removed, &Error{Code: CodeIO, Message: "cannot remove job " + id, Err: err}
		}
		removed = append(removed, id)
	}
	return removed, nil
}
