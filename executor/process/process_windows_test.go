package process_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/process"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"golang.org/x/sys/windows"
)

// The argv of a ShellDefault request reaches PowerShell word for word.
func TestRunArgvQuotingPowerShell(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pwsh.exe"); err != nil {
		testenv.NeedCommand(t, "powershell.exe")
	}
	e := process.New(process.Options{})
	for _, w := range []string{"a b", "it's", "$env:PATH", "`n", "\u2018q\u2019", "@(1)", ";", "é あ"} {
		res := run(t, e, executor.Spec{Argv: []string{"Write-Output", w}, Dir: t.TempDir()})
		if got := strings.TrimRight(res.Stdout, "\r\n"); got != w || res.ExitCode != 0 {
			t.Errorf("Run(Write-Output %q) = exit %d, %q, stderr %q; want 0, %q", w, res.ExitCode, got, res.Stderr, w)
		}
	}
}

// Seed 000 section 11 (Windows): the timeout stops the command and its descendants; no
// orphan is left for later tests.
func TestRunTimeoutKillsJob(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pwsh.exe"); err != nil {
		testenv.NeedCommand(t, "powershell.exe")
	}
	res := run(t, process.New(process.Options{}), executor.Spec{
		Script: "$p = Start-Process -NoNewWindow -PassThru ping -ArgumentList '-n','300','127.0.0.1'; " +
			"Write-Output \"pid=$($p.Id)\"; Start-Sleep 300",
		Dir:     t.TempDir(),
		Timeout: 3 * time.Second,
	})
	if res.ExitCode != 124 || !res.TimedOut {
		t.Errorf("Run(timed out) = exit %d, timed out %v; want 124, true", res.ExitCode, res.TimedOut)
	}
	_, after, ok := strings.Cut(res.Stdout, "pid=")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]))
	if !ok || err != nil {
		t.Fatalf("Run(timed out).Stdout = %q, want the child's pid", res.Stdout)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return // gone
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err == nil && code == 259 { // STILL_ACTIVE
		windows.TerminateProcess(h, 1)
		t.Errorf("after the timeout the child %d still runs", pid)
	}
}
