package linux_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/linux"
)

// TestCommandCgroup: every process of a command is in the command's cgroup (in each
// hierarchy of its limits, not the gateway's), whether a spawner started its init (a
// probed Executor) or the Executor did (cmdgate sandbox run's), and the threads that
// started the inits are back in their own process's cgroups afterwards: the init is
// born in the command's cgroup where the host allows (v1: the starting thread moves
// into it and back; v2: the init is cloned into it), else moved in.
func TestCommandCgroup(t *testing.T) {
	probed, ws := newExecutor(t, linux.Options{Pool: -1})
	needLimit(t, probed, "memory")
	direct, err := linux.New(linux.Options{Workspace: t.TempDir(), Helper: helper, Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	own := cgroups(t, "self")
	hierarchies := []string{""} // v2
	if _, ok := own["memory"]; ok {
		hierarchies = []string{"memory", "pids", "freezer"} // v1: those a command's cgroup has
	}
	for _, c := range []struct {
		name string
		e    *linux.Executor
		ws   string
	}{{"spawner", probed, ws}, {"direct", direct, direct.Workspace()}} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(c.ws, "ns"))
			os.Remove(filepath.Join(c.ws, "stop"))
			script := nsScript + "sleep 100 & while [ ! -e stop ]; do sleep 0.05; done; kill $!"
			running, wait := runAsync(c.e, executor.Spec{Script: script, Dir: c.ws, Timeout: 60 * time.Second})
			ino := sandboxNamespace(t, c.ws, running)
			// The init, the shell and its sleeps; a process that has begun to exit (stat,
			// the loop's sleeps) shows in the root of a v1 hierarchy and is left out.
			live := map[int]map[string]string{}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				clear(live)
				for _, pid := range inNamespace(ino) {
					if cg, ok := liveCgroups(strconv.Itoa(pid)); ok {
						live[pid] = cg
					}
				}
				if len(live) >= 3 || time.Now().After(deadline) {
					break
				}
			}
			if len(live) < 3 {
				t.Fatalf("%d processes running in the sandbox, want the init, the shell and its sleeps", len(live))
			}
			var first map[string]string
			for _, pid := range slices.Sorted(maps.Keys(live)) {
				cg := live[pid]
				if first == nil {
					first = cg
				}
				for _, h := range hierarchies {
					mine := own[h]
					if cg[h] == mine || !strings.Contains(cg[h], "/cmdgate/run-") {
						t.Errorf("process %d of the command is in %q cgroup %q, want the command's (this process: %q)", pid, h, cg[h], mine)
					}
					if cg[h] != first[h] {
						t.Errorf("process %d of the command is in %q cgroup %q, another in %q", pid, h, cg[h], first[h])
					}
				}
			}
			starters := []string{"self"}
			if sp := c.e.SpawnerPid(); sp != 0 {
				starters = append(starters, strconv.Itoa(sp))
			}
			for _, p := range starters {
				tasks, err := os.ReadDir("/proc/" + p + "/task")
				if err != nil {
					t.Fatal(err)
				}
				for _, task := range tasks {
					if cg := cgroups(t, p+"/task/"+task.Name()); !sameCgroups(cg, own) {
						t.Errorf("thread %s of process %s is in %v, want %v", task.Name(), p, cg, own)
					}
				}
			}
			if err := os.WriteFile(filepath.Join(c.ws, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if res, err := wait(); err != nil || res.ExitCode != 0 {
				t.Errorf("Run = %+v, %v", res, err)
			}
		})
	}
}

// cgroups reads /proc/<p>/cgroup: each hierarchy's controllers ("" for v2) to the path.
func cgroups(t *testing.T, p string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + p + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	return parseCgroups(b)
}

// parseCgroups reads /proc/PID/cgroup: each hierarchy's controllers ("" for v2) to the
// process's cgroup in it.
func parseCgroups(b []byte) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if f := strings.SplitN(strings.TrimSpace(line), ":", 3); len(f) == 3 {
			m[f[1]] = f[2]
		}
	}
	return m
}

// liveCgroups is cgroups of process p while it runs; false once it has begun to exit
// (or is gone): a cgroup v1 hierarchy shows an exiting process in its root, "/".
func liveCgroups(p string) (map[string]string, bool) {
	b, err := os.ReadFile("/proc/" + p + "/cgroup")
	if err != nil {
		return nil, false
	}
	// Read after the cgroups, the flags say whether the process was exiting already.
	stat, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return nil, false
	}
	// The fields after the command's name: state, ppid, pgrp, session, tty, tpgid, flags.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	const pfExiting = 0x4 // PF_EXITING, a bit of the flags
	if len(f) < 7 {
		return nil, false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return parseCgroups(b), err == nil && flags&pfExiting == 0
}

func sameCgroups(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
