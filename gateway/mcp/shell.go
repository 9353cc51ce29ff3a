package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/gateway"
)

// shell_exec and system_info: the shell tool pair of the Mutsumi agent, with its
// argument names, advice and answer texts, over the gateway's core. Where that tool asks
// the user to approve every command, here the policy decides (and asks a human where it
// says ask); a command it refuses is answered as a rejection, with the reasons.

// ShellExecDescription is shell_exec's description: the original's advice to run
// system_info first, and what decides instead of a per-command approval.
const ShellExecDescription = "Execute a shell command in a directory of the workspace. cmdgate's security policy decides whether it runs (a command it refuses is rejected, with the reasons). **IMPORTANT**: Run `system_info` first to find available shells and their paths."

// ShellExecSchema is shell_exec's input schema. uri and cmd are checked by the tool
// itself, so that a call without them gets the original's answer.
const ShellExecSchema = `{
  "type": "object",
  "properties": {
    "uri": {"type": "string", "description": "The working directory (CWD) for the command: a directory of the workspace, as a path or a file:// URI."},
    "cmd": {"type": "string", "description": "The shell command to execute."},
    "shell_path": {"type": "string", "description": "Absolute path of the shell executable (e.g. /bin/bash). If omitted, the system's default shell is used."}
  }
}`

// SystemInfoDescription is system_info's description.
const SystemInfoDescription = "Report the platform and architecture, the default shell, the shells available with their paths, the package managers found, the sandbox commands run in and whether they get the network."

// Texts of shell_exec's answers, as the original gives them.
const (
	shellMissing  = `Error: Missing "uri" or "cmd" argument.`
	shellRejected = "User rejected the shell command execution."
	shellNoOutput = "Command executed with no output."
)

type shellInput struct {
	URI       string `json:"uri"`
	Cmd       string `json:"cmd"`
	ShellPath string `json:"shell_path"`
}

// packageManagers are looked for in PATH by system_info.
var packageManagers = []string{"npm", "yarn", "pnpm", "bun", "pip", "pip3", "uv", "poetry", "go", "cargo", "gem", "bundle", "composer", "mvn", "gradle", "dotnet", "apt-get"}

// addShellTools adds shell_exec and system_info to s.
func (t *tools) addShellTools(s *sdk.Server) {
	s.AddTool(&sdk.Tool{Name: "shell_exec", Description: ShellExecDescription, InputSchema: rawSchema(ShellExecSchema)}, t.shellExec)
	s.AddTool(&sdk.Tool{Name: "system_info", Description: SystemInfoDescription, InputSchema: rawSchema(`{"type": "object", "properties": {}}`)}, t.systemInfo)
}

// defaultShell is the shell commands run with: bash, else sh, as the executors choose.
func defaultShell() (string, error) {
	for _, name := range []string{"bash", "sh"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("neither bash nor sh is in PATH")
}

// textResult is a tool result of one text.
func textResult(text string, isError bool) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: isError}
}

// shellExec is shell_exec: the command as a script through the default shell.
func (t *tools) shellExec(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			t.g.Logger().Error("panic in an MCP tool call", "error", fmt.Sprint(p))
			res, err = textResult("ERROR:\ninternal error", true), nil
		}
	}()
	var in shellInput
	if err := unmarshalArgs(req, &in); err != nil {
		return textResult("Error: "+err.Error(), true), nil
	}
	if in.URI == "" || strings.TrimSpace(in.Cmd) == "" {
		return textResult(shellMissing, true), nil
	}
	cwd, err := uriPath(in.URI)
	if err != nil {
		return textResult("Error: "+err.Error(), true), nil
	}
	if in.ShellPath != "" {
		if err := checkShell(in.ShellPath); err != nil {
			return textResult("Error: "+err.Error(), true), nil
		}
	}
	caller, err := t.caller(req, "shell_exec")
	if err != nil {
		return textResult("Error: "+err.Error(), true), nil
	}
	o, err := t.exec(ctx, req, caller, &gateway.Request{Script: in.Cmd, Cwd: cwd, ShellMode: executor.ShellDefault})
	var e *gateway.Error
	switch {
	case errors.As(err, &e) && (e.Code == gateway.CodeDenied || e.Code == gateway.CodeApprovalPending):
		return textResult(shellRejected+"\n"+describe(err), true), nil
	case err != nil:
		return textResult("ERROR:\n"+describe(err), true), nil
	}
	r := o.Result
	var sections []string
	if r.Stdout != "" {
		sections = append(sections, "STDOUT:\n"+strings.TrimRight(r.Stdout, "\n"))
	}
	if r.Stderr != "" {
		sections = append(sections, "STDERR:\n"+strings.TrimRight(r.Stderr, "\n"))
	}
	switch {
	case r.TimedOut:
		sections = append(sections, fmt.Sprintf("ERROR:\nCommand timed out after %d ms and was stopped (exit code %d)", r.DurationMS, r.ExitCode))
	case r.ExitCode != 0:
		sections = append(sections, fmt.Sprintf("ERROR:\nCommand failed with exit code %d", r.ExitCode))
	}
	if len(sections) == 0 {
		return textResult(shellNoOutput, false), nil
	}
	return textResult(strings.Join(sections, "\n\n"), r.ExitCode != 0), nil
}

// uriPath turns shell_exec's uri into the cwd of a Request: a file:// URI's path, or
// the text as a path.
func uriPath(uri string) (string, error) {
	if !strings.HasPrefix(uri, "file:") {
		return uri, nil
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", fmt.Errorf("uri %q is not a file:// URI of a local directory", uri)
	}
	return u.Path, nil
}

// checkShell accepts a shell_path that names the shell commands run with: an absolute
// path to an executable that is that shell (through symbolic links). Commands run in
// the gateway's sandbox, where that is the one shell there is.
func checkShell(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("shell_path %q is not an absolute path", p)
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("shell_path %q is not an executable file", p)
	}
	def, err := defaultShell()
	if err != nil {
		return err
	}
	a, errA := filepath.EvalSymlinks(p)
	b, errB := filepath.EvalSymlinks(def)
	if errA != nil || errB != nil || a != b {
		return fmt.Errorf("shell_path %q is not a shell this gateway runs commands with: use %s (see system_info), or leave shell_path out", p, def)
	}
	return nil
}

// systemInfo is system_info.
func (t *tools) systemInfo(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	arch := map[string]string{"amd64": "x64", "386": "ia32"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	shell, err := defaultShell()
	if err != nil {
		shell = "none (" + err.Error() + ")"
	}
	var pms []string
	for _, name := range packageManagers {
		if _, err := exec.LookPath(name); err == nil {
			pms = append(pms, name)
		}
	}
	if len(pms) == 0 {
		pms = []string{"none found"}
	}
	env := t.g.PromptEnv()
	lines := []string{
		fmt.Sprintf("Platform: %s (%s)", runtime.GOOS, arch),
		"Default Shell (Env): " + shell,
		fmt.Sprintf("Available Shells: %s: %s", filepath.Base(shell), shell),
		"Package Managers: " + strings.Join(pms, ", "),
		"Workspace: " + env.Workspace,
		"Sandbox: " + env.Backend,
		"Network: " + env.Network,
	}
	return textResult(strings.Join(lines, "\n"), false), nil
}
