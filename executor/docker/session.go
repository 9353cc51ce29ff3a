package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// Sessions: an exec costs the engine a runtime call (runc exec: namespaces joined, a
// process set up) of some 40 ms, more than everything else a command through cmdgate
// costs. So an Executor keeps a few long-lived execs in its container, each running a
// small POSIX sh loop (the agent below) that reads one request at a time on its standard
// input and runs it as the one-exec wrapper did: with setsid (a process group of its
// own), its standard input from a file, its output straight into the exec's streams,
// and, once it exited, whatever is left of its group killed. After each command the
// agent writes an end marker, carrying a random nonce of the request and the exit
// status, on both streams; the Executor reads the streams up to the markers. A session
// serves one command at a time; concurrent commands take more sessions, and at most
// maxIdle wait for the next command.

// SessionName is the $0 of every session's agent: its processes are named by it.
const SessionName = "cmdgate-session"

// maxIdle bounds the sessions an Executor keeps waiting.
const maxIdle = 4

// cdFailed is the agent's status when the working directory cannot be entered.
const cdFailed = 226

// agent is the session's loop. A request is one line: the nonce, the mode (shell or
// direct), the pid file, the length of the standard input that follows the line, then
// the working directory and the words (the script, or the argv), each written as "x"
// and its bytes with every one but [A-Za-z0-9_./-] as a \0ooo escape of printf %b.
const agent = `s=; command -v setsid >/dev/null 2>&1 && s=setsid
b=; command -v bash >/dev/null 2>&1 && b=1
while IFS=' ' read -r n m p l d a; do
  v=$(printf '%bx' "${d#x}"); dir=${v%x}
  set -f; set -- $a; set +f
  i=$#
  for w do v=$(printf '%bx' "${w#x}"); set -- "$@" "${v%x}"; done
  shift $i
  in=/dev/null
  if [ "$l" -gt 0 ]; then in=$p.in; head -c "$l" >"$in"; fi
  c=; r=226
  if cd -- "$dir" 2>/dev/null; then
    if [ "$m" = direct ]; then
      if command -v -- "$1" >/dev/null 2>&1; then $s "$@" <"$in" & c=$!; else r=227; fi
    elif [ -n "$b" ]; then
      $s bash -c "$1" <"$in" & c=$!
    else
      $s sh -c "$1" <"$in" & c=$!
    fi
    if [ -n "$c" ]; then
      echo "$c" >"$p"; wait "$c"; r=$?
      kill -s KILL -- "-$c" 2>/dev/null; rm -f "$p"
    fi
    cd /
  fi
  [ "$in" = /dev/null ] || rm -f "$in"
  printf '\001CMDGATE-END %s %s\001' "$n" "$r"
  printf '\001CMDGATE-END %s %s\001' "$n" "$r" >&2
done`

// session is one long-lived exec running the agent.
type session struct {
	conn client.HijackedResponse
	dead chan struct{} // closed when the streams ended: the agent is gone

	mu       sync.Mutex
	out, err *endScanner // the current command's; nil between commands
}

// newSession starts a session in the Executor's container.
func (e *Executor) newSession(ctx context.Context) (*session, error) {
	env := make([]string, 0, len(e.cfg.EnvSet))
	for _, k := range slices.Sorted(maps.Keys(e.cfg.EnvSet)) {
		env = append(env, k+"="+e.cfg.EnvSet[k])
	}
	created, err := e.cli.ExecCreate(ctx, e.container, client.ExecCreateOptions{
		User: e.user, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: env, Cmd: []string{"sh", "-c", agent, SessionName},
	})
	if err != nil {
		return nil, engineError("create a session", err)
	}
	att, err := e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, engineError("start a session", err)
	}
	s := &session{conn: att.HijackedResponse, dead: make(chan struct{})}
	go func() {
		defer close(s.dead)
		stdcopy.StdCopy(sink{s, false}, sink{s, true}, att.Reader)
		s.close() // the agent is gone: release the connection
	}()
	return s, nil
}

// sink passes a stream's output to the current command's scanner; output between
// commands (of a process that left its command's group) is dropped.
type sink struct {
	s      *session
	stderr bool
}

func (k sink) Write(p []byte) (int, error) {
	k.s.mu.Lock()
	sc := k.s.out
	if k.stderr {
		sc = k.s.err
	}
	k.s.mu.Unlock()
	if sc != nil {
		sc.Write(p)
	}
	return len(p), nil
}

func (s *session) close() { s.conn.Close() }

// begin makes out and err the current command's output, ended by the nonce's markers.
func (s *session) begin(nonce string, out, err io.Writer) (o, e *endScanner) {
	o, e = newEndScanner(nonce, out), newEndScanner(nonce, err)
	s.mu.Lock()
	s.out, s.err = o, e
	s.mu.Unlock()
	return o, e
}

// end detaches the current command.
func (s *session) end() {
	s.mu.Lock()
	s.out, s.err = nil, nil
	s.mu.Unlock()
}

// send writes a request: its line, then its standard input.
func (s *session) send(nonce, mode, pidFile, dir string, words []string, stdin string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %d x%s", nonce, mode, pidFile, len(stdin), shellEscape(dir))
	for _, w := range words {
		b.WriteString(" x" + shellEscape(w))
	}
	b.WriteByte('\n')
	b.WriteString(stdin)
	_, err := io.WriteString(s.conn.Conn, b.String())
	return err
}

// shellEscape writes every byte of s but [A-Za-z0-9_./-] as a \0ooo escape, which
// printf %b turns back into the byte.
func shellEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, `\0%03o`, c)
	}
	return b.String()
}

// endScanner passes a stream on to w up to the end marker of its nonce, and then holds
// the marker's status.
type endScanner struct {
	marker  []byte
	w       io.Writer
	mu      sync.Mutex
	pending []byte
	status  int
	done    chan struct{}
}

func newEndScanner(nonce string, w io.Writer) *endScanner {
	return &endScanner{marker: []byte("\x01CMDGATE-END " + nonce + " "), w: w, done: make(chan struct{})}
}

// markerTail bounds the status and the closing byte after the marker.
const markerTail = 8

func (e *endScanner) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.done:
		return len(p), nil // after the end: not this command's
	default:
	}
	e.pending = append(e.pending, p...)
	for {
		i := bytes.Index(e.pending, e.marker)
		if i < 0 {
			break
		}
		rest := e.pending[i+len(e.marker):]
		j := bytes.IndexByte(rest, 1)
		if j < 0 && len(rest) <= markerTail {
			e.w.Write(e.pending[:i]) // the rest of the marker is still to come
			e.pending = append(e.pending[:0], e.pending[i:]...)
			return len(p), nil
		}
		code, err := 0, errors.New("no status")
		if j >= 0 {
			code, err = strconv.Atoi(string(rest[:j]))
		}
		if err != nil { // not a marker after all: pass its first byte on
			e.w.Write(e.pending[:i+1])
			e.pending = append(e.pending[:0], e.pending[i+1:]...)
			continue
		}
		e.w.Write(e.pending[:i])
		e.pending, e.status = nil, code
		close(e.done)
		return len(p), nil
	}
	// A marker starts with \x01: keep from the last one when a marker could still
	// follow it, pass the rest on.
	n := len(e.pending)
	if k := bytes.LastIndexByte(e.pending, 1); k >= 0 && len(e.pending)-k <= len(e.marker)+markerTail {
		n = k
	}
	e.w.Write(e.pending[:n])
	e.pending = append(e.pending[:0], e.pending[n:]...)
	return len(p), nil
}

// acquire takes an idle session, or starts one.
func (e *Executor) acquire(ctx context.Context) (*session, error) {
	e.mu.Lock()
	for len(e.idle) > 0 {
		s := e.idle[len(e.idle)-1]
		e.idle = e.idle[:len(e.idle)-1]
		select {
		case <-s.dead:
			continue
		default:
		}
		e.mu.Unlock()
		return s, nil
	}
	e.mu.Unlock()
	return e.newSession(ctx)
}

// release keeps a session for the next command, or closes it when enough wait.
func (e *Executor) release(s *session) {
	s.end()
	e.mu.Lock()
	if !e.closed && len(e.idle) < maxIdle {
		e.idle = append(e.idle, s)
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	s.close()
}

// Warm starts a session ahead of the first command, so that it does not wait for one.
func (e *Executor) Warm(ctx context.Context) error {
	s, err := e.newSession(ctx)
	if err != nil {
		return err
	}
	e.release(s)
	return nil
}

// Close ends the waiting sessions; commands running keep theirs until they end.
func (e *Executor) Close() error {
	e.mu.Lock()
	idle := e.idle
	e.idle, e.closed = nil, true
	e.mu.Unlock()
	for _, s := range idle {
		s.close()
	}
	return nil
}
