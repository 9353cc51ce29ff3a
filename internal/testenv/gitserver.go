package testenv

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// GitServer serves git repositories over smart HTTP (git http-backend) on a listener
// the test gives, for clone tests: the listener of an Outside namespace is a
// repository "on the internet" that task containers reach as they would GitHub. With
// Token set, every request must carry it as HTTP Basic credentials (any user name, as
// GitHub's tokens take) or is answered 401.
type GitServer struct {
	Root  string // the directory of the bare repositories
	Token string
	URL   string // http://ADDR/

	mu       sync.Mutex
	requests []GitRequest
}

// GitRequest is what the server saw of one request.
type GitRequest struct {
	Path, User, Password string
	Authorized           bool
}

// NewGitServer serves the bare repositories under a new directory on ln until the
// test ends. It needs git.
func NewGitServer(t testing.TB, ln net.Listener, token string) *GitServer {
	t.Helper()
	git := NeedCommand(t, "git")
	out, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	g := &GitServer{Root: t.TempDir(), Token: token, URL: "http://" + ln.Addr().String() + "/"}
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + g.Root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		ok := token == "" || pass == token
		g.mu.Lock()
		g.requests = append(g.requests, GitRequest{Path: r.URL.Path, User: user, Password: pass, Authorized: ok})
		g.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return g
}

// Requests are the requests the server saw so far.
func (g *GitServer) Requests() []GitRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GitRequest(nil), g.requests...)
}

// Repo creates the bare repository NAME.git holding one commit of files on branch
// main (paths to contents), and returns its URL.
func (g *GitServer) Repo(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	work := t.TempDir()
	g.git(t, work, "init", "-q", "-b", "main")
	g.commit(t, work, files, "initial")
	bare := filepath.Join(g.Root, name+".git")
	g.git(t, "", "clone", "-q", "--bare", work, bare)
	g.git(t, bare, "config", "http.receivepack", "false")
	g.git(t, bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
	return g.URL + name + ".git"
}

// PullRequest adds to NAME.git a pull request: n commits on top of main, each changing
// file, published as refs/pull/N/head (GitHub's layout) and refs/merge-requests/N/head
// (GitLab's), and main advanced by one more commit of its own, so that the two have
// diverged. It returns the head commit of the pull request.
func (g *GitServer) PullRequest(t testing.TB, name string, number, n int, file string) string {
	t.Helper()
	bare := filepath.Join(g.Root, name+".git")
	work := t.TempDir()
	g.git(t, "", "clone", "-q", bare, work)
	g.git(t, work, "checkout", "-q", "-b", "feature")
	for i := range n {
		g.commit(t, work, map[string]string{file: fmt.Sprintf("change %d\n", i+1)}, fmt.Sprintf("feature %d", i+1))
	}
	head := strings.TrimSpace(g.git(t, work, "rev-parse", "HEAD"))
	g.git(t, work, "push", "-q", "origin", fmt.Sprintf("HEAD:refs/pull/%d/head", number))
	g.git(t, work, "push", "-q", "origin", fmt.Sprintf("HEAD:refs/merge-requests/%d/head", number))
	g.git(t, work, "checkout", "-q", "main")
	g.commit(t, work, map[string]string{"MAIN-" + file: "main moved on\n"}, "main moves on")
	g.git(t, work, "push", "-q", "origin", "main")
	return head
}

func (g *GitServer) commit(t testing.TB, work string, files map[string]string, msg string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g.git(t, work, "add", "-A")
	g.git(t, work, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "--allow-empty", "-m", msg)
}

func (g *GitServer) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
