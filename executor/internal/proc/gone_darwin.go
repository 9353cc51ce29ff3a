package proc

import "golang.org/x/sys/unix"

// szomb is SZOMB of <sys/proc.h>: a process that has exited and awaits its reaping.
const szomb = 5

// liveMembers reports whether a process that is not a zombie has process group pgid.
func liveMembers(pgid int) (bool, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return false, err
	}
	for _, p := range procs {
		if p.Proc.P_stat != szomb {
			return true, nil
		}
	}
	return false, nil
}
