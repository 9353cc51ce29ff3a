package httpapi

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/gateway"
)

// seqOutput is what `seq 1 n` prints, with suffix on each line.
func seqOutput(n int, suffix string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d%s\n", i, suffix)
	}
	return b.String()
}

// execResult is the part of POST /v1/exec's answer the output tests read.
type execResult struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StdoutBytes     int64  `json:"stdout_bytes"`
	StdoutChars     int64  `json:"stdout_total_chars"`
	StderrChars     int64  `json:"stderr_total_chars"`
	OutputID        string `json:"output_id"`
	DecisionID      string `json:"decision_id"`
}

func (e *testEnv) execOK(t *testing.T, body map[string]any) execResult {
	t.Helper()
	a := e.exec("agent", body)
	if a.status != 200 {
		t.Fatalf("exec %v = %d %s", body, a.status, a.body)
	}
	var r execResult
	a.decode(t, &r)
	return r
}

// readAll pages through a kept output with pages of size bytes and returns it whole.
func (e *testEnv) readAll(t *testing.T, who, id, stream string, size int) string {
	t.Helper()
	var whole strings.Builder
	for start := int64(0); ; {
		a := e.do("GET", fmt.Sprintf("/v1/outputs/%s?stream=%s&start=%d&size=%d", id, stream, start, size), who, nil)
		if a.status != 200 {
			t.Fatalf("GET output %s at %d = %d %s", id, start, a.status, a.body)
		}
		var p gateway.OutputPage
		a.decode(t, &p)
		if p.Start != start || p.Len != len(p.Text) || p.Len > max(size, 4) || p.ID != id || p.Stream != stream {
			t.Fatalf("page at %d of size %d: %+v", start, size, p)
		}
		whole.WriteString(p.Text)
		if !p.HasNext {
			if int64(whole.Len()) != p.Total {
				t.Fatalf("the pages hold %d bytes, total_bytes says %d", whole.Len(), p.Total)
			}
			return whole.String()
		}
		start = p.NextStart
	}
}

// TestOutputPaging: a result cut by max_output_chars names its kept output, whose pages
// give back every byte the command wrote, on both streams, in ASCII and multi-byte text.
func TestOutputPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := seqOutput(20000, " あいう")
	r := e.execOK(t, map[string]any{"command": "seq 1 20000 | sed 's/$/ あいう/'; seq 1 3000 >&2", "max_output_chars": 1000})
	if !r.StdoutTruncated || r.OutputID == "" || r.StdoutBytes != int64(len(want)) || r.StdoutChars != int64(len([]rune(want))) {
		t.Fatalf("cut result = truncated %v, output_id %q, %d bytes, %d chars; want true, an id, %d, %d",
			r.StdoutTruncated, r.OutputID, r.StdoutBytes, r.StdoutChars, len(want), len([]rune(want)))
	}
	if !strings.HasPrefix(want, r.Stdout) || len([]rune(r.Stdout)) != 1000 {
		t.Errorf("inline stdout is not the first 1000 characters: %q", r.Stdout)
	}
	for _, size := range []int{4096, 1000, 7} {
		if size == 7 {
			// Small pages of a shorter stream: every page boundary is tried somewhere.
			if got := e.readAll(t, "agent", r.OutputID, "stderr", size); got != seqOutput(3000, "") {
				t.Errorf("stderr in pages of %d = %d bytes, want seq 1 3000", size, len(got))
			}
			continue
		}
		if got := e.readAll(t, "agent", r.OutputID, "stdout", size); got != want {
			t.Errorf("stdout in pages of %d: %d bytes, differs from what the command wrote (%d bytes)", size, len(got), len(want))
		}
	}
	// The execution record names the output.
	var named bool
	for _, rec := range e.recordsOf("execution") {
		named = named || (rec.DecisionID == r.DecisionID && bytes.Contains(rec.Detail, []byte(r.OutputID)))
	}
	if !named {
		t.Error("no execution record names the output")
	}

	// A result that was not cut keeps nothing.
	small := e.execOK(t, map[string]any{"command": "seq 1 10"})
	if small.OutputID != "" || small.StdoutChars != 21 {
		t.Errorf("uncut result: output_id %q, %d chars; want none, 21", small.OutputID, small.StdoutChars)
	}
	entries, _ := os.ReadDir(filepath.Join(e.data, "outputs"))
	var kept []string
	for _, en := range entries {
		if en.Name() != "tmp" {
			kept = append(kept, en.Name())
		}
	}
	if len(kept) != 1 || kept[0] != r.OutputID {
		t.Errorf("outputs kept: %v, want only %s", kept, r.OutputID)
	}
	if tmp, _ := os.ReadDir(filepath.Join(e.data, "outputs", "tmp")); len(tmp) != 0 {
		t.Errorf("spool files left behind: %d", len(tmp))
	}
}

// TestOutputAccess: the owner and auditors read an output; another agent, or an
// approver, cannot, and an id that is not an output's never reaches a file.
func TestOutputAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.execOK(t, map[string]any{"command": "seq 1 2000", "max_output_chars": 1000})
	other := "Bearer " + e.token("other-agent", gateway.RoleAgent)
	path := "/v1/outputs/" + r.OutputID
	for who, want := range map[string]int{"agent": 200, "auditor": 200, "admin": 200, other: 404, "approver": 403, "none": 401} {
		if a := e.do("GET", path, who, nil); a.status != want {
			t.Errorf("GET %s as %.20s = %d %s, want %d", path, who, a.status, a.body, want)
		}
	}
	// A secret beside the store: no id reaches it.
	os.WriteFile(filepath.Join(e.data, "secret"), []byte("do not read"), 0o600)
	bad := map[string]string{
		"traversal":         "/v1/outputs/" + url.PathEscape("../secret"),
		"encoded traversal": "/v1/outputs/..%2Fsecret",
		"NUL":               "/v1/outputs/" + url.PathEscape(r.OutputID+"\x00"),
		"lower case":        "/v1/outputs/" + strings.ToLower(r.OutputID),
		"unknown":           "/v1/outputs/01ARZ3NDEKTSV4RRFFQ69G5FAV",
	}
	for name, p := range bad {
		if a := e.do("GET", p, "agent", nil); a.status != 404 && a.status != 400 || bytes.Contains(a.body, []byte("do not read")) {
			t.Errorf("%s: GET %s = %d %s, want 404 or 400", name, p, a.status, a.body)
		}
	}
	params := map[string]string{
		"bad stream":       "?stream=stdin",
		"negative start":   "?start=-1",
		"start past end":   "?start=999999",
		"start not number": "?start=abc",
		"size zero":        "?size=0",
		"size not number":  "?size=1e3",
		"unknown":          "?offset=3",
		"repeated":         "?start=1&start=2",
	}
	for name, q := range params {
		if a := e.do("GET", path+q, "agent", nil); a.status != 400 || a.errorCode() != gateway.CodeInvalidArgument {
			t.Errorf("%s: GET %s%s = %d %s, want 400 INVALID_ARGUMENT", name, path, q, a.status, a.body)
		}
	}
	// A page larger than the maximum is cut to it.
	a := e.do("GET", path+"?size="+strconv.Itoa(1<<30), "agent", nil)
	var p gateway.OutputPage
	a.decode(t, &p)
	if p.Len != executor.MaxPageSize {
		t.Errorf("size 1 GiB gave a page of %d bytes, want %d", p.Len, executor.MaxPageSize)
	}
}

// TestOutputKeep: output.keep chooses what the inline result holds of a cut stream.
func TestOutputKeep(t *testing.T) {
	t.Parallel()
	whole := seqOutput(5000, "")
	for _, keep := range []executor.Keep{executor.KeepTail, executor.KeepHeadTail} {
		t.Run(string(keep), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *gateway.Options) { o.Output.Keep = keep })
			r := e.execOK(t, map[string]any{"command": "seq 1 5000", "max_output_chars": 1000})
			if !r.StdoutTruncated || r.OutputID == "" {
				t.Fatalf("result not cut: %+v", r)
			}
			switch keep {
			case executor.KeepTail:
				if r.Stdout != whole[len(whole)-1000:] {
					t.Errorf("tail kept %q…, want the last 1000 characters", gateway.Truncate(r.Stdout, 40))
				}
			case executor.KeepHeadTail:
				marker := executor.CutMarker(int64(len(whole) - 1000))
				if r.Stdout != whole[:500]+marker+whole[len(whole)-500:] {
					t.Errorf("head_tail kept %q, want 500 + marker + 500", r.Stdout)
				}
			}
			if got := e.readAll(t, "agent", r.OutputID, "stdout", 4096); got != whole {
				t.Errorf("the kept output differs from what the command wrote")
			}
		})
	}
}

// TestOutputsOff: with output.max_bytes -1 nothing is kept and the API says why.
func TestOutputsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *gateway.Options) { o.Output.MaxBytes = -1 })
	r := e.execOK(t, map[string]any{"command": "seq 1 2000", "max_output_chars": 1000})
	if !r.StdoutTruncated || r.OutputID != "" {
		t.Errorf("with outputs off: truncated %v, output_id %q; want true, none", r.StdoutTruncated, r.OutputID)
	}
	if a := e.do("GET", "/v1/outputs/01ARZ3NDEKTSV4RRFFQ69G5FAV", "agent", nil); a.status != 404 || !bytes.Contains(a.body, []byte("max_bytes")) {
		t.Errorf("GET output with outputs off = %d %s", a.status, a.body)
	}
}
