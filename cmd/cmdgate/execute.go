package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"unicode/utf8"
)

const executeUsage = `usage: cmdgate execute [flags] 'PIPELINE'

Reads an allowlisted file of a cmdgate gateway through its read-only pipeline language
(POST /v1/execute), which never starts a shell or a process:

  cmdgate execute 'cat docs/guide.md | grep -n TODO | head -n 20'
  cmdgate execute 'sed -n 1,200p src/main.go'

Stages: cat FILE (first), nl, head [-n N], tail [-n N], wc -l|-c, sort [-r],
grep [-n] FIXED_STRING, sed -n Np|Nd|N,Mp|N,Md; head/tail/nl/sed may name the file
themselves. The gateway's readonly.allow lists the files it may read.

Prints one JSON object on stdout: {"schema_version":1,"ok":true,"type":"execute",
"decision","decision_id","command","file","exit_code","error_name","message","stdout_text",
"stdout_len","total_bytes","truncated","has_next_start","next_start"}. A refused read
is ok:true with the language's exit_code (2 outside the language, 3 not allowed, 4 too
large, 1 I/O) and error_name; ok:false is the gateway's error. Page on with --start
NEXT_START while truncated is true.

The gateway is --url, else $CMDGATE_URL, else http://127.0.0.1:8080. The token is read
from $CMDGATE_TOKEN, or from --token-file (never from a flag value); a reader token
(cmdgate token create --role reader) may do this and nothing else.

Exit status: 0 when the gateway answered, 1 when it could not be reached, 2 for a wrong
command line.

flags:`

// runExecute implements `cmdgate execute`, the client of POST /v1/execute.
func (m *Main) runExecute(ctx context.Context, args []string) int {
	fs, urlFlag, tokenFile := m.clientFlagSet("execute", executeUsage)
	start, size := pageFlags(fs)
	rest, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(rest) != 1 {
		fmt.Fprintln(m.Stderr, "cmdgate execute: give the pipeline as one argument (quote it)")
		return exitUsage
	}
	if *start < 0 || *size < 0 {
		fmt.Fprintln(m.Stderr, "cmdgate execute: --start and --size must not be negative")
		return exitUsage
	}
	if !utf8.ValidString(rest[0]) {
		return m.writeError("execute", "INVALID_ARGUMENT", "the pipeline is not valid UTF-8")
	}
	body := map[string]any{"command": rest[0]}
	if *start > 0 {
		body["start"] = *start
	}
	if *size > 0 {
		body["size"] = *size
	}
	client, err := m.newClient(*urlFlag, *tokenFile)
	if err != nil {
		return m.writeError("execute", "INVALID_ARGUMENT", err.Error())
	}
	status, answer, err := client.call(ctx, "POST", "/v1/execute", nil, body)
	if err != nil {
		return m.clientFailed("execute", err)
	}
	return m.writeAnswer("execute", status, answer)
}

const outputUsage = `usage: cmdgate output [flags] OUTPUT_ID

Prints a page of the whole output of a command whose result was cut (its output_id), or
of a background job's log (its job id), from a cmdgate gateway (GET /v1/outputs/{id}):
one JSON object {"schema_version":1,"ok":true,"type":"output","output_id","stream",
"start","stdout_text","stdout_len","total_bytes","truncated","has_next_start",
"next_start","stream_bytes","expires_at"}. Page on with --start NEXT_START while
truncated is true.

The gateway is --url, else $CMDGATE_URL, else http://127.0.0.1:8080. The token is read
from $CMDGATE_TOKEN, or from --token-file.

flags:`

// runOutput implements `cmdgate output`, the client of GET /v1/outputs/{id}.
func (m *Main) runOutput(ctx context.Context, args []string) int {
	fs, urlFlag, tokenFile := m.clientFlagSet("output", outputUsage)
	stream := fs.String("stream", "stdout", "stdout or stderr")
	start, size := pageFlags(fs)
	rest, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(rest) != 1 || rest[0] == "" {
		fmt.Fprintln(m.Stderr, "cmdgate output: give one output id")
		return exitUsage
	}
	if *start < 0 || *size < 0 {
		fmt.Fprintln(m.Stderr, "cmdgate output: --start and --size must not be negative")
		return exitUsage
	}
	q := url.Values{"stream": {*stream}, "start": {strconv.FormatInt(*start, 10)}}
	if *size > 0 {
		q.Set("size", strconv.FormatInt(*size, 10))
	}
	client, err := m.newClient(*urlFlag, *tokenFile)
	if err != nil {
		return m.writeError("output", "INVALID_ARGUMENT", err.Error())
	}
	status, answer, err := client.call(ctx, "GET", "/v1/outputs/"+url.PathEscape(rest[0]), q, nil)
	if err != nil {
		return m.clientFailed("output", err)
	}
	return m.writeAnswer("output", status, answer)
}

// clientFlagSet is the flag set of the client subcommand name: its usage text, and the
// --url and --token-file every client takes.
func (m *Main) clientFlagSet(name, usage string) (fs *flag.FlagSet, url, tokenFile *string) {
	fs = flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	url = fs.String("url", "", "gateway URL (default $CMDGATE_URL, else "+defaultURL+")")
	tokenFile = fs.String("token-file", "", "read the token from this file instead of $CMDGATE_TOKEN")
	return fs, url, tokenFile
}

// pageFlags are the --start and --size of a paged answer.
func pageFlags(fs *flag.FlagSet) (start, size *int64) {
	start = fs.Int64("start", 0, "byte offset of the page (next_start of the previous one)")
	size = fs.Int64("size", 0, "bytes of the page, at most 4096 (default 4096)")
	return start, size
}
