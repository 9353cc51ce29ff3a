package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the transport of `cmdgate mcp`: one JSON-RPC message per line on r
// and w. The SDK ends a session on a line it cannot decode; here such a line (not JSON,
// not valid UTF-8, or longer than maxLine bytes) is answered with a JSON-RPC parse
// error and skipped, and the session goes on. Go's JSON decoder would replace invalid
// UTF-8 silently: it never reaches it.
func StdioTransport(r io.Reader, w io.Writer, maxLine int) sdk.Transport {
	out := &lockedWriter{w: w}
	return &sdk.IOTransport{Reader: &lineFilter{in: bufio.NewReaderSize(r, 64<<10), out: out, max: maxLine}, Writer: out}
}

// lockedWriter serializes the SDK's messages and the filter's errors: each is one
// whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// lineFilter passes the lines that are JSON and valid UTF-8 on to the SDK.
type lineFilter struct {
	in   *bufio.Reader
	out  *lockedWriter
	max  int
	line []byte // what is left of the current line
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.line) == 0 {
		line, tooLong, err := f.next()
		if len(line) == 0 && !tooLong && err != nil {
			return 0, err
		}
		switch trimmed := bytes.TrimSpace(line); {
		case tooLong:
			f.parseError("the message is larger than the limit")
		case len(trimmed) == 0:
		case !utf8.Valid(trimmed):
			f.parseError("the message is not valid UTF-8")
		case !json.Valid(trimmed):
			f.parseError("the message is not JSON")
		default:
			f.line = append(trimmed, '\n')
		}
		if err != nil && len(f.line) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.line)
	f.line = f.line[n:]
	return n, nil
}

// next reads one line, or discards one longer than max (tooLong).
func (f *lineFilter) next() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := f.in.ReadSlice('\n')
		if len(line)+len(chunk) > f.max {
			tooLong, line = true, nil
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, tooLong, err
	}
}

func (f *lineFilter) parseError(msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": msg}})
	f.out.Write(append(b, '\n'))
}

// Close is the reader's: stdin is the process's, closed by the client.
func (f *lineFilter) Close() error { return nil }
