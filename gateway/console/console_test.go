package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/gateway/console"
	"github.com/cmdgate/cmdgate/gateway/httpapi"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// env is a real gateway on 127.0.0.1 with the console mounted, where `touch` asks.
type env struct {
	url    string
	ws     string
	tokens map[gateway.Role]string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := gateway.Options{Workspace: ws, DataDir: filepath.Join(base, "data"), Sandbox: gateway.SandboxProcess}
	opts.Policy.AllowedCommands.Exclude = []string{"touch"}
	opts.Policy.UnknownCommand = "ask"
	core, err := gateway.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	front := httpapi.New(core)
	front.MountStatic(console.Path, console.Handler())
	hs := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		core.Close(ctx)
	})
	e := &env{url: hs.URL, ws: ws, tokens: map[gateway.Role]string{}}
	for _, r := range gateway.Roles {
		if e.tokens[r], _, err = core.Tokens().Create(string(r)+"-one", r); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// call sends a request to the API as a role and decodes the JSON answer into out.
func (e *env) call(t *testing.T, role gateway.Role, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+e.tokens[role])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// The console's files come with a strict CSP and no framing; nothing but GET and HEAD.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/style.css"} {
		resp, err := http.Get(e.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Security-Policy") != console.CSP || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("X-Content-Type-Options") != "nosniff" || strings.Contains(console.CSP, "unsafe-inline") {
			t.Errorf("%s: %d %v", p, resp.StatusCode, h)
		}
	}
	resp, err := http.Post(e.url+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Error("POST /ui/ answered 200")
	}
	// No inline script anywhere in the page.
	resp, _ = http.Get(e.url + "/ui/")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(page, []byte("<script>")) || bytes.Contains(page, []byte(" on")) && bytes.Contains(page, []byte("onclick")) {
		t.Error("the page has inline script")
	}
}

// browser starts headless Chromium; a host without it skips (and fails under CI).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		testenv.Skip(t, "no Chromium here (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// screenshot saves what the page shows, for a failure.
func screenshot(t *testing.T, ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shot, err := chromedp.Run(sctx, chromedp.FullScreenshot(80))
	if err != nil {
		return
	}
	name := filepath.Join(os.TempDir(), "cmdgate-console-"+strings.ReplaceAll(t.Name(), "/", "_")+".png")
	if os.WriteFile(name, shot, 0o644) == nil {
		t.Logf("screenshot: %s", name)
	}
}

// do runs browser steps; on failure it saves a screenshot and fails the test.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	start := time.Now()
	if err := chromedp.Do(ctx, steps...); err != nil {
		screenshot(t, ctx)
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond))
}

// get runs one browser action that gives a value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		screenshot(t, ctx)
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

type css = chromedp.CSS

func signIn(t *testing.T, ctx context.Context, e *env, role gateway.Role) {
	t.Helper()
	do(t, ctx, "sign in as "+string(role),
		chromedp.Navigate(e.url+"/ui/"),
		discard(chromedp.Evaluate[any](`sessionStorage.clear()`)),
		chromedp.Navigate(e.url+"/ui/"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), e.tokens[role]),
		chromedp.Click(css("#signin-form button")))
}

// discard turns an action with a value into a step.
func discard[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := a(ctx, tg)
		return err
	})
}

// The console in a real browser: an agent's token is refused; an approver sees a
// request appear live, with its hostile text shown as text, approves it for the same
// command again and the waiting /v1/exec returns the output; denies another; revokes
// the grant; an auditor sees no decision buttons, and the audit log with the chain
// verified.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := browser(t)

	signIn(t, ctx, e, gateway.RoleAgent)
	do(t, ctx, "the agent's refusal", chromedp.WaitVisible(css("#signin-error")),
		discard(chromedp.Poll[bool](`document.querySelector("#signin-error").textContent.length > 0`)))
	if msg := get(t, ctx, "read the refusal", chromedp.Text(css("#signin-error"))); !strings.Contains(msg, "agent") {
		t.Errorf("an agent's sign-in says %q; want a refusal naming the agent role", msg)
	}

	signIn(t, ctx, e, gateway.RoleApprover)
	do(t, ctx, "signed in", chromedp.WaitVisible(css("#who")))
	if role := get(t, ctx, "read the role", chromedp.Text(css("#who-role"))); role != "approver" {
		t.Fatalf("signed in as %q", role)
	}

	// A request with hostile text waits for the approval.
	hostile := `touch 'x"><img src=x onerror=window.pwned=1>' && echo '<script>window.pwned=2</script>'`
	type execAnswer struct {
		status int
		Stdout string `json:"stdout"`
	}
	answers := make(chan execAnswer, 1)
	go func() {
		var a execAnswer
		a.status = e.call(t, gateway.RoleAgent, "POST", "/v1/exec", map[string]any{"command": hostile, "wait_ms": 60000}, &a)
		answers <- a
	}()
	do(t, ctx, "see the request appear", chromedp.WaitVisible(css("article.approval")))
	shown := get(t, ctx, "read the command", chromedp.Text(css("article.approval .script")))
	injected := get(t, ctx, "look for injected nodes",
		chromedp.Evaluate[bool](`document.querySelectorAll("#pending img, #pending script").length > 0 || window.pwned !== undefined`))
	if shown != hostile || injected {
		t.Errorf("the command is shown as %q (injected %v); want its text exactly and nothing run", shown, injected)
	}
	if marked := get(t, ctx, "read the marked command", chromedp.Text(css("article.approval li.asks"))); !strings.HasPrefix(marked, "touch") {
		t.Errorf("the command that asks is marked %q; want the touch", marked)
	}
	do(t, ctx, "approve for the same command",
		chromedp.SetValue(css("article.approval select[name=scope]"), "command"),
		chromedp.Click(css("article.approval button.approve")),
		chromedp.WaitNotPresent(css("article.approval")))
	select {
	case a := <-answers:
		if a.status != 200 || a.Stdout != "<script>window.pwned=2</script>\n" {
			t.Errorf("the waiting exec after the approval: %d %q", a.status, a.Stdout)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting exec did not return after the approval")
	}

	// Deny another, with a comment.
	var pending struct {
		Error struct {
			ApprovalID string `json:"approval_id"`
		} `json:"error"`
	}
	e.call(t, gateway.RoleAgent, "POST", "/v1/exec", map[string]any{"argv": []string{"touch", "other"}}, &pending)
	do(t, ctx, "deny", chromedp.WaitVisible(css(`article.approval[data-id="`+pending.Error.ApprovalID+`"]`)),
		chromedp.SendKeys(css("article.approval input[name=comment]"), "not now"),
		chromedp.Click(css("article.approval button.deny")),
		chromedp.WaitNotPresent(css("article.approval")))
	var denied struct {
		State   string `json:"state"`
		Comment string `json:"comment"`
	}
	e.call(t, gateway.RoleApprover, "GET", "/v1/approvals/"+pending.Error.ApprovalID, nil, &denied)
	if denied.State != "denied" || denied.Comment != "not now" {
		t.Errorf("after the denial: %+v", denied)
	}

	// The grant made with the approval, and its revocation.
	do(t, ctx, "revoke the grant", chromedp.Click(css(`button[data-tab="grants"]`)),
		chromedp.WaitVisible(css("#grant-list tbody tr button.revoke")),
		chromedp.Click(css("#grant-list tbody tr button.revoke")),
		chromedp.WaitNotPresent(css("#grant-list tbody tr")))
	var grants struct {
		Grants []any `json:"grants"`
	}
	e.call(t, gateway.RoleAuditor, "GET", "/v1/grants", nil, &grants)
	if len(grants.Grants) != 0 {
		t.Errorf("live grants after the revocation: %v", grants.Grants)
	}

	// An auditor: the queue without decision buttons, the audit log, the chain.
	e.call(t, gateway.RoleAgent, "POST", "/v1/exec", map[string]any{"argv": []string{"touch", "third"}}, nil)
	ctx, closeTab := chromedp.NewContext(ctx) // a tab of its own: its own sessionStorage
	defer closeTab()
	signIn(t, ctx, e, gateway.RoleAuditor)
	do(t, ctx, "the auditor's queue", chromedp.WaitVisible(css("article.approval")))
	buttons := get(t, ctx, "count decision buttons", chromedp.Evaluate[int](`document.querySelectorAll("button.approve, button.deny").length`))
	do(t, ctx, "the audit tab", chromedp.Click(css(`button[data-tab="audit"]`)),
		chromedp.WaitVisible(css("#records tbody tr")),
		discard(chromedp.Poll[bool](`document.querySelector("#verify").textContent.length > 0`)))
	verify := get(t, ctx, "read the chain's state", chromedp.Text(css("#verify")))
	rows := get(t, ctx, "count records", chromedp.Evaluate[int](`document.querySelectorAll("#records tbody tr").length`))
	if buttons != 0 || !strings.HasPrefix(verify, "Chain verified") || rows == 0 {
		t.Errorf("the auditor sees %d decision buttons, verify %q, %d records", buttons, verify, rows)
	}
	do(t, ctx, "open a record", chromedp.Click(css("#records tbody tr")), chromedp.WaitVisible(css("#record-detail")))
	if detail := get(t, ctx, "read the record", chromedp.Text(css("#record-detail"))); !strings.Contains(detail, `"hash"`) {
		t.Errorf("a record's detail: %.200q", detail)
	}
}
