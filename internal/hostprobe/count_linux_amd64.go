package hostprobe

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// Count is what CountCPUIDs counted.
type Count struct {
	Instructions int // executed by the program's first thread
	CPUIDs       int // of them, CPUID instructions
}

// CountCPUIDs runs path with args, traced, and single-steps its first thread from the
// exec until it exits, counting the instructions and the CPUIDs among them. Threads the
// program starts are not traced, and signals sent to it are dropped. The program reads
// and writes /dev/null. Single-stepping makes each instruction a trap: expect seconds
// for a program's start.
func CountCPUIDs(path string, args ...string) (Count, error) {
	// Every ptrace request must come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return Count{}, err
	}
	pid := cmd.Process.Pid
	reaped := false
	defer func() {
		if reaped { // by Wait4 below: only the handle is left
			cmd.Process.Release()
			return
		}
		cmd.Process.Kill() // an error left it stopped
		cmd.Wait()
	}()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return Count{}, err
	}
	if !ws.Stopped() {
		reaped = ws.Exited() || ws.Signaled()
		return Count{}, fmt.Errorf("%s did not stop at its exec (%v)", path, ws)
	}
	var n Count
	var regs syscall.PtraceRegs
	code := make([]byte, 2)
	for {
		if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
			return n, fmt.Errorf("read the registers of %s: %w", path, err)
		}
		if _, err := syscall.PtracePeekText(pid, uintptr(regs.Rip), code); err == nil && code[0] == 0x0f && code[1] == 0xa2 {
			n.CPUIDs++
		}
		if err := syscall.PtraceSingleStep(pid); err != nil {
			return n, fmt.Errorf("step %s: %w", path, err)
		}
		n.Instructions++
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return n, err
		}
		if ws.Exited() || ws.Signaled() {
			reaped = true
			return n, nil
		}
	}
}
