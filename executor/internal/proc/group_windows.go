package proc

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Supported reports whether this platform can contain a process tree: it can.
func Supported() error { return nil }

// SysProcAttr starts the command suspended, so that NewGroup can put it in a job object
// before it runs a single instruction (a child it started earlier would escape the job),
// and in a new process group, so that the gateway's console Ctrl+C does not reach it.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP}
}

// Group is the job object holding a started command and every process it starts.
type Group struct {
	pid     int
	job     windows.Handle
	process windows.Handle
}

// NewGroup puts the suspended leader pid in a new job object that kills its processes
// when closed and allows no breakaway, then resumes it. On error the leader is still
// suspended: the caller kills it.
func NewGroup(pid int) (g *Group, err error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create job object: %w", err)
	}
	defer func() {
		if err != nil {
			windows.CloseHandle(job)
		}
	}()
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return nil, fmt.Errorf("set job object limits: %w", err)
	}
	// os.Process holds a handle to the process, so pid names it until it is waited for.
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|
		windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return nil, fmt.Errorf("open process %d: %w", pid, err)
	}
	defer func() {
		if err != nil {
			windows.CloseHandle(h)
		}
	}()
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return nil, fmt.Errorf("assign process %d to job object: %w", pid, err)
	}
	if err := resume(pid); err != nil {
		return nil, err
	}
	return &Group{pid: pid, job: job, process: h}, nil
}

// resume resumes the threads of the suspended process pid (a new process has one).
func resume(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("snapshot threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != uint32(pid) {
			continue
		}
		t, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return fmt.Errorf("open thread %d of process %d: %w", entry.ThreadID, pid, err)
		}
		_, err = windows.ResumeThread(t)
		windows.CloseHandle(t)
		if err != nil {
			return fmt.Errorf("resume thread %d of process %d: %w", entry.ThreadID, pid, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("list threads: %w", err)
	}
	if resumed == 0 {
		return fmt.Errorf("process %d has no thread to resume", pid)
	}
	return nil
}

// Terminate kills the job: Windows has no gentle stop for a tree of console processes
// (as exec_command specifies: the equivalent of taskkill /T /F).
func (g *Group) Terminate() error { return g.Kill() }

// Kill terminates every process of the job.
func (g *Group) Kill() error {
	if err := windows.TerminateJobObject(g.job, 1); err != nil {
		return fmt.Errorf("terminate job of process %d: %w", g.pid, err)
	}
	return nil
}

// WaitExit blocks until the leader has exited.
func (g *Group) WaitExit() error {
	if _, err := windows.WaitForSingleObject(g.process, windows.INFINITE); err != nil {
		return fmt.Errorf("wait for process %d: %w", g.pid, err)
	}
	return nil
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// WaitGone waits, for at most timeout, until the job has no process left, and reports
// whether it has none.
func (g *Group) WaitGone(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		var info jobAccounting
		err := windows.QueryInformationJobObject(g.job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
		if err == nil && info.ActiveProcesses == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// Close closes the job, which kills whatever is still in it.
func (g *Group) Close() error {
	return errors.Join(windows.CloseHandle(g.process), windows.CloseHandle(g.job))
}

// ExitCode is the process's exit code.
func ExitCode(state *os.ProcessState) int { return state.ExitCode() }
