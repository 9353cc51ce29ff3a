package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

const execUsage = `usage: cmdgate exec [flags] -c SCRIPT
       cmdgate exec [flags] -- ARGV...

Sends one command to a cmdgate gateway (POST /v1/exec) and prints its answer as one
JSON object on stdout: {"schema_version":1,"ok":true,"type":"exec","http_status":200,
"decision","decision_id","cwd","command","exit_code","stdout","stderr",...}, or for a
refusal {"ok":false,"error":{"code","message",...}} with the gateway's error code
(DENIED carries decision_id and reasons). The command's own exit code is in exit_code.

The gateway is --url, else $CMDGATE_URL, else http://127.0.0.1:8080. The token is read
from $CMDGATE_TOKEN, or from --token-file (never from a flag value).

Exit status: 0 when the gateway answered (whatever it answered), 1 when it could not
be reached (error code UNAVAILABLE), 2 for a wrong command line.

flags:`

// runExec implements `cmdgate exec`, the client of POST /v1/exec.
func (m *Main) runExec(ctx context.Context, args []string) int {
	fs, urlFlag, tokenFile := m.clientFlagSet("exec", execUsage)
	script := fs.String("c", "", "the command as a shell script")
	cwd := fs.String("cwd", "", "working directory, inside the gateway's workspace (default: the workspace root)")
	timeoutMS := fs.Int64("timeout-ms", 0, "timeout in milliseconds (default: the gateway's, 30000)")
	maxOutput := fs.Int64("max-output-chars", 0, "per-stream output cap in characters (default: the gateway's, 200000)")
	stdinFile := fs.String("stdin-file", "", "send this file's content (UTF-8) as the command's standard input; - reads cmdgate's own")
	shellMode := fs.String("shell-mode", "", "default (through the shell) or direct (argv executed as is)")
	task := fs.String("task", "", "task name (default: default), or the id of a task of the gateway (cmdgate task create): the command then runs in /workspace/project of its container")
	argv, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	switch {
	case setFlags["c"] && len(argv) > 0:
		fmt.Fprintln(m.Stderr, "cmdgate exec: give either -c SCRIPT or -- ARGV..., not both")
		return exitUsage
	case !setFlags["c"] && len(argv) == 0:
		fmt.Fprintln(m.Stderr, execUsage)
		fs.PrintDefaults()
		return exitUsage
	}

	body := map[string]any{}
	if setFlags["c"] {
		body["command"] = *script
	} else {
		body["argv"] = argv
	}
	if setFlags["cwd"] {
		body["cwd"] = *cwd
	}
	if setFlags["timeout-ms"] {
		body["timeout_ms"] = *timeoutMS
	}
	if setFlags["max-output-chars"] {
		body["max_output_chars"] = *maxOutput
	}
	if setFlags["shell-mode"] {
		body["shell_mode"] = *shellMode
	}
	if setFlags["task"] {
		body["task"] = *task
	}
	if *stdinFile != "" {
		var b []byte
		var err error
		if *stdinFile == "-" {
			b, err = io.ReadAll(m.Stdin)
		} else {
			b, err = os.ReadFile(*stdinFile)
		}
		if err != nil {
			return m.writeError("exec", "INVALID_ARGUMENT", fmt.Sprintf("read standard input: %v", err))
		}
		if !utf8.Valid(b) {
			return m.writeError("exec", "INVALID_ARGUMENT", "standard input is not valid UTF-8: the gateway passes stdin as UTF-8 text")
		}
		body["stdin"] = string(b)
	}

	client, err := m.newClient(*urlFlag, *tokenFile)
	if err != nil {
		return m.writeError("exec", "INVALID_ARGUMENT", err.Error())
	}
	if client.token == "" {
		fmt.Fprintln(m.Stderr, "cmdgate exec: no token: set CMDGATE_TOKEN (cmdgate token create --role agent --name NAME prints one)")
	}
	status, answer, err := client.call(ctx, "POST", "/v1/exec", nil, body)
	if err != nil {
		return m.clientFailed("exec", err)
	}
	return m.writeAnswer("exec", status, answer)
}
