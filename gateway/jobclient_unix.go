//go:build unix

package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cmdgate/cmdgate/jobs"
)

// hostKey names this gateway's job host.
func (s *Server) hostKey() string {
	return jobs.HostKey(s.opts.DataDir, s.ws.Root(), s.sandbox, s.opts.Jobs.Config)
}

// hostRun hands job id to the job host, starting one when none serves, and returns
// once the host started the command or says why it could not.
func (s *Server) hostRun(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobReadyTimeout)
	defer cancel()
	ans, err := s.hostCall(ctx, s.hostKey(), hostRequest{Op: "run", ID: id}, true)
	if err != nil {
		return err
	}
	if !ans.OK {
		return errors.New(ans.Message)
	}
	return nil
}

// hostCall sends one request to the job host of key and reads its answer; start says
// to start this gateway's host when none answers (and to ask the next host when the one
// that answered was stopping), until ctx ends. ctx ending closes the connection.
func (s *Server) hostCall(ctx context.Context, key string, req hostRequest, start bool) (hostAnswer, error) {
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		ans, dialed, err := s.hostCallOnce(ctx, key, req)
		switch {
		case err == nil && !ans.Retry:
			return ans, nil
		case !start || ctx.Err() != nil || (err != nil && dialed):
			if err == nil {
				err = errors.New(ans.Message)
			}
			return ans, err
		case err != nil: // no host answers: start one (a host that is still starting may answer ready)
			if serr := s.startHost(ctx); serr != nil {
				return hostAnswer{}, serr
			}
		}
		time.Sleep(wait)
	}
}

// hostCallOnce is one request and its answer; dialed says a host took the connection.
func (s *Server) hostCallOnce(ctx context.Context, key string, req hostRequest) (ans hostAnswer, dialed bool, err error) {
	sock, _ := s.jobStore.HostPaths(key)
	conn, _, err := unixSocketDo(sock, func(addr string) (net.Conn, net.Listener, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", addr)
		return c, nil, err
	})
	if err != nil {
		return hostAnswer{}, false, fmt.Errorf("the job host: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return hostAnswer{}, true, fmt.Errorf("the job host: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return hostAnswer{}, true, fmt.Errorf("the job host did not answer: %w", err)
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return hostAnswer{}, true, fmt.Errorf("the job host's answer: %w", err)
	}
	return ans, true, nil
}

// startHost starts a job host for this gateway, detached (a session of its own, its
// standard streams on /dev/null), and waits until it serves.
func (s *Server) startHost(ctx context.Context) error {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the job host: %w", err)
	}
	defer r.Close()
	args := []string{"cmdgate", "job", "host", "--data", s.opts.DataDir, "--workspace", s.ws.Root(),
		"--sandbox", s.sandbox, "--root", s.jobStore.Root, "--key", s.hostKey()}
	if s.opts.Jobs.Config != "" {
		args = append(args, "--config", s.opts.Jobs.Config)
	}
	cmd := &exec.Cmd{Path: s.opts.Jobs.Program, Args: args, Dir: "/", ExtraFiles: []*os.File{w}, SysProcAttr: detached()}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start the job host %s: %w", s.opts.Jobs.Program, err)
	}
	go cmd.Wait() // reap it when it exits, if this process still runs then
	got := make(chan hostAnswer, 1)
	go func() {
		var ans hostAnswer
		line, err := bufio.NewReader(r).ReadBytes('\n')
		if err != nil || json.Unmarshal(line, &ans) != nil {
			_, lock := s.jobStore.HostPaths(s.hostKey())
			ans = hostAnswer{Message: "the job host ended before it served (see " + filepath.Join(filepath.Dir(lock), filepath.Base(lock)+".log") + ")"}
		}
		got <- ans
	}()
	select {
	case ans := <-got:
		if !ans.OK {
			return errors.New(ans.Message)
		}
		return nil
	case <-ctx.Done():
		cmd.Process.Kill()
		return errors.New("the job host did not start in time: it was stopped")
	}
}
