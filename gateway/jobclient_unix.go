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
// to start this gateway's host when none answers. ctx ending closes the connection.
func (s *Server) hostCall(ctx context.Context, key string, req hostRequest, start bool) (hostAnswer, error) {
	sock, _ := s.jobStore.HostPaths(key)
	dial := func() (net.Conn, error) {
		conn, _, err := unixSocketDo(sock, func(addr string) (net.Conn, net.Listener, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", addr)
			return c, nil, err
		})
		return conn, err
	}
	conn, err := dial()
	if err != nil && start {
		if err = s.startHost(ctx); err == nil {
			// The host that answered ready may be another, still starting: retry a while.
			for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
				if conn, err = dial(); err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(wait)
			}
		}
	}
	if err != nil {
		return hostAnswer{}, fmt.Errorf("the job host: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return hostAnswer{}, fmt.Errorf("the job host: %w", err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return hostAnswer{}, fmt.Errorf("the job host did not answer: %w", err)
	}
	var ans hostAnswer
	if err := json.Unmarshal(line, &ans); err != nil {
		return hostAnswer{}, fmt.Errorf("the job host's answer: %w", err)
	}
	return ans, nil
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
