package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestServeEndToEnd builds the real cmdgate binary and uses it as a person would:
// `cmdgate serve` as a process on 127.0.0.1 with a configuration file, `cmdgate token
// create`, `cmdgate exec` for an allowed and a denied command, `cmdgate decide --url`,
// the audit log read back over the API, a SIGHUP reload, a SIGTERM shutdown, and
// `cmdgate exec` against a gateway that is gone.
func TestServeEndToEnd(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals: the shutdown part needs SIGTERM and SIGHUP")
	}
	goBin := testenv.NeedCommand(t, "go")
	testenv.NeedCommand(t, "bash")
	dir := t.TempDir()
	bin := filepath.Join(dir, "cmdgate")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, ws := filepath.Join(dir, "data"), filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(dir, "addr")
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME=", "CMDGATE_DATA=", "CMDGATE_URL=", "CMDGATE_TOKEN=", "CMDGATE_CONFIG=")
	// The configuration file sets the log format, asks (instead of denying) for unknown
	// commands and lowers the output cap: each shows below that the file was read.
	config := filepath.Join(dir, "cmdgate.yaml")
	// The audit witness is a file outside the data directory.
	witness := filepath.Join(dir, "witness.jsonl")
	if err := os.WriteFile(config, []byte("log: {format: json}\npolicy: {unknown_command: ask}\nexec: {default_output_chars: 5000, max_output_chars: 5000}\naudit: {witness: "+witness+"}\nreadonly: {allow: [docs/]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	serve := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--data", data, "--config", config)
	serve.Dir = ws // the workspace defaults to the current directory
	serve.Env = env
	serve.Stderr = logFile
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() {
		if serve.ProcessState == nil {
			serve.Process.Kill()
			<-exited
		}
	})
	var addr string
	for range 300 {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			addr = strings.TrimSpace(string(b))
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("cmdgate serve exited: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if addr == "" {
		t.Fatal("cmdgate serve did not write its address")
	}
	url := "http://" + addr

	run := func(wantExit int, extraEnv []string, args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append([]string{}, env...), extraEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantExit {
			t.Fatalf("cmdgate %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantExit, stdout.Bytes(), stderr.Bytes())
		}
		var out map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("cmdgate %v: stdout is not one JSON object: %v\n%s", args, err, stdout.Bytes())
		}
		return out
	}
	agent := run(0, nil, "token", "create", "--role", "agent", "--name", "e2e-agent", "--data", data)["token"].(string)
	auditor := run(0, nil, "token", "create", "--role", "auditor", "--name", "e2e-auditor", "--data", data)["token"].(string)
	client := []string{"CMDGATE_URL=" + url, "CMDGATE_TOKEN=" + agent}

	out := run(0, client, "exec", "-c", "echo hi")
	if out["ok"] != true || out["stdout"] != "hi\n" || out["decision"] != "allow" || out["type"] != "exec" {
		t.Errorf("exec echo hi = %v", out)
	}
	out = run(0, client, "exec", "--cwd", ".", "--", "ls", "-a")
	if out["ok"] != true || !strings.Contains(out["stdout"].(string), "..") {
		t.Errorf("exec -- ls -a = %v", out)
	}
	out = run(0, client, "exec", "-c", "rm -rf /")
	e, _ := out["error"].(map[string]any)
	if out["ok"] != false || e["code"] != "DENIED" || e["decision_id"] == "" || e["reasons"] == nil {
		t.Errorf("exec rm -rf / = %v, want DENIED with reasons", out)
	}
	deniedID, _ := e["decision_id"].(string)

	// The file's exec limits apply: a larger output cap than it allows is refused.
	out = run(0, client, "exec", "--max-output-chars", "6000", "-c", "echo hi")
	if e, _ := out["error"].(map[string]any); out["ok"] != false || e["code"] != "INVALID_ARGUMENT" {
		t.Errorf("exec --max-output-chars 6000 = %v, want INVALID_ARGUMENT (max 5000 by the config file)", out)
	}

	// A cut result names its whole output; cmdgate output pages it.
	out = run(0, client, "exec", "-c", "seq 1 3000")
	id, _ := out["output_id"].(string)
	if out["stdout_truncated"] != true || id == "" || out["stdout_total_chars"] != 13893.0 {
		t.Fatalf("exec seq 1 3000 = %v, want cut with an output_id", out)
	}
	out = run(0, client, "output", "--start", "13890", id)
	if out["ok"] != true || out["type"] != "output" || out["stdout_text"] != "00\n" || out["has_next_start"] != false {
		t.Errorf("output --start 13890 = %v, want the last 3 bytes", out)
	}
	if out = run(0, client, "output", "--stream", "stdin", id); out["ok"] != false {
		t.Errorf("output --stream stdin = %v, want INVALID_ARGUMENT", out)
	}

	// The read-only language, through an agent's token and a reader's.
	if err := os.MkdirAll(filepath.Join(ws, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "docs", "guide.md"), []byte("intro\nTODO: write\n"), 0o644)
	out = run(0, client, "execute", "cat docs/guide.md | grep -n TODO")
	if out["ok"] != true || out["type"] != "execute" || out["stdout_text"] != "2:TODO: write\n" || out["exit_code"] != 0.0 {
		t.Errorf("execute = %v", out)
	}
	out = run(0, client, "execute", "cat /etc/passwd")
	if out["ok"] != true || out["exit_code"] != 3.0 || out["error_name"] != "file_not_allowed" {
		t.Errorf("execute cat /etc/passwd = %v, want exit_code 3", out)
	}
	readDeniedID, _ := out["decision_id"].(string)
	reader := run(0, nil, "token", "create", "--role", "reader", "--name", "e2e-reader", "--data", data)["token"].(string)
	readerEnv := []string{"CMDGATE_URL=" + url, "CMDGATE_TOKEN=" + reader}
	if out = run(0, readerEnv, "execute", "--size", "3", "head -n 1 docs/guide.md"); out["stdout_text"] != "int" || out["next_start"] != 3.0 {
		t.Errorf("reader execute --size 3 = %v", out)
	}
	if out = run(0, readerEnv, "exec", "-c", "true"); out["ok"] != false {
		t.Errorf("reader exec = %v, want FORBIDDEN", out)
	}

	// decide as a client: --url, and --remote with CMDGATE_URL. The gateway decides with
	// its configuration (unknown commands ask) and records each decision.
	out = run(0, client, "decide", "--url", url, "-c", "go test ./...")
	if out["ok"] != true || out["decision"] != "allow" || out["decision_id"] == "" || out["type"] != "decide" {
		t.Errorf("decide --url go test = %v, want allow with a decision_id", out)
	}
	out = run(0, client, "decide", "--remote", "--", "npx", "create-app")
	if out["ok"] != true || out["decision"] != "ask" {
		t.Errorf("decide --remote npx = %v, want ask (policy.unknown_command: ask in the file)", out)
	}
	askID, _ := out["decision_id"].(string)
	out = run(0, []string{"CMDGATE_URL=" + url, "CMDGATE_TOKEN=" + agent[:len(agent)-1] + "x"}, "decide", "--remote", "-c", "ls")
	if e, _ := out["error"].(map[string]any); out["ok"] != false || e["code"] != "UNAUTHENTICATED" {
		t.Errorf("decide --remote with a wrong token = %v, want UNAUTHENTICATED", out)
	}

	// The auditor reads the denial back over the API.
	get := func(path, token string) []byte {
		t.Helper()
		req, _ := http.NewRequest("GET", url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b.Bytes())
		}
		return b.Bytes()
	}
	var page struct {
		Records []struct {
			ID, Kind, Decision string
		}
	}
	json.Unmarshal(get("/v1/audit?decision=deny", auditor), &page)
	if len(page.Records) != 2 || page.Records[0].ID != readDeniedID || page.Records[1].ID != deniedID {
		t.Errorf("audit deny records = %+v, want the refused read's %s and %s", page.Records, readDeniedID, deniedID)
	}
	page.Records = nil
	json.Unmarshal(get("/v1/audit?decision=ask", auditor), &page)
	if len(page.Records) != 1 || page.Records[0].ID != askID {
		t.Errorf("audit ask records = %+v, want the remote decide's %s", page.Records, askID)
	}

	// The web console is served, with its security headers, to anyone; who am I says
	// the token's role.
	if ui := get("/ui/", ""); !bytes.Contains(ui, []byte("cmdgate console")) {
		t.Errorf("/ui/ = %.200s", ui)
	}
	if who := get("/v1/whoami", auditor); !bytes.Contains(who, []byte(`"role":"auditor"`)) {
		t.Errorf("/v1/whoami = %s", who)
	}

	// SIGHUP reloads the policy: a policy_load record with trigger reload appears.
	if err := serve.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reloaded := false
	for range 200 {
		if bytes.Contains(get("/v1/audit?kind=policy_load", auditor), []byte(`"trigger":"reload"`)) {
			reloaded = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !reloaded {
		t.Error("no policy_load record after SIGHUP")
	}

	// An ask waits in the approval queue; the approval client decides it.
	approver := run(0, nil, "token", "create", "--role", "approver", "--name", "e2e-approver", "--data", data)["token"].(string)
	approverEnv := []string{"CMDGATE_URL=" + url, "CMDGATE_TOKEN=" + approver}
	out = run(0, client, "exec", "--", "npx", "create-app")
	pending, _ := out["error"].(map[string]any)
	approvalID, _ := pending["approval_id"].(string)
	if out["ok"] != false || pending["code"] != "APPROVAL_PENDING" || approvalID == "" || out["http_status"] != float64(202) {
		t.Fatalf("exec of a command that asks = %v, want APPROVAL_PENDING with an approval_id", out)
	}
	out = run(0, approverEnv, "approval", "list", "--state", "pending")
	if list, _ := out["approvals"].([]any); out["ok"] != true || out["type"] != "approval.list" || len(list) != 1 {
		t.Errorf("approval list = %v, want the one pending approval", out)
	}
	out = run(0, client, "approval", "approve", approvalID)
	if e, _ := out["error"].(map[string]any); out["ok"] != false || e["code"] != "FORBIDDEN" {
		t.Errorf("the requester approving its own request = %v, want FORBIDDEN", out)
	}
	out = run(0, approverEnv, "approval", "deny", approvalID, "--comment", "use the template instead")
	if out["ok"] != true || out["state"] != "denied" || out["comment"] != "use the template instead" {
		t.Errorf("approval deny = %v", out)
	}
	out = run(0, client, "approval", "show", approvalID, "--wait", "1s")
	if out["ok"] != true || out["state"] != "denied" {
		t.Errorf("approval show = %v", out)
	}
	out = run(0, approverEnv, "approval", "grants")
	if grants, _ := out["grants"].([]any); out["ok"] != true || len(grants) != 0 {
		t.Errorf("approval grants = %v, want none", out)
	}

	// SIGTERM: a graceful stop, exit status 0.
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("cmdgate serve after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cmdgate serve did not stop after SIGTERM")
	}
	if _, err := os.Stat(addrFile); err == nil {
		t.Error("the address file outlived the gateway")
	}
	log, _ := os.ReadFile(logFile.Name())
	// With JSON logs every line of stderr is one JSON record, the first-start hint
	// among them.
	for i, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		if !json.Valid(line) {
			t.Errorf("serve's stderr line %d is not JSON: %q", i+1, line)
		}
	}
	for _, want := range []string{`"msg":"no API tokens exist yet`, `"create_one":"cmdgate token create --role agent --name NAME --data ` + data, `"request_id":`, `"msg":"cmdgate gateway listening"`, `"msg":"cmdgate gateway stopped"`, `"principal":"e2e-agent"`, `"decision":"deny"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("serve's stderr lacks %q:\n%s", want, log)
		}
	}

	// The gateway is gone: exec says UNAVAILABLE and exits 1.
	out = run(1, client, "exec", "-c", "echo hi")
	if e, _ := out["error"].(map[string]any); out["ok"] != false || e["code"] != "UNAVAILABLE" {
		t.Errorf("exec without a gateway = %v, want UNAVAILABLE", out)
	}
	// The log the gateway wrote verifies offline, strictly and against the witness: the
	// gateway shut down cleanly, with every record under a checkpoint.
	out = run(0, nil, "audit", "verify", "--data", data, "--strict", "--witness", witness)
	if out["ok"] != true || out["clean_shutdown"] != true || out["unsealed"] != float64(0) || out["witness_checkpoints"].(float64) < 1 {
		t.Errorf("audit verify --strict --witness = %v; want ok, a clean shutdown, nothing unsealed, the witness's checkpoints", out)
	}
	// The data directory is deleted: the witness still says there was a log.
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	out = run(1, nil, "audit", "verify", "--data", data, "--witness", witness)
	if e, _ := out["error"].(map[string]any); out["ok"] != false || e["code"] != "CHAIN_BROKEN" || !strings.Contains(e["message"].(string), "deleted") {
		t.Errorf("audit verify --witness of a deleted log = %v; want CHAIN_BROKEN", out)
	}
}
