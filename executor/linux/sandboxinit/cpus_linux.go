package sandboxinit

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/cmdgate/cmdgate/executor/linux/internal/wire"
	"golang.org/x/sys/unix"
)

// pinSpawner puts every thread of the spawner on one CPU, the first it may use, and
// returns the CPUs it had, for its inits to go back to (see wire.CPUsArg). It returns
// nil when the spawner has a single CPU anyway, or could not be pinned: its inits then
// keep its CPUs as they are.
func pinSpawner() *unix.CPUSet {
	var had unix.CPUSet
	if err := unix.SchedGetaffinity(0, &had); err != nil || had.Count() < 2 {
		return nil
	}
	var one unix.CPUSet
	for cpu := 0; ; cpu++ {
		if had.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	if err := setThreadsAffinity(&one); err != nil {
		// Some threads may be pinned already, the main thread, which starts the
		// inits, first: the inits still go back to what the spawner had.
		fmt.Fprintln(os.Stderr, "cmdgate-sandbox spawner: keep to one CPU:", err)
	}
	return &had
}

// setThreadsAffinity sets the CPU affinity of every thread of this process, the calling
// thread first. The kernel keeps a mask to the CPUs the process's cpuset allows; the
// calling thread's mask after the call is what the others get. A thread the runtime
// starts meanwhile inherits the mask of the thread that starts it: the threads are
// listed again until every one has the mask.
func setThreadsAffinity(set *unix.CPUSet) error {
	if err := unix.SchedSetaffinity(0, set); err != nil {
		return err
	}
	var want unix.CPUSet
	if err := unix.SchedGetaffinity(0, &want); err != nil {
		return err
	}
	self := strconv.Itoa(unix.Gettid())
	for range 8 {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		settled, listed := true, false
		for _, e := range ents {
			listed = listed || e.Name() == self
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			err = unix.SchedGetaffinity(tid, &cur)
			if errors.Is(err, unix.ESRCH) || err == nil && cur == want {
				continue // done, or the thread has exited
			}
			settled = false
			if err := unix.SchedSetaffinity(tid, &want); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
		}
		if !listed {
			// /proc is another pid namespace's: its thread IDs are not ours.
			return errors.New("/proc/self/task does not list this thread")
		}
		if settled {
			return nil
		}
	}
	return errors.New("threads kept starting with other CPUs")
}

// restoreCPUs puts the init's main thread back on the CPUs its spawner had (the
// argument after wire.CPUsArg). The command, and whatever it starts, is forked from
// that thread and inherits them. The runtime's other threads of the init stay on the
// spawner's CPU: they only wait for the command and pass signals on.
func restoreCPUs(arg string) error {
	set, err := wire.ParseCPUs(arg)
	if err != nil {
		return err
	}
	return unix.SchedSetaffinity(0, &set)
}
