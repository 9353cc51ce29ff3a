//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/cmdgate/cmdgate/jobs"
)

// End-to-end tests of background jobs through a real `cmdgate serve`: the program is
// built once, the gateway runs as a process of its own on 127.0.0.1 with its data
// directory, job root and workspace in a temporary directory, and the jobs run in the
// job host it starts detached (`cmdgate job host`). The tests talk raw HTTP to /v1/jobs
// and run `cmdgate job` as a client of it; they signal only the processes they started,
// directly or through the gateway, by pid.

// jsProgram is the real cmdgate program, with cmdgate-sandbox beside it, built once per
// test binary (job_test.go's build).
var jsProgram = localCmdgate

// jsWait bounds every wait of these tests for something to happen.
const jsWait = 2 * time.Minute

// jsEnv is one gateway's world: data directory, job root, workspace, home, and the
// environment every cmdgate process of the test gets.
type jsEnv struct {
	bin, dir, data, jobRoot, ws, config string
	env                                 []string
}

// jsNewEnv makes the directories and the environment; config, when not "", is the
// YAML of a configuration file given to serve with --config.
func jsNewEnv(t *testing.T, config string) *jsEnv {
	t.Helper()
	if runtime.GOOS != "linux" {
		testenv.Skip(t, "these tests look for processes in /proc and signal them: linux only")
	}
	bin, err := jsProgram()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &jsEnv{bin: bin, dir: dir, data: filepath.Join(dir, "data"), jobRoot: filepath.Join(dir, "jobs"), ws: filepath.Join(dir, "ws")}
	for _, d := range []string{e.ws, filepath.Join(dir, "home")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if config != "" {
		e.config = filepath.Join(dir, "cmdgate.yaml")
		if err := os.WriteFile(e.config, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "CMDGATE_") || name == "HOME" || name == "XDG_DATA_HOME" || name == "PATH" {
			continue
		}
		e.env = append(e.env, kv)
	}
	e.env = append(e.env, "HOME="+filepath.Join(dir, "home"), "XDG_DATA_HOME="+filepath.Join(dir, "xdg"),
		"CMDGATE_DATA="+e.data, "CMDGATE_JOB_ROOT="+e.jobRoot, "CMDGATE_WORKSPACE="+e.ws,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Registered after t.TempDir and before the gateways' cleanups: it runs after the
	// gateways are gone and before the directory is removed.
	t.Cleanup(func() { e.stopJobs(t) })
	return e
}

// hostPids lists the job hosts of this test's job root still running (a host's
// command line names the root, a directory of this test's own).
func (e *jsEnv) hostPids() []int { return testenv.JobHosts(e.jobRoot) }

// waitNoHost waits until no job host of the root runs: a gateway that closes with no
// job running takes its host with it.
func (e *jsEnv) waitNoHost(t *testing.T) {
	t.Helper()
	jsEventually(t, "the job host leaves with its gateway", func() (bool, string) {
		pids := e.hostPids()
		return len(pids) == 0, fmt.Sprint("job hosts ", pids)
	})
}

// stopJobs stops, with SIGTERM, the job hosts of this test left running (a failed test
// leaves them; the host then kills its jobs and records their end), and waits until they
// are gone, so that the temporary directory can be removed. The hosts were started by
// this test's gateways: they are found by the test's own job root in their command line
// and signalled by pid.
func (e *jsEnv) stopJobs(t *testing.T) {
	pids := e.hostPids()
	for _, pid := range pids {
		t.Logf("cleanup: a job host of this test still runs (pid %d): stopping it", pid)
		syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(jsWait); len(pids) > 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pids = e.hostPids()
	}
	if len(pids) > 0 {
		t.Errorf("cleanup: job hosts %v did not stop within %v of SIGTERM", pids, jsWait)
	}
}

// run runs cmdgate with args in the workspace, with extra variables, and answers its
// stdout, stderr and exit status.
func (e *jsEnv) run(t *testing.T, extra []string, args ...string) ([]byte, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jsWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(slices.Clip(e.env), extra...)
	cmd.Dir = e.ws
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("cmdgate %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
		}
		code = ee.ExitCode()
	}
	return stdout.Bytes(), stderr.String(), code
}

// token creates a token and answers its secret.
func (e *jsEnv) token(t *testing.T, role, name string) string {
	t.Helper()
	out, stderr, code := e.run(t, nil, "token", "create", "--role", role, "--name", name)
	var r struct {
		OK    bool   `json:"ok"`
		Token string `json:"token"`
	}
	if code != 0 || json.Unmarshal(out, &r) != nil || !r.OK || r.Token == "" {
		t.Fatalf("token create --role %s --name %s: exit %d\n%s\n%s", role, name, code, out, stderr)
	}
	return r.Token
}

// jobDirs lists the job directories of the root.
func (e *jsEnv) jobDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(e.jobRoot)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, en := range entries {
		if en.IsDir() && !strings.HasPrefix(en.Name(), ".") {
			ids = append(ids, en.Name())
		}
	}
	return ids
}

// auditVerify runs `cmdgate audit verify` on the data directory: it must succeed.
func (e *jsEnv) auditVerify(t *testing.T) {
	t.Helper()
	out, stderr, code := e.run(t, nil, "audit", "verify", "--data", e.data)
	var r map[string]any
	if code != 0 || json.Unmarshal(out, &r) != nil || r["ok"] != true || jsNum(r, "records") < 1 {
		t.Errorf("cmdgate audit verify: exit %d\n%s\n%s", code, out, stderr)
	}
}

// auditRecords reads the whole audit log, newest first.
func (e *jsEnv) auditRecords(t *testing.T) []map[string]any {
	t.Helper()
	out, stderr, code := e.run(t, nil, "audit", "query", "--data", e.data, "--limit", "1000")
	var r struct {
		OK         bool             `json:"ok"`
		Records    []map[string]any `json:"records"`
		NextCursor string           `json:"next_cursor"`
	}
	if code != 0 || json.Unmarshal(out, &r) != nil || !r.OK {
		t.Fatalf("cmdgate audit query: exit %d\n%s\n%s", code, out, stderr)
	}
	if r.NextCursor != "" {
		t.Fatalf("cmdgate audit query: more than 1000 records")
	}
	return r.Records
}

// jsGateway is a `cmdgate serve` process.
type jsGateway struct {
	e      *jsEnv
	cmd    *exec.Cmd
	url    string
	exited chan struct{}
	err    error
}

// serve starts `cmdgate serve` on 127.0.0.1, port 0, and waits for its address file.
func (e *jsEnv) serve(t *testing.T) *jsGateway {
	t.Helper()
	addrFile := filepath.Join(e.dir, "addr")
	os.Remove(addrFile)
	logf, err := os.OpenFile(filepath.Join(e.dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile}
	if e.config != "" {
		args = append(args, "--config", e.config)
	}
	g := &jsGateway{e: e, cmd: exec.Command(e.bin, args...), exited: make(chan struct{})}
	g.cmd.Env, g.cmd.Dir, g.cmd.Stdout, g.cmd.Stderr = e.env, e.ws, logf, logf
	if err := g.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		g.err = g.cmd.Wait()
		logf.Close()
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			g.cmd.Process.Kill()
			<-g.exited
		}
	})
	for deadline := time.Now().Add(jsWait); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			g.url = "http://" + string(bytes.TrimSpace(b))
			return g
		}
		select {
		case <-g.exited:
			t.Fatalf("cmdgate serve exited before listening: %v\n%s", g.err, e.serveLog())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("cmdgate serve did not write its address within %v\n%s", jsWait, e.serveLog())
		}
	}
}

// stop sends SIGTERM to the gateway and waits for it to exit.
func (g *jsGateway) stop(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM the gateway: %v", err)
	}
	select {
	case <-g.exited:
		if g.err != nil {
			t.Errorf("cmdgate serve ended with %v after SIGTERM\n%s", g.err, g.e.serveLog())
		}
	case <-time.After(jsWait):
		t.Fatalf("cmdgate serve did not exit within %v of SIGTERM\n%s", jsWait, g.e.serveLog())
	}
}

// alive fails the test when the gateway has exited.
func (g *jsGateway) alive(t *testing.T) {
	t.Helper()
	select {
	case <-g.exited:
		t.Fatalf("cmdgate serve exited: %v\n%s", g.err, g.e.serveLog())
	default:
	}
	if r := jsCall(t, "GET", g.url+"/healthz", "", nil); r.status != 200 {
		t.Fatalf("GET /healthz = %s", r)
	}
}

func (e *jsEnv) serveLog() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "serve.log"))
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return "serve.log (end):\n" + string(b)
}

// jsReply is an HTTP answer: its status, body, and the body decoded when it is a JSON
// object.
type jsReply struct {
	status int
	raw    []byte
	obj    map[string]any
}

func (r jsReply) String() string {
	raw := r.raw
	if len(raw) > 3000 {
		raw = append(raw[:3000:3000], "…"...)
	}
	return fmt.Sprintf("HTTP %d %s", r.status, raw)
}

var jsClient = &http.Client{Timeout: jsWait + 30*time.Second}

// jsCall sends one request; token "" sends none.
func jsCall(t *testing.T, method, url, token string, body []byte) jsReply {
	t.Helper()
	r, err := jsDo(method, url, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// jsDo is jsCall for a goroutine of its own: it answers the failure.
func jsDo(method, url, token string, body []byte) (jsReply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return jsReply{}, fmt.Errorf("%s %s: %v", method, url, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := jsClient.Do(req)
	if err != nil {
		return jsReply{}, fmt.Errorf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return jsReply{}, fmt.Errorf("%s %s: read the answer: %v", method, url, err)
	}
	r := jsReply{status: resp.StatusCode, raw: raw}
	json.Unmarshal(raw, &r.obj)
	return r, nil
}

// jsAsync sends a request from a goroutine of its own; receive its answer with
// jsAnswer.
func jsAsync(method, url, token string, body []byte) <-chan jsAsyncReply {
	c := make(chan jsAsyncReply, 1)
	go func() {
		r, err := jsDo(method, url, token, body)
		c <- jsAsyncReply{r, err}
	}()
	return c
}

type jsAsyncReply struct {
	r   jsReply
	err error
}

func jsAnswer(t *testing.T, c <-chan jsAsyncReply) jsReply {
	t.Helper()
	a := <-c
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.r
}

// jsBody is v as JSON.
func jsBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// jsGet walks the nested objects of v along path.
func jsGet(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func jsStr(v any, path ...string) string {
	s, _ := jsGet(v, path...).(string)
	return s
}

// jsNum is a JSON number along path (-1 when there is none).
func jsNum(v any, path ...string) float64 {
	if n, ok := jsGet(v, path...).(float64); ok {
		return n
	}
	return -1
}

// jsErrCode is the error code of an answer, in the job form ({"ok":false,"error":...})
// or the front's ({"error":...}).
func jsErrCode(r jsReply) string { return jsStr(r.obj, "error", "code") }

// jsOK checks a job call that succeeded: HTTP 200 and the envelope of type typ.
func jsOK(t *testing.T, what string, r jsReply, typ string) map[string]any {
	t.Helper()
	if r.status != 200 || r.obj == nil || r.obj["schema_version"] != 1.0 || r.obj["ok"] != true || r.obj["type"] != typ {
		t.Fatalf("%s: want HTTP 200 ok type %s, got %s", what, typ, r)
	}
	return r.obj
}

// jsFail checks a job call that failed in the job form: the status, the envelope and
// the error code, with a message.
func jsFail(t *testing.T, what string, r jsReply, status int, code string) {
	t.Helper()
	if r.status != status || r.obj == nil || r.obj["schema_version"] != 1.0 || r.obj["ok"] != false ||
		jsErrCode(r) != code || jsStr(r.obj, "error", "message") == "" {
		t.Errorf("%s: want HTTP %d with error %s, got %s", what, status, code, r)
	}
}

// jsTag is a random tag for file names and output markers.
func jsTag() string {
	var b [5]byte
	rand.Read(b[:])
	return "js" + hex.EncodeToString(b[:])
}

// jsSleepMarker is a sleep duration no other process has in its command line: the
// job's processes are found by it in /proc.
func jsSleepMarker() string {
	var b [8]byte
	rand.Read(b[:])
	n := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	m := uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	return fmt.Sprintf("%d.%09d", 600+n%300, m%1000000000)
}

// jsSleepScript prints ready-TAG, then sleeps marker seconds.
func jsSleepScript(tag, marker string) string {
	return fmt.Sprintf("echo ready-%s; sleep %s; echo never", tag, marker)
}

// jsGatedScript prints step1-TAG, waits for the file TAG.1 in the workspace, prints
// step2-TAG, waits for TAG.2, prints done-TAG on stderr and exits 7. Each wait gives up
// after about five minutes, so a job a crashed test leaves behind ends by itself.
func jsGatedScript(tag string) string {
	return fmt.Sprintf("echo step1-%[1]s; for i in $(seq 6000); do [ -e %[1]s.1 ] && break; sleep 0.05; done; "+
		"echo step2-%[1]s; for i in $(seq 6000); do [ -e %[1]s.2 ] && break; sleep 0.05; done; echo done-%[1]s >&2; exit 7", tag)
}

// touch creates a file in the workspace.
func (e *jsEnv) touch(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.ws, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsProcsWith lists the processes whose command line holds marker (it only looks).
func jsProcsWith(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, en := range entries {
		if _, err := strconv.Atoi(en.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, en.Name()+": "+strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))))
		}
	}
	return found
}

// jsEventually polls f until it is true or jsWait passes; then it fails with the last
// of f's descriptions.
func jsEventually(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(jsWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var ok bool
		if ok, last = f(); ok {
			return
		}
	}
	t.Fatalf("%s: not within %v; last: %s", what, jsWait, last)
}

// startJob starts a job through POST /v1/jobs and checks the answer; unless body
// has snapshot_after_ms, the call answers at once, with the job running.
func (g *jsGateway) startJob(t *testing.T, token string, body map[string]any) map[string]any {
	t.Helper()
	_, waits := body["snapshot_after_ms"]
	if !waits {
		body["snapshot_after_ms"] = 0
	}
	run := jsOK(t, "POST /v1/jobs", jsCall(t, "POST", g.url+"/v1/jobs", token, jsBody(body)), "job.run")
	if id := jsStr(run, "job_id"); !jobs.ValidID(id) || (!waits && run["state"] != "running") || jsStr(run, "job", "job_id") != id {
		t.Fatalf("POST /v1/jobs %v: %v", body, run)
	}
	return run
}

// waitOutput waits until the job's stdout holds want, and answers the tail.
func (g *jsGateway) waitOutput(t *testing.T, token, id, want string) map[string]any {
	t.Helper()
	var tail map[string]any
	jsEventually(t, "job "+id+" prints "+want, func() (bool, string) {
		r := jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/tail", token, nil)
		tail = jsOK(t, "GET tail", r, "job.tail")
		return strings.Contains(jsStr(tail, "stdout_tail"), want), r.String()
	})
	return tail
}

// kill kills a job through the API as token and checks it ended killed.
func (g *jsGateway) kill(t *testing.T, token, id string) map[string]any {
	t.Helper()
	k := jsOK(t, "kill "+id, jsCall(t, "POST", g.url+"/v1/jobs/"+id+"/kill", token, []byte(`{"signal":"TERM"}`)), "job.kill")
	if k["job_id"] != id || k["state"] != "killed" || k["signal"] != "TERM" || k["sent_signal"] != "TERM" {
		t.Errorf("kill %s: %v", id, k)
	}
	return k
}

// jsIgnored are the members that differ between two answers a moment apart.
var jsIgnored = map[string]bool{"updated_at": true, "waited_ms": true}

func jsNormalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if !jsIgnored[k] {
				out[k] = jsNormalize(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsNormalize(x)
		}
		return out
	}
	return v
}

// jsSameAsCLI runs `cmdgate job ARGS` as a client of the gateway and checks that it
// printed one JSON object equal to the HTTP answer r (but for the members that
// differ in time), and exited 0 when ok, 1 when not.
func (g *jsGateway) jsSameAsCLI(t *testing.T, token string, r jsReply, args ...string) map[string]any {
	t.Helper()
	out, stderr, code := g.e.run(t, []string{"CMDGATE_URL=" + g.url, "CMDGATE_TOKEN=" + token}, append([]string{"job"}, args...)...)
	var cli map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&cli); err != nil || dec.More() || !bytes.HasSuffix(out, []byte("}\n")) {
		t.Fatalf("cmdgate job %s: stdout is not one JSON object: %v\n%s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
	}
	if r.obj == nil {
		t.Fatalf("HTTP answer for cmdgate job %s is not a JSON object: %s", strings.Join(args, " "), r)
	}
	if !reflect.DeepEqual(jsNormalize(cli), jsNormalize(r.obj)) {
		t.Errorf("cmdgate job %s printed\n%s\nbut the HTTP body is\n%s", strings.Join(args, " "), out, r.raw)
	}
	if want := map[bool]int{true: 0, false: 1}[cli["ok"] == true]; code != want {
		t.Errorf("cmdgate job %s: exit %d, want %d (stderr %s)", strings.Join(args, " "), code, want, stderr)
	}
	return cli
}

func jsKeys(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

func jsListHas(list map[string]any, id string) (map[string]any, bool) {
	js, _ := list["jobs"].([]any)
	for _, j := range js {
		if jm, ok := j.(map[string]any); ok && jm["job_id"] == id {
			return jm, true
		}
	}
	return nil, false
}

// TestJobServeLifecycle runs a job through the HTTP API of a real gateway: started, its
// status and tail while it runs (the tail grows as it prints), a wait that times out,
// then one that sees it exit with its exit code; then a job through `cmdgate job` as a
// client of the same gateway, every answer the same JSON object as the HTTP body.
func TestJobServeLifecycle(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent := e.token(t, "agent", "alice")
	g := e.serve(t)
	ws, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		t.Fatal(err)
	}

	// Raw HTTP.
	tag := jsTag()
	script := jsGatedScript(tag)
	run := g.startJob(t, agent, map[string]any{"command": script})
	id := jsStr(run, "job_id")
	if run["decision"] != "allow" || jsStr(run, "decision_id") == "" || jsStr(run, "job", "principal") != "alice" ||
		jsStr(run, "job", "command") != script || jsStr(run, "job", "cwd") != ws || jsNum(run, "job", "pid") <= 0 ||
		jsStr(run, "job", "decision_id") != jsStr(run, "decision_id") || jsStr(run, "snapshot", "encoding") != "utf-8-lossy" {
		t.Errorf("run: %v", run)
	}
	st := jsOK(t, "status", jsCall(t, "GET", g.url+"/v1/jobs/"+id, agent, nil), "job.status")
	if st["job_id"] != id || st["state"] != "running" || st["exit_code"] != nil {
		t.Errorf("status while running: %v", st)
	}
	if st := jsOK(t, "status by prefix", jsCall(t, "GET", g.url+"/v1/jobs/"+id[:8], agent, nil), "job.status"); st["job_id"] != id {
		t.Errorf("status of prefix %s: %v", id[:8], st)
	}
	tail := g.waitOutput(t, agent, id, "step1-"+tag+"\n")
	first := jsNum(tail, "stdout_observed_bytes")
	if tail["state"] != "running" || strings.Contains(jsStr(tail, "stdout_tail"), "step2") || first <= 0 {
		t.Errorf("tail before the first gate: %v", tail)
	}
	w := jsOK(t, "short wait", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/wait?timeout_ms=50", agent, nil), "job.wait")
	if w["finished"] != false || w["timed_out"] != true || w["state"] != "running" || w["job_id"] != id {
		t.Errorf("wait of 50 ms on a running job: %v", w)
	}
	e.touch(t, tag+".1")
	tail = g.waitOutput(t, agent, id, "step2-"+tag+"\n")
	if tail["state"] != "running" || jsNum(tail, "stdout_observed_bytes") <= first ||
		jsStr(tail, "stdout_tail") != "step1-"+tag+"\nstep2-"+tag+"\n" {
		t.Errorf("tail after the first gate (it must have grown from %v bytes): %v", first, tail)
	}
	last := jsOK(t, "tail lines=1", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/tail?lines=1", agent, nil), "job.tail")
	if last["stdout_tail"] != "step2-"+tag+"\n" {
		t.Errorf("tail?lines=1: %v", last)
	}
	few := jsOK(t, "tail max_bytes=3", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/tail?max_bytes=3&lines=0", agent, nil), "job.tail")
	if few["stdout_tail"] != tag[len(tag)-2:]+"\n" || jsNum(few, "stdout_included_bytes") != 3 {
		t.Errorf("tail?max_bytes=3: %v", few)
	}
	e.touch(t, tag+".2")
	w = jsOK(t, "wait", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/wait?timeout_ms=120000", agent, nil), "job.wait")
	if w["finished"] != true || w["timed_out"] != false || w["state"] != "exited" || w["exit_code"] != 7.0 {
		t.Errorf("wait for the end: %v", w)
	}
	st = jsOK(t, "status", jsCall(t, "GET", g.url+"/v1/jobs/"+id, agent, nil), "job.status")
	if st["state"] != "exited" || st["exit_code"] != 7.0 || jsStr(st, "finished_at") == "" {
		t.Errorf("status after the end: %v", st)
	}
	tail = jsOK(t, "tail", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/tail", agent, nil), "job.tail")
	if tail["stderr_tail"] != "done-"+tag+"\n" || tail["state"] != "exited" {
		t.Errorf("tail after the end: %v", tail)
	}
	for q, want := range map[string]bool{"": true, "?state=exited": true, "?state=running": false, "?limit=1": true} {
		l := jsOK(t, "list"+q, jsCall(t, "GET", g.url+"/v1/jobs"+q, agent, nil), "job.list")
		if j, ok := jsListHas(l, id); ok != want || (ok && j["state"] != "exited") {
			t.Errorf("GET /v1/jobs%s: job %s listed %v, want %v: %v", q, id, ok, want, l)
		}
	}

	// An argument vector run as is, in a directory of the workspace, printing bytes
	// that are not UTF-8; and a job past its maximum run time.
	if err := os.Mkdir(filepath.Join(e.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	argvRun := g.startJob(t, agent, map[string]any{"argv": []string{"sh", "-c", `pwd; printf '\377ok\n'; printf '%s\n' "$1"`, "sh", "a  b"},
		"shell_mode": "direct", "cwd": "sub", "snapshot_after_ms": 10000, "max_bytes": 4})
	argvID := jsStr(argvRun, "job_id")
	if w := jsOK(t, "wait", jsCall(t, "GET", g.url+"/v1/jobs/"+argvID+"/wait?timeout_ms=120000", agent, nil), "job.wait"); w["state"] != "exited" || w["exit_code"] != 0.0 || w["cwd"] != filepath.Join(ws, "sub") || w["shell_mode"] != "direct" {
		t.Errorf("an argv job in sub: %v", w)
	}
	if jsNum(argvRun, "snapshot", "stdout_included_bytes") > 4 || jsNum(argvRun, "snapshot", "stdout_included_bytes") < 0 {
		t.Errorf("a run with max_bytes 4 snapshots more: %v", argvRun["snapshot"])
	}
	tail = jsOK(t, "tail", jsCall(t, "GET", g.url+"/v1/jobs/"+argvID+"/tail", agent, nil), "job.tail")
	if tail["stdout_tail"] != filepath.Join(ws, "sub")+"\n\uFFFDok\na  b\n" || tail["encoding"] != "utf-8-lossy" {
		t.Errorf("the argv job's output: %q", tail["stdout_tail"])
	}
	slow := g.startJob(t, agent, map[string]any{"command": "sleep " + jsSleepMarker(), "timeout_ms": 300})
	w = jsOK(t, "wait", jsCall(t, "GET", g.url+"/v1/jobs/"+jsStr(slow, "job_id")+"/wait?timeout_ms=120000", agent, nil), "job.wait")
	if w["state"] != "killed" || w["killed_by"] != "max_run_time" || w["max_run_time_ms"] != 300.0 || jsStr(w, "reason") == "" {
		t.Errorf("a job past its maximum run time: %v", w)
	}

	// The same through `cmdgate job` as a client: each answer is the HTTP body.
	tag2 := jsTag()
	script2 := jsGatedScript(tag2)
	out, stderr, code := e.run(t, []string{"CMDGATE_URL=" + g.url, "CMDGATE_TOKEN=" + agent}, "job", "run", "--snapshot-after", "0", "-c", script2)
	var cliRun map[string]any
	if err := json.Unmarshal(out, &cliRun); err != nil || code != 0 || cliRun["ok"] != true || cliRun["type"] != "job.run" {
		t.Fatalf("cmdgate job run: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	id2 := jsStr(cliRun, "job_id")
	if !jobs.ValidID(id2) || cliRun["state"] != "running" || jsStr(cliRun, "job", "command") != script2 || jsStr(cliRun, "job", "principal") != "alice" {
		t.Fatalf("cmdgate job run: %v", cliRun)
	}
	// Not the same job, but the same answer's shape as POST /v1/jobs.
	for _, path := range [][]string{nil, {"job"}, {"snapshot"}} {
		if a, b := jsKeys(jsGet(cliRun, path...)), jsKeys(jsGet(run, path...)); !slices.Equal(a, b) {
			t.Errorf("members of %v: cmdgate job run %v, POST /v1/jobs %v", path, a, b)
		}
	}
	g.waitOutput(t, agent, id2, "step1-"+tag2+"\n")
	// The supervisor stores the observed byte count within a second: wait for it, so
	// that two status reads a moment apart agree.
	jsEventually(t, "job.json counts the first line", func() (bool, string) {
		r := jsCall(t, "GET", g.url+"/v1/jobs/"+id2, agent, nil)
		return jsNum(r.obj, "stdout_observed_bytes") == float64(len("step1-"+tag2+"\n")), r.String()
	})
	get := func(path string) jsReply { return jsCall(t, "GET", g.url+path, agent, nil) }
	g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2), "status", id2)
	g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2[:10]), "status", id2[:10])
	g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2+"/tail"), "tail", id2)
	g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2+"/tail?lines=1&max_bytes=5"), "tail", id2, "--lines", "1", "--max-bytes", "5")
	if w := g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2+"/wait?timeout_ms=50"), "wait", id2, "--timeout", "50"); w["finished"] != false {
		t.Errorf("cmdgate job wait --timeout 50 on a running job: %v", w)
	}
	g.jsSameAsCLI(t, agent, get("/v1/jobs"), "list")
	g.jsSameAsCLI(t, agent, get("/v1/jobs?state=running"), "list", "--state", "running")
	if l := g.jsSameAsCLI(t, agent, get("/v1/jobs?limit=1"), "list", "--limit", "1"); l["truncated"] != true || len(l["jobs"].([]any)) != 1 {
		t.Errorf("cmdgate job list --limit 1 with 4 jobs: %v", l)
	}
	e.touch(t, tag2+".1")
	e.touch(t, tag2+".2")
	if w := g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2+"/wait?timeout_ms=120000"), "wait", id2, "--timeout", "120000"); w["state"] != "exited" || w["exit_code"] != 7.0 {
		t.Errorf("cmdgate job wait: %v", w)
	}
	g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2), "status", id2)
	g.jsSameAsCLI(t, agent, get("/v1/jobs/"+id2+"/tail"), "tail", id2)
	g.jsSameAsCLI(t, agent, get("/v1/jobs"), "list")
	// Failures too: the same error object, exit status 1.
	r := jsCall(t, "POST", g.url+"/v1/jobs/"+id2+"/kill", agent, []byte(`{"signal":"TERM"}`))
	jsFail(t, "kill of an exited job", r, 409, "invalid_state")
	g.jsSameAsCLI(t, agent, r, "kill", id2)
	r = get("/v1/jobs/0123456789abcdef")
	jsFail(t, "status of no job", r, 404, "job_not_found")
	g.jsSameAsCLI(t, agent, r, "status", "0123456789abcdef")
	r = get("/v1/jobs/abc")
	jsFail(t, "status of a 3-character prefix", r, 400, "invalid_input")
	g.jsSameAsCLI(t, agent, r, "status", "abc")
	r = get("/v1/jobs/xyz123")
	jsFail(t, "status of a non-hex id", r, 400, "invalid_input")
	g.jsSameAsCLI(t, agent, r, "status", "xyz123")

	g.alive(t)
	g.stop(t)
	e.waitNoHost(t)
	e.auditVerify(t)
}

// TestJobServeRestart: a job outlives the gateway that started it. The gateway is
// stopped with SIGTERM while the job sleeps; the job (and its job host) still runs, as
// `cmdgate job` alone reads it, and a new gateway on the same data directory and job
// root sees it running and kills it, leaving no process of it. A job whose host is
// SIGKILLed (the process its pid names) becomes failed, with a reason, at the next
// status, and its command does not run on unsupervised.
func TestJobServeRestart(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent := e.token(t, "agent", "alice")
	g1 := e.serve(t)

	tag, marker := jsTag(), jsSleepMarker()
	run := g1.startJob(t, agent, map[string]any{"command": jsSleepScript(tag, marker)})
	id, hostPid := jsStr(run, "job_id"), jsNum(run, "job", "pid")
	g1.waitOutput(t, agent, id, "ready-"+tag+"\n")
	if procs := jsProcsWith(marker); len(procs) == 0 {
		t.Fatalf("no process holds the marker %s while job %s runs", marker, id)
	}
	g1.stop(t)

	// Without a gateway, `cmdgate job status` reads the job root itself.
	out, stderr, code := e.run(t, []string{"CMDGATE_TOKEN=" + agent}, "job", "status", id)
	var alone map[string]any
	if json.Unmarshal(out, &alone) != nil || code != 0 || alone["state"] != "running" {
		t.Errorf("cmdgate job status %s with no gateway: exit %d\n%s\n%s", id, code, out, stderr)
	}
	if procs := jsProcsWith(marker); len(procs) == 0 {
		t.Errorf("job %s died with the gateway that started it", id)
	}
	if pids := e.hostPids(); !slices.Contains(pids, int(hostPid)) {
		t.Errorf("the job host (pid %v) left with the gateway although it runs job %s (hosts now: %v)", hostPid, id, pids)
	}

	g2 := e.serve(t)
	st := jsOK(t, "status after the restart", jsCall(t, "GET", g2.url+"/v1/jobs/"+id, agent, nil), "job.status")
	if st["state"] != "running" || st["pid"] != hostPid {
		t.Fatalf("after a restart of the gateway, job %s: %v (want running, pid %v)", id, st, hostPid)
	}
	tail := jsOK(t, "tail after the restart", jsCall(t, "GET", g2.url+"/v1/jobs/"+id+"/tail", agent, nil), "job.tail")
	if tail["stdout_tail"] != "ready-"+tag+"\n" {
		t.Errorf("tail after the restart: %v", tail)
	}
	k := g2.kill(t, agent, id)
	if k["killed_by"] != "alice" {
		t.Errorf("kill through the new gateway: %v", k)
	}
	jsEventually(t, "no process of the killed job is left", func() (bool, string) {
		procs := jsProcsWith(marker)
		return len(procs) == 0, strings.Join(procs, "; ")
	})
	st = jsOK(t, "status after the kill", jsCall(t, "GET", g2.url+"/v1/jobs/"+id, agent, nil), "job.status")
	if st["state"] != "killed" || st["signal"] != "TERM" || st["killed_by"] != "alice" || jsStr(st, "finished_at") == "" {
		t.Errorf("status after the kill: %v", st)
	}

	// The job host SIGKILLed: its job is lost, and says so.
	tag2, marker2 := jsTag(), jsSleepMarker()
	id2 := jsStr(g2.startJob(t, agent, map[string]any{"command": jsSleepScript(tag2, marker2)}), "job_id")
	g2.waitOutput(t, agent, id2, "ready-"+tag2+"\n")
	st = jsOK(t, "status", jsCall(t, "GET", g2.url+"/v1/jobs/"+id2, agent, nil), "job.status")
	pid := int(jsNum(st, "pid"))
	if pid <= 0 || !slices.Contains(e.hostPids(), pid) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Fatalf("job %s: pid %d is not a job host of this test (%q, %v; hosts %v)", id2, pid, cmdline, err, e.hostPids())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	jsEventually(t, "the job of a SIGKILLed host ends", func() (bool, string) {
		r := jsCall(t, "GET", g2.url+"/v1/jobs/"+id2, agent, nil)
		st = jsOK(t, "status", r, "job.status")
		return st["state"] != "running", r.String()
	})
	if reason := jsStr(st, "reason"); st["state"] != "failed" || !strings.Contains(reason, "host") ||
		!strings.Contains(reason, strconv.Itoa(pid)) || jsStr(st, "finished_at") == "" {
		t.Errorf("the job of a SIGKILLed host: %v", st)
	}
	jsFail(t, "kill of a failed job", jsCall(t, "POST", g2.url+"/v1/jobs/"+id2+"/kill", agent, nil), 409, "invalid_state")
	// In the linux sandbox, the job's processes die with their host (the sandbox's init
	// has it as its parent-death signal): nothing runs on unsupervised.
	if backend := jsStr(jsCall(t, "GET", g2.url+"/healthz", "", nil).obj, "sandbox", "backend"); backend == "linux" {
		jsEventually(t, "no process of the lost job is left", func() (bool, string) {
			procs := jsProcsWith(marker2)
			return len(procs) == 0, strings.Join(procs, "; ")
		})
	} else {
		t.Logf("sandbox %q: not checking what is left of the job of a SIGKILLed host: %v", backend, jsProcsWith(marker2))
	}
	// A new job gets a new host.
	tag3 := jsTag()
	id3 := jsStr(g2.startJob(t, agent, map[string]any{"command": "echo after-" + tag3, "snapshot_after_ms": 10000}), "job_id")
	if w := jsOK(t, "wait", jsCall(t, "GET", g2.url+"/v1/jobs/"+id3+"/wait?timeout_ms=120000", agent, nil), "job.wait"); w["state"] != "exited" || w["exit_code"] != 0.0 || w["pid"] == float64(pid) {
		t.Errorf("a job after its host was SIGKILLed: %v", w)
	}
	// The job host SIGTERMed: it stops its jobs and records how they ended.
	tag4, marker4 := jsTag(), jsSleepMarker()
	run4 := g2.startJob(t, agent, map[string]any{"command": jsSleepScript(tag4, marker4)})
	id4, pid4 := jsStr(run4, "job_id"), int(jsNum(run4, "job", "pid"))
	g2.waitOutput(t, agent, id4, "ready-"+tag4+"\n")
	if !slices.Contains(e.hostPids(), pid4) {
		t.Fatalf("job %s: pid %d is not a job host of this test (hosts %v)", id4, pid4, e.hostPids())
	}
	if err := syscall.Kill(pid4, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w := jsOK(t, "wait", jsCall(t, "GET", g2.url+"/v1/jobs/"+id4+"/wait?timeout_ms=120000", agent, nil), "job.wait")
	if w["state"] != "killed" || w["killed_by"] != "job_host" || jsStr(w, "reason") == "" {
		t.Errorf("the job of a SIGTERMed host: %v", w)
	}
	jsEventually(t, "no process of the job of the stopped host is left", func() (bool, string) {
		procs := jsProcsWith(marker4)
		return len(procs) == 0, strings.Join(procs, "; ")
	})

	g2.alive(t)
	g2.stop(t)
	e.waitNoHost(t)
	e.auditVerify(t)
}

// TestJobServeHostLeavesAfterItsJobs: a gateway that closes while its job runs leaves
// the job host to it; once the job ends by itself, with no gateway left, the host goes
// at once, not after HostIdle (five minutes, longer than the test waits), and the job's
// end is in the job root and the audit log.
func TestJobServeHostLeavesAfterItsJobs(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent := e.token(t, "agent", "alice")
	g := e.serve(t)

	tag := jsTag()
	run := g.startJob(t, agent, map[string]any{"command": jsGatedScript(tag)})
	id := jsStr(run, "job_id")
	g.waitOutput(t, agent, id, "step1-"+tag+"\n")
	g.stop(t)
	if pids := e.hostPids(); len(pids) != 1 || pids[0] != int(jsNum(run, "job", "pid")) {
		t.Fatalf("job hosts after the gateway closed with job %s running: %v (want its host, pid %v)", id, pids, jsNum(run, "job", "pid"))
	}
	e.touch(t, tag+".1")
	e.touch(t, tag+".2")
	e.waitNoHost(t)

	out, stderr, code := e.run(t, []string{"CMDGATE_TOKEN=" + agent}, "job", "status", id)
	var st map[string]any
	if json.Unmarshal(out, &st) != nil || code != 0 || st["state"] != "exited" || st["exit_code"] != 7.0 {
		t.Errorf("cmdgate job status %s after its host left: exit %d\n%s\n%s", id, code, out, stderr)
	}
	e.auditVerify(t)
	var ended bool
	for _, rec := range e.auditRecords(t) {
		ended = ended || rec["kind"] == "execution" && jsStr(rec, "detail", "job_id") == id && jsNum(rec, "execution", "exit_code") == 7
	}
	if !ended {
		t.Errorf("the audit log holds no execution record of job %s with exit code 7", id)
	}
}

// TestJobServeRestartOtherConfig: a job outlives its gateway, and the gateway that
// follows on the same data directory, workspace and job root is started with a
// configuration file where the first had none. It sees the job running, and must be
// able to kill it, whether or not a job host of its own configuration runs.
func TestJobServeRestartOtherConfig(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent := e.token(t, "agent", "alice")
	g1 := e.serve(t)
	tag, marker := jsTag(), jsSleepMarker()
	id := jsStr(g1.startJob(t, agent, map[string]any{"command": jsSleepScript(tag, marker)}), "job_id")
	g1.waitOutput(t, agent, id, "ready-"+tag+"\n")
	g1.stop(t)

	e.config = filepath.Join(e.dir, "cmdgate.yaml")
	if err := os.WriteFile(e.config, []byte("log: {format: json}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g2 := e.serve(t)
	if st := jsOK(t, "status", jsCall(t, "GET", g2.url+"/v1/jobs/"+id, agent, nil), "job.status"); st["state"] != "running" {
		t.Fatalf("after the restart: %v", st)
	}
	// No job host of the new configuration runs yet.
	r := jsCall(t, "POST", g2.url+"/v1/jobs/"+id+"/kill", agent, []byte(`{"signal":"TERM"}`))
	if r.status != 200 || jsStr(r.obj, "state") != "killed" {
		t.Errorf("kill through a gateway of another configuration (no host of its own): want 200 killed, got %s", r)
	}
	// A job host of the new configuration runs.
	other := jsStr(g2.startJob(t, agent, map[string]any{"command": jsSleepScript(jsTag(), jsSleepMarker())}), "job_id")
	if st := jsOK(t, "status", jsCall(t, "GET", g2.url+"/v1/jobs/"+id, agent, nil), "job.status"); st["state"] == "running" {
		r = jsCall(t, "POST", g2.url+"/v1/jobs/"+id+"/kill", agent, []byte(`{"signal":"TERM"}`))
		if r.status != 200 || jsStr(r.obj, "state") != "killed" {
			t.Errorf("kill through a gateway of another configuration (its own host runs): want 200 killed, got %s", r)
		}
	}
	g2.kill(t, agent, other)
	if st := jsOK(t, "status", jsCall(t, "GET", g2.url+"/v1/jobs/"+id, agent, nil), "job.status"); st["state"] != "running" {
		jsEventually(t, "no process of the killed job is left", func() (bool, string) {
			procs := jsProcsWith(marker)
			return len(procs) == 0, strings.Join(procs, "; ")
		})
	}
	g2.alive(t)
	g2.stop(t)
	e.auditVerify(t)
}

// TestJobServeIsolation: a job is its agent's. Another agent gets job_not_found for it
// on every call and does not see it listed; an auditor sees it (list, status, tail) but
// may not kill it; an approver may not use the jobs API; no token is 401; an admin may
// kill it.
func TestJobServeIsolation(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	alice, bob := e.token(t, "agent", "alice"), e.token(t, "agent", "bob")
	auditor, approver, admin := e.token(t, "auditor", "audrey"), e.token(t, "approver", "ana"), e.token(t, "admin", "root-admin")
	g := e.serve(t)

	tag, marker := jsTag(), jsSleepMarker()
	id := jsStr(g.startJob(t, alice, map[string]any{"command": jsSleepScript(tag, marker)}), "job_id")
	g.waitOutput(t, alice, id, "ready-"+tag+"\n")
	// Bob runs one of his own, so that his list is not empty for want of jobs.
	bobJob := jsStr(g.startJob(t, bob, map[string]any{"command": "echo bob", "snapshot_after_ms": 10000}), "job_id")

	for _, ref := range []string{id, id[:8]} {
		jsFail(t, "bob: status of alice's job", jsCall(t, "GET", g.url+"/v1/jobs/"+ref, bob, nil), 404, "job_not_found")
		jsFail(t, "bob: tail of alice's job", jsCall(t, "GET", g.url+"/v1/jobs/"+ref+"/tail", bob, nil), 404, "job_not_found")
		jsFail(t, "bob: wait for alice's job", jsCall(t, "GET", g.url+"/v1/jobs/"+ref+"/wait?timeout_ms=10", bob, nil), 404, "job_not_found")
		jsFail(t, "bob: kill of alice's job", jsCall(t, "POST", g.url+"/v1/jobs/"+ref+"/kill", bob, []byte(`{"signal":"KILL"}`)), 404, "job_not_found")
	}
	for _, q := range []string{"", "?state=running"} {
		l := jsOK(t, "bob: list", jsCall(t, "GET", g.url+"/v1/jobs"+q, bob, nil), "job.list")
		if _, ok := jsListHas(l, id); ok {
			t.Errorf("bob's GET /v1/jobs%s lists alice's job: %v", q, l)
		}
	}
	if l := jsOK(t, "bob: list", jsCall(t, "GET", g.url+"/v1/jobs", bob, nil), "job.list"); !func() bool { _, ok := jsListHas(l, bobJob); return ok }() {
		t.Errorf("bob's GET /v1/jobs does not list his own job %s: %v", bobJob, l)
	}
	if gc := jsOK(t, "bob: gc", jsCall(t, "POST", g.url+"/v1/jobs/gc", bob, []byte(`{"older_than_days":0}`)), "job.gc"); jsGet(gc, "removed") == nil || len(jsGet(gc, "removed").([]any)) != 0 {
		t.Errorf("bob's gc removed jobs: %v", gc)
	}

	// The auditor reads everything, changes nothing.
	l := jsOK(t, "auditor: list", jsCall(t, "GET", g.url+"/v1/jobs", auditor, nil), "job.list")
	for _, want := range []string{id, bobJob} {
		if _, ok := jsListHas(l, want); !ok {
			t.Errorf("the auditor's GET /v1/jobs does not list job %s: %v", want, l)
		}
	}
	if st := jsOK(t, "auditor: status", jsCall(t, "GET", g.url+"/v1/jobs/"+id, auditor, nil), "job.status"); st["state"] != "running" || st["principal"] != "alice" {
		t.Errorf("the auditor's status of alice's job: %v", st)
	}
	if tl := jsOK(t, "auditor: tail", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/tail", auditor, nil), "job.tail"); tl["stdout_tail"] != "ready-"+tag+"\n" {
		t.Errorf("the auditor's tail of alice's job: %v", tl)
	}
	jsOK(t, "auditor: wait", jsCall(t, "GET", g.url+"/v1/jobs/"+id+"/wait?timeout_ms=10", auditor, nil), "job.wait")
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs/" + id + "/kill", `{"signal":"KILL"}`},
		{"POST", "/v1/jobs", `{"command":"echo hi"}`},
		{"POST", "/v1/jobs/gc", `{}`},
	} {
		if r := jsCall(t, c.method, g.url+c.path, auditor, []byte(c.body)); r.status != 403 || (jsErrCode(r) != "FORBIDDEN" && jsErrCode(r) != "denied") {
			t.Errorf("auditor: %s %s = %s, want 403", c.method, c.path, r)
		}
	}
	// The approver has no business with jobs.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/jobs", ""}, {"GET", "/v1/jobs/" + id, ""}, {"GET", "/v1/jobs/" + id + "/tail", ""},
		{"POST", "/v1/jobs", `{"command":"echo hi"}`}, {"POST", "/v1/jobs/" + id + "/kill", `{}`},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		if r := jsCall(t, c.method, g.url+c.path, approver, body); r.status != 403 || (jsErrCode(r) != "FORBIDDEN" && jsErrCode(r) != "denied") {
			t.Errorf("approver: %s %s = %s, want 403", c.method, c.path, r)
		}
	}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/" + id} {
		if r := jsCall(t, "GET", g.url+path, "", nil); r.status != 401 || jsErrCode(r) == "" {
			t.Errorf("no token: GET %s = %s, want 401", path, r)
		}
	}
	// `cmdgate job` as a client says the same in job terms: denied, exit 1.
	for _, c := range []struct{ token, sub string }{{auditor, "kill"}, {approver, "status"}, {"cmdgate_not-a-token", "status"}} {
		out, stderr, code := e.run(t, []string{"CMDGATE_URL=" + g.url, "CMDGATE_TOKEN=" + c.token}, "job", c.sub, id)
		var cli map[string]any
		if json.Unmarshal(out, &cli) != nil || code != 1 || cli["ok"] != false || cli["type"] != "job."+c.sub || jsStr(cli, "error", "code") != "denied" {
			t.Errorf("cmdgate job %s with a refused token: exit %d\n%s\n%s", c.sub, code, out, stderr)
		}
	}
	// Nothing of the above touched it.
	if st := jsOK(t, "status", jsCall(t, "GET", g.url+"/v1/jobs/"+id, alice, nil), "job.status"); st["state"] != "running" {
		t.Fatalf("alice's job after the others' attempts: %v", st)
	}
	// An admin controls every job.
	k := g.kill(t, admin, id)
	if k["killed_by"] != "root-admin" {
		t.Errorf("the admin's kill: %v", k)
	}
	jsEventually(t, "no process of the killed job is left", func() (bool, string) {
		procs := jsProcsWith(marker)
		return len(procs) == 0, strings.Join(procs, "; ")
	})

	g.alive(t)
	g.stop(t)
	e.waitNoHost(t)
	e.auditVerify(t)
}

// TestJobServeBadInput sends malformed and hostile requests to the jobs API: each gets
// a clear 4xx JSON answer, the gateway keeps serving, and no job starts.
func TestJobServeBadInput(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent := e.token(t, "agent", "alice")
	g := e.serve(t)
	outside := filepath.Join(e.dir, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(e.ws, "etc-link")); err != nil {
		t.Fatal(err)
	}
	e.touch(t, "a-file")
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)

	runs := []struct {
		name string
		body string
		// status and code: 0 and "" for 400 invalid_input.
		status int
		code   string
		// mention, when set, must be in the message.
		mention string
	}{
		{name: "malformed JSON", body: `{"command": "echo hi"`},
		{name: "not an object", body: `["echo", "hi"]`},
		{name: "null", body: `null`},
		{name: "a string", body: `"echo hi"`},
		{name: "two objects", body: `{"command":"echo a"}{"command":"echo b"}`},
		{name: "trailing garbage", body: `{"command":"echo a"} x`},
		{name: "argv as a string", body: `{"argv": "echo hi"}`, mention: "argv"},
		{name: "argv of numbers", body: `{"argv": ["echo", 1]}`, mention: "argv"},
		{name: "command as an array", body: `{"command": ["echo", "hi"]}`, mention: "command"},
		{name: "timeout_ms as a string", body: `{"command": "echo hi", "timeout_ms": "5000"}`, mention: "an integer"},
		{name: "timeout_ms as a float", body: `{"command": "echo hi", "timeout_ms": 1.5}`, mention: "an integer"},
		{name: "timeout_ms in exponent form", body: `{"command": "echo hi", "timeout_ms": 1e3}`, mention: "an integer"},
		{name: "timeout_ms zero", body: `{"command": "echo hi", "timeout_ms": 0}`, mention: "timeout_ms"},
		{name: "timeout_ms negative", body: `{"command": "echo hi", "timeout_ms": -1}`, mention: "timeout_ms"},
		{name: "timeout_ms out of range", body: `{"command": "echo hi", "timeout_ms": 99999999999999999999}`, mention: "timeout_ms"},
		{name: "snapshot_after_ms as a string", body: `{"command": "echo hi", "snapshot_after_ms": "5"}`, mention: "an integer"},
		{name: "snapshot_after_ms negative", body: `{"command": "echo hi", "snapshot_after_ms": -5}`, mention: "snapshot_after_ms"},
		{name: "max_bytes as a float", body: `{"command": "echo hi", "max_bytes": 10.5}`, mention: "an integer"},
		{name: "max_bytes zero", body: `{"command": "echo hi", "max_bytes": 0}`, mention: "max_bytes"},
		{name: "max_bytes too large", body: `{"command": "echo hi", "max_bytes": 1000000000}`, mention: "max_bytes"},
		{name: "wait_ms negative", body: `{"command": "echo hi", "wait_ms": -1}`, mention: "wait_ms"},
		{name: "unknown member", body: `{"command": "echo hi", "bogus": 1}`, mention: "bogus"},
		{name: "an exec member", body: `{"command": "echo hi", "stdin": "x"}`, mention: "stdin"},
		{name: "duplicate member", body: `{"command": "echo a", "command": "echo b"}`, mention: "twice"},
		{name: "command and argv", body: `{"command": "echo hi", "argv": ["echo", "hi"]}`, mention: "not both"},
		{name: "neither command nor argv", body: `{"cwd": "."}`},
		{name: "empty object", body: `{}`},
		{name: "empty body", body: ``},
		{name: "blank body", body: " \n\t "},
		{name: "blank command", body: `{"command": "  "}`},
		{name: "empty argv", body: `{"argv": []}`},
		{name: "empty argv[0]", body: `{"argv": [""]}`},
		{name: "unknown shell_mode", body: `{"command": "echo hi", "shell_mode": "fancy"}`, mention: "shell_mode"},
		{name: "direct shell_mode with a script", body: `{"command": "echo hi", "shell_mode": "direct"}`, mention: "direct"},
		{name: "task with a newline", body: `{"command": "echo hi", "task": "a\nb"}`},
		{name: "NUL in command", body: `{"command": "echo a\u0000b"}`, mention: "NUL"},
		{name: "NUL in argv", body: `{"argv": ["echo", "a\u0000b"]}`, mention: "NUL"},
		{name: "NUL in cwd", body: `{"command": "echo hi", "cwd": "a\u0000b"}`, mention: "NUL"},
		{name: "raw NUL byte", body: "{\"command\": \"echo a\x00b\"}"},
		{name: "invalid UTF-8", body: "{\"command\": \"echo \xff\xfe\"}", mention: "UTF-8"},
		{name: "invalid UTF-8 in a member name", body: "{\"comm\xc3and\": \"echo\"}", mention: "UTF-8"},
		{name: "unpaired surrogate", body: `{"command": "echo \ud800"}`},
		{name: "deep nesting in a member", body: `{"command": "echo hi", "task": ` + deep + `}`},
		{name: "deep nesting at the top", body: deep},
		{name: "deep nesting of objects", body: strings.Repeat(`{"a":`, 50000) + "1" + strings.Repeat("}", 50000)},
		{name: "script over the script limit", body: string(jsBody(map[string]any{"command": "echo " + strings.Repeat("x", 100<<10)}))},
		{name: "cwd traversal", body: `{"command": "ls", "cwd": "../../etc"}`, mention: "outside"},
		{name: "cwd traversal inside", body: `{"command": "ls", "cwd": "a/../../../etc"}`, mention: "outside"},
		{name: "cwd absolute outside", body: `{"command": "ls", "cwd": "/etc"}`, mention: "outside"},
		{name: "cwd symlink outside", body: `{"command": "ls", "cwd": "escape"}`, mention: "symbolic link"},
		{name: "cwd symlink to /etc", body: `{"command": "ls", "cwd": "etc-link"}`, mention: "symbolic link"},
		{name: "cwd through a symlink", body: `{"command": "ls", "cwd": "escape/."}`},
		{name: "cwd missing", body: `{"command": "ls", "cwd": "no-such-dir"}`},
		{name: "cwd a file", body: `{"command": "ls", "cwd": "a-file"}`},
		{name: "cwd empty", body: `{"command": "ls", "cwd": ""}`},
		{name: "huge body", body: string(jsBody(map[string]any{"command": "echo " + strings.Repeat("x", 2<<20)})), status: 413, code: "TOO_LARGE"},
	}
	for _, c := range runs {
		r := jsCall(t, "POST", g.url+"/v1/jobs", agent, []byte(c.body))
		status, code := c.status, c.code
		if status == 0 {
			status, code = 400, "invalid_input"
		}
		msg := jsStr(r.obj, "error", "message")
		switch {
		case r.status != status || jsErrCode(r) != code || msg == "":
			t.Errorf("%s: want HTTP %d %s, got %s", c.name, status, code, r)
		case status == 400 && (r.obj["ok"] != false || r.obj["type"] != "job.run" || r.obj["schema_version"] != 1.0):
			t.Errorf("%s: not the job call's error object: %s", c.name, r)
		case c.mention != "" && !strings.Contains(msg, c.mention):
			t.Errorf("%s: the message does not say what is wrong (want %q in it): %s", c.name, c.mention, msg)
		case strings.Contains(msg, "must be , got"):
			t.Errorf("%s: the message does not name the expected type: %s", c.name, msg)
		}
	}
	g.alive(t)

	// Bad ids in the path: invalid_input or not found, never a crash.
	valid := "0123456789abcdef0123456789abcdef"
	for _, bad := range []string{"..%2f..", "..%2F..%2Fetc%2Fpasswd", "..", "abcde", strings.Repeat("a", 33), "ghijklmn",
		"%00abcdef", "abcdef%20", "abcdef%0a", "-1", "ABCDEF", "%ff%fe%fd%fc%fb%fa", strings.Repeat("f", 5000), valid} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/jobs/" + bad}, {"GET", "/v1/jobs/" + bad + "/tail"},
			{"GET", "/v1/jobs/" + bad + "/wait?timeout_ms=10"}, {"POST", "/v1/jobs/" + bad + "/kill"},
		} {
			r := jsCall(t, c.method, g.url+c.path, agent, nil)
			switch {
			case r.status != 400 && r.status != 404:
				t.Errorf("%s %s: want 400 or 404, got %s", c.method, c.path, r)
			case r.obj == nil || jsErrCode(r) == "":
				t.Errorf("%s %s: not a JSON error: %s", c.method, c.path, r)
			case r.status == 400 && jsErrCode(r) != "invalid_input" && jsErrCode(r) != "INVALID_ARGUMENT":
				t.Errorf("%s %s: %s", c.method, c.path, r)
			}
		}
	}
	g.alive(t)

	// Unknown, repeated and malformed query parameters and bodies of the other calls.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/jobs?bogus=1", ""},
		{"GET", "/v1/jobs?limit=abc", ""},
		{"GET", "/v1/jobs?limit=-1", ""},
		{"GET", "/v1/jobs?limit=1.5", ""},
		{"GET", "/v1/jobs?limit=1&limit=2", ""},
		{"GET", "/v1/jobs?state=zombie", ""},
		{"GET", "/v1/jobs?state=running&state=exited", ""},
		{"GET", "/v1/jobs/" + valid + "?bogus=1", ""},
		{"GET", "/v1/jobs/" + valid + "?limit=1", ""},
		{"GET", "/v1/jobs/" + valid + "/tail?bogus=1", ""},
		{"GET", "/v1/jobs/" + valid + "/tail?max_bytes=0", ""},
		{"GET", "/v1/jobs/" + valid + "/tail?max_bytes=-1", ""},
		{"GET", "/v1/jobs/" + valid + "/tail?max_bytes=99999999999", ""},
		{"GET", "/v1/jobs/" + valid + "/tail?lines=x", ""},
		{"GET", "/v1/jobs/" + valid + "/tail?lines=-1", ""},
		{"GET", "/v1/jobs/" + valid + "/wait?timeout_ms=0", ""},
		{"GET", "/v1/jobs/" + valid + "/wait?timeout_ms=abc", ""},
		{"GET", "/v1/jobs/" + valid + "/wait?timeout_ms=999999999", ""},
		{"GET", "/v1/jobs/" + valid + "/wait?timeout=10", ""},
		{"POST", "/v1/jobs/" + valid + "/kill", `{"signal": 9}`},
		{"POST", "/v1/jobs/" + valid + "/kill", `{"bogus": "TERM"}`},
		{"POST", "/v1/jobs/" + valid + "/kill", `{"older_than_days": 1}`},
		{"POST", "/v1/jobs/" + valid + "/kill", `{"signal": "TERM"}{"signal": "KILL"}`},
		{"POST", "/v1/jobs/" + valid + "/kill", "{\"signal\": \"\xff\"}"},
		{"POST", "/v1/jobs/" + valid + "/kill", `["TERM"]`},
		{"POST", "/v1/jobs/" + valid + "/kill", `{"signal": "TERM"`},
		{"POST", "/v1/jobs/gc", `{"older_than_days": -1}`},
		{"POST", "/v1/jobs/gc", `{"older_than_days": "1"}`},
		{"POST", "/v1/jobs/gc", `{"older_than_days": 1.5}`},
		{"POST", "/v1/jobs/gc", `{"older_than_days": 99999999999}`},
		{"POST", "/v1/jobs/gc", `{"signal": "TERM"}`},
		{"POST", "/v1/jobs/gc", `{"older_than_days": 1, "x": 2}`},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		r := jsCall(t, c.method, g.url+c.path, agent, body)
		if r.status != 400 || r.obj == nil || r.obj["ok"] != false || jsErrCode(r) != "invalid_input" || jsStr(r.obj, "error", "message") == "" {
			t.Errorf("%s %s %q: want HTTP 400 invalid_input, got %s", c.method, c.path, c.body, r)
		}
	}
	// Wrong methods and paths are the front's errors, in JSON.
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"DELETE", "/v1/jobs/" + valid, 405}, {"PUT", "/v1/jobs", 405}, {"GET", "/v1/jobs/" + valid + "/kill", 405},
		{"GET", "/v1/jobs/" + valid + "/nope", 404},
	} {
		if r := jsCall(t, c.method, g.url+c.path, agent, nil); r.status != c.status || jsErrCode(r) == "" {
			t.Errorf("%s %s: want %d with a JSON error, got %s", c.method, c.path, c.status, r)
		}
	}

	g.alive(t)
	// Nothing was meant to start, and nothing did.
	l := jsOK(t, "list", jsCall(t, "GET", g.url+"/v1/jobs", agent, nil), "job.list")
	if js, _ := l["jobs"].([]any); len(js) != 0 {
		t.Errorf("jobs started by bad requests: %v", l)
	}
	if dirs := e.jobDirs(t); len(dirs) != 0 {
		t.Errorf("job directories made by bad requests: %v", dirs)
	}
	g.stop(t)
	e.auditVerify(t)
}

// TestJobServePolicy: a job is decided like exec. Denied: 403 denied with the decision's
// id and reasons, and no job directory. Asked: 202 approval_pending with the approval's
// id; an approver's approval starts the job (the approval then names it, the job is the
// requester's and runs); a run that waits (wait_ms) while an approver approves answers
// the job, and one whose approval is denied answers denied.
func TestJobServePolicy(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent, approver := e.token(t, "agent", "alice"), e.token(t, "approver", "ana")
	g := e.serve(t)

	// Denied.
	r := jsCall(t, "POST", g.url+"/v1/jobs", agent, []byte(`{"command": "sudo ls"}`))
	jsFail(t, "a denied command", r, 403, "denied")
	denyID := jsStr(r.obj, "error", "decision_id")
	reasons, _ := jsGet(r.obj, "error", "reasons").([]any)
	if denyID == "" || len(reasons) == 0 || jsStr(reasons[0], "rule") == "" || jsStr(r.obj, "error", "decision") != "deny" {
		t.Errorf("a denied command's answer lacks the decision id or reasons: %s", r)
	}
	if dirs := e.jobDirs(t); len(dirs) != 0 {
		t.Errorf("a denied command made job directories: %v", dirs)
	}
	// `cmdgate job run` says the same, exit 1.
	out, _, code := e.run(t, []string{"CMDGATE_URL=" + g.url, "CMDGATE_TOKEN=" + agent}, "job", "run", "-c", "sudo ls")
	var cli map[string]any
	if json.Unmarshal(out, &cli) != nil || code != 1 || jsStr(cli, "error", "code") != "denied" || jsStr(cli, "error", "decision_id") == "" {
		t.Errorf("cmdgate job run -c 'sudo ls': exit %d\n%s", code, out)
	}

	// Asked, then approved: the approval starts the job.
	e.touch(t, "one.jstmp")
	askCmd := `find . -name "*.jstmp" -delete`
	r = jsCall(t, "POST", g.url+"/v1/jobs", agent, jsBody(map[string]any{"command": askCmd}))
	jsFail(t, "a command the policy asks about", r, 202, "approval_pending")
	approvalID := jsStr(r.obj, "error", "approval_id")
	if approvalID == "" || jsStr(r.obj, "error", "decision_id") == "" {
		t.Fatalf("approval_pending without the approval's id: %s", r)
	}
	if dirs := e.jobDirs(t); len(dirs) != 0 {
		t.Errorf("a pending approval made job directories: %v", dirs)
	}
	a := jsCall(t, "GET", g.url+"/v1/approvals/"+approvalID, agent, nil)
	if a.status != 200 || jsStr(a.obj, "state") != "pending" || jsStr(a.obj, "endpoint") != "job" || jsGet(a.obj, "request", "job") != true {
		t.Errorf("the pending approval: %s", a)
	}
	a = jsCall(t, "POST", g.url+"/v1/approvals/"+approvalID+"/approve", approver, []byte(`{"scope":"once"}`))
	if a.status != 200 || (jsStr(a.obj, "state") != "running" && jsStr(a.obj, "state") != "completed") {
		t.Fatalf("approve: %s", a)
	}
	a = jsCall(t, "GET", g.url+"/v1/approvals/"+approvalID+"?wait_ms=60000", approver, nil)
	jobID := jsStr(a.obj, "job_id")
	if a.status != 200 || jsStr(a.obj, "state") != "completed" || !jobs.ValidID(jobID) {
		t.Fatalf("the approval once approved: %s", a)
	}
	st := jsOK(t, "status of the approved job", jsCall(t, "GET", g.url+"/v1/jobs/"+jobID, agent, nil), "job.status")
	if st["principal"] != "alice" || st["command"] != askCmd || st["decision_id"] != jsStr(a.obj, "run_decision_id") {
		t.Errorf("the approved job (approval %s): %v", a, st)
	}
	w := jsOK(t, "wait for the approved job", jsCall(t, "GET", g.url+"/v1/jobs/"+jobID+"/wait?timeout_ms=120000", agent, nil), "job.wait")
	if w["state"] != "exited" || w["exit_code"] != 0.0 {
		t.Errorf("the approved job: %v", w)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "one.jstmp")); !os.IsNotExist(err) {
		t.Errorf("the approved find -delete did not delete one.jstmp: %v", err)
	}
	if dirs := e.jobDirs(t); !slices.Equal(dirs, []string{jobID}) {
		t.Errorf("job directories %v, want only %s", dirs, jobID)
	}

	// Asked with wait_ms: the run waits for the approver and answers the job.
	pendingFor := func(cmd string) string {
		var id string
		jsEventually(t, "a pending approval for "+cmd, func() (bool, string) {
			r := jsCall(t, "GET", g.url+"/v1/approvals?state=pending", approver, nil)
			list, _ := r.obj["approvals"].([]any)
			for _, x := range list {
				if jsStr(x, "request", "command") == cmd {
					id = jsStr(x, "id")
					return true, ""
				}
			}
			return false, r.String()
		})
		return id
	}
	e.touch(t, "two.jswait")
	waitCmd := `find . -name "*.jswait" -delete`
	answer := jsAsync("POST", g.url+"/v1/jobs", agent, jsBody(map[string]any{"command": waitCmd, "wait_ms": 120000, "snapshot_after_ms": 10000}))
	waitApproval := pendingFor(waitCmd)
	if a := jsCall(t, "POST", g.url+"/v1/approvals/"+waitApproval+"/approve", approver, []byte(`{"scope":"once"}`)); a.status != 200 {
		t.Fatalf("approve: %s", a)
	}
	run := jsOK(t, "a run that waited for its approval", jsAnswer(t, answer), "job.run")
	a = jsCall(t, "GET", g.url+"/v1/approvals/"+waitApproval, approver, nil)
	if jsStr(run, "job_id") != jsStr(a.obj, "job_id") || run["decision"] != "allow" || !jobs.ValidID(jsStr(run, "job_id")) ||
		run["decision_id"] != jsStr(a.obj, "run_decision_id") || jsStr(run, "job", "principal") != "alice" {
		t.Errorf("the run that waited: %v\nits approval: %s", run, a)
	}
	w = jsOK(t, "wait", jsCall(t, "GET", g.url+"/v1/jobs/"+jsStr(run, "job_id")+"/wait?timeout_ms=120000", agent, nil), "job.wait")
	if w["state"] != "exited" || w["exit_code"] != 0.0 {
		t.Errorf("the job approved while its run waited: %v", w)
	}

	// Asked with wait_ms, then denied: the run answers denied, and nothing starts.
	denyCmd := `find . -name "*.jsdeny" -delete`
	before := e.jobDirs(t)
	answer = jsAsync("POST", g.url+"/v1/jobs", agent, jsBody(map[string]any{"command": denyCmd, "wait_ms": 120000}))
	denied := pendingFor(denyCmd)
	if a := jsCall(t, "POST", g.url+"/v1/approvals/"+denied+"/deny", approver, []byte(`{"comment":"not today"}`)); a.status != 200 {
		t.Fatalf("deny: %s", a)
	}
	r = jsAnswer(t, answer)
	jsFail(t, "a run whose approval was denied", r, 403, "denied")
	if jsStr(r.obj, "error", "approval_id") != denied || !strings.Contains(jsStr(r.obj, "error", "message"), "not today") {
		t.Errorf("a run whose approval was denied: %s", r)
	}
	if after := e.jobDirs(t); !slices.Equal(before, after) {
		t.Errorf("a denied approval made job directories: %v, then %v", before, after)
	}

	g.alive(t)
	g.stop(t)
	e.waitNoHost(t)
	e.auditVerify(t)
	// The refusal is in the log under the id the answer gave.
	found := false
	for _, rec := range e.auditRecords(t) {
		if rec["id"] == denyID {
			found = rec["kind"] == "decision" && rec["decision"] == "deny" && jsStr(rec, "detail", "endpoint") == "job"
		}
	}
	if !found {
		t.Errorf("no deny decision record %s with endpoint job in the audit log", denyID)
	}
}

// TestJobServeLimit: with jobs.max_per_principal 2 in the configuration file, a third
// job of the same agent is denied with a message about the limit while another agent
// may still start one, and a kill makes room. An approval approved while its agent is
// at the limit fails, and the run that waited for it answers denied.
func TestJobServeLimit(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "jobs: {max_per_principal: 2}\n")
	alice, bob, approver := e.token(t, "agent", "alice"), e.token(t, "agent", "bob"), e.token(t, "approver", "ana")
	g := e.serve(t)

	start := func(token string) string {
		return jsStr(g.startJob(t, token, map[string]any{"command": jsSleepScript(jsTag(), jsSleepMarker())}), "job_id")
	}
	a1, a2 := start(alice), start(alice)
	before := e.jobDirs(t)
	r := jsCall(t, "POST", g.url+"/v1/jobs", alice, jsBody(map[string]any{"command": jsSleepScript(jsTag(), jsSleepMarker()), "snapshot_after_ms": 0}))
	jsFail(t, "a third job of alice", r, 403, "denied")
	if msg := jsStr(r.obj, "error", "message"); !strings.Contains(msg, "max_per_principal") || !strings.Contains(msg, "2") {
		t.Errorf("the refusal does not explain the limit: %s", r)
	}
	if after := e.jobDirs(t); !slices.Equal(before, after) {
		t.Errorf("the refused job made a directory: %v, then %v", before, after)
	}
	b1 := start(bob)
	g.kill(t, alice, a1)
	a3 := start(alice)

	// An approval approved while alice is at her limit again.
	g.kill(t, alice, a3)
	askCmd := `find . -name "*.jslimit" -delete`
	answer := jsAsync("POST", g.url+"/v1/jobs", alice, jsBody(map[string]any{"command": askCmd, "wait_ms": 120000}))
	var approvalID string
	jsEventually(t, "the pending approval", func() (bool, string) {
		r := jsCall(t, "GET", g.url+"/v1/approvals?state=pending", approver, nil)
		list, _ := r.obj["approvals"].([]any)
		for _, x := range list {
			if jsStr(x, "request", "command") == askCmd {
				approvalID = jsStr(x, "id")
				return true, ""
			}
		}
		return false, r.String()
	})
	a4 := start(alice) // alice is at 2 again
	before = e.jobDirs(t)
	if a := jsCall(t, "POST", g.url+"/v1/approvals/"+approvalID+"/approve", approver, []byte(`{"scope":"once"}`)); a.status != 200 {
		t.Fatalf("approve: %s", a)
	}
	r = jsAnswer(t, answer)
	a := jsCall(t, "GET", g.url+"/v1/approvals/"+approvalID+"?wait_ms=60000", approver, nil)
	if jsStr(a.obj, "state") != "failed" || !strings.Contains(jsStr(a.obj, "error", "message"), "max_per_principal") {
		t.Errorf("an approval approved at the limit: %s", a)
	}
	jsFail(t, "the run whose approved job hit the limit", r, 403, "denied")
	if !strings.Contains(jsStr(r.obj, "error", "message"), "max_per_principal") {
		t.Errorf("the run whose approved job hit the limit does not say why: %s", r)
	}
	if after := e.jobDirs(t); !slices.Equal(before, after) {
		t.Errorf("the approval refused at the limit made a directory: %v, then %v", before, after)
	}

	// Signals by name: INT, any unknown name is KILL, no body is TERM.
	for _, k := range []struct{ token, id, body, want string }{{alice, a2, `{"signal":"sigint"}`, "INT"}, {alice, a4, `{"signal":"HUP"}`, "KILL"}, {bob, b1, ``, "TERM"}} {
		var body []byte
		if k.body != "" {
			body = []byte(k.body)
		}
		r := jsCall(t, "POST", g.url+"/v1/jobs/"+k.id+"/kill", k.token, body)
		if got := jsOK(t, "kill", r, "job.kill"); got["state"] != "killed" || got["signal"] != k.want || got["sent_signal"] != k.want {
			t.Errorf("kill %s: want signal %s: %v", k.body, k.want, got)
		}
	}
	g.alive(t)
	g.stop(t)
	e.waitNoHost(t)
	e.auditVerify(t)
}

// TestJobServeAudit: after jobs ran and one was killed, `cmdgate audit verify` accepts
// the log the gateway and the supervisors appended to, and the log holds for a job its
// decision record (endpoint job), its kill (a job record) and its end (an execution
// record naming the job).
func TestJobServeAudit(t *testing.T) {
	t.Parallel()
	e := jsNewEnv(t, "")
	agent := e.token(t, "agent", "alice")
	g := e.serve(t)

	done := g.startJob(t, agent, map[string]any{"command": "printf 'hi\\n'; printf 'oops\\n' >&2; exit 3", "snapshot_after_ms": 10000})
	doneID := jsStr(done, "job_id")
	if w := jsOK(t, "wait", jsCall(t, "GET", g.url+"/v1/jobs/"+doneID+"/wait?timeout_ms=120000", agent, nil), "job.wait"); w["exit_code"] != 3.0 {
		t.Fatalf("wait: %v", w)
	}
	tag, marker := jsTag(), jsSleepMarker()
	killed := g.startJob(t, agent, map[string]any{"command": jsSleepScript(tag, marker)})
	killedID := jsStr(killed, "job_id")
	g.waitOutput(t, agent, killedID, "ready-"+tag)
	g.kill(t, agent, killedID)
	g.stop(t)
	e.waitNoHost(t)

	e.auditVerify(t)
	recs := e.auditRecords(t)
	check := func(job map[string]any, exitCode float64, state string, killedToo bool) {
		t.Helper()
		id, decisionID := jsStr(job, "job_id"), jsStr(job, "decision_id")
		var decision, kill, end bool
		for _, rec := range recs {
			switch {
			case rec["kind"] == "decision" && rec["id"] == decisionID:
				decision = rec["decision"] == "allow" && jsStr(rec, "detail", "endpoint") == "job" && jsStr(rec, "principal", "name") == "alice"
				if !decision {
					t.Errorf("job %s: decision record %v", id, rec)
				}
			case rec["kind"] == "job" && jsStr(rec, "detail", "job_id") == id:
				kill = jsStr(rec, "detail", "event") == "kill" && jsStr(rec, "detail", "signal") == "TERM" &&
					rec["decision_id"] == decisionID && jsStr(rec, "principal", "name") == "alice"
				if !kill {
					t.Errorf("job %s: job record %v", id, rec)
				}
			case rec["kind"] == "execution" && jsStr(rec, "detail", "job_id") == id:
				end = rec["decision_id"] == decisionID && jsStr(rec, "detail", "endpoint") == "job" && jsStr(rec, "detail", "state") == state &&
					(state != "exited" || jsNum(rec, "execution", "exit_code") == exitCode)
				if !end {
					t.Errorf("job %s: execution record %v", id, rec)
				}
			}
		}
		if !decision || kill != killedToo || !end {
			t.Errorf("job %s: decision record %v, kill record %v (want %v), execution record %v", id, decision, kill, killedToo, end)
		}
	}
	check(done, 3, "exited", false)
	check(killed, 0, "killed", true)
}
