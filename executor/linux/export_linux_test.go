package linux

import (
	"os"

	"github.com/cmdgate/cmdgate/executor/linux/internal/cgroup"
	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// Idle reports whether the pool is full and no init is being taken down: the state
// between an agent's commands, for the benchmark.
func (e *Executor) Idle() bool {
	return len(e.pool) == cap(e.pool) && e.releasing.Load() == 0
}

// StaleCgroup is staleCgroup.
var StaleCgroup = staleCgroup

// CPUsArg and FormatCPUs are the wire's: the spawner's inits are started with them.
var (
	CPUsArg    = wire.CPUsArg
	FormatCPUs = wire.FormatCPUs
)

// SpawnerPid is the pid of the Executor's spawner, 0 when it has none.
func (e *Executor) SpawnerPid() int {
	e.spMu.Lock()
	defer e.spMu.Unlock()
	if e.sp == nil || !e.sp.alive() {
		return 0
	}
	return e.sp.pid
}

// SpawnWith starts a spawner on helper, asks it for an init with files as its
// descriptors (any number), and returns what it answered; then it asks again with five
// descriptors of /dev/null and reports whether the same spawner still answers.
func SpawnWith(helper string, files []*os.File) (first, after error) {
	sp, err := startSpawner(helper)
	if err != nil {
		return err, err
	}
	defer sp.close()
	first = sp.request(files)
	null, err := os.Open(os.DevNull)
	if err != nil {
		return first, err
	}
	defer null.Close()
	after = sp.request([]*os.File{null, null, null, null, null})
	return first, after
}

// request is spawn, and waits for the init it started (which reads /dev/null for its
// config and exits at once).
func (sp *spawner) request(files []*os.File) error {
	s, _, err := sp.spawn(files, cgroup.Birth{})
	if err == nil {
		<-s.exited
		unix.Close(s.pidfd)
	}
	return err
}

// InlineBuilds is how many sandboxes without network were built for a command rather
// than ahead.
func (e *Executor) InlineBuilds() int64 { return e.inline.Load() }

// OnBuild has f called with the timing of every sandbox e builds from now on (from
// the goroutine that built it); nil stops it.
func (e *Executor) OnBuild(f func(BuildTiming)) {
	if f == nil {
		e.onBuild.Store(nil)
		return
	}
	e.onBuild.Store(&f)
}
