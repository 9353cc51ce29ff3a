package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/executor/linux"
	"github.com/cmdgate/cmdgate/gateway"
	"github.com/cmdgate/cmdgate/internal/testenv"
	"github.com/cmdgate/cmdgate/jobs"
)

// BenchmarkJobRun starts `true` as a background job through the embedded pipeline and
// waits until it is exited ("job": decide, durable decision record, the job's
// directory, a detached supervisor process that builds its sandbox, runs the command
// with its logs, appends the end record and writes the end), beside the same command
// run to completion by Exec ("exec", the peer: decide, record, a sandbox of the warm
// pool, record), both in the linux sandbox on gateways of their own, in one run.
// Target: job at most 1.5× exec.
func BenchmarkJobRun(b *testing.B) {
	prog, err := testenv.BuildCmdgate("gateway")
	if err != nil {
		b.Fatal(err)
	}
	helper := filepath.Join(filepath.Dir(prog), "cmdgate-sandbox")
	probe, err := linux.New(linux.Options{Workspace: b.TempDir(), Helper: helper, Pool: -1})
	if err == nil {
		_, err = probe.Probe(b.Context())
		probe.Close()
	}
	if err != nil {
		testenv.Skip(b, "the linux sandbox cannot be built here: %v", err)
	}
	newServer := func(b *testing.B) *gateway.Server {
		base := b.TempDir()
		ws := filepath.Join(base, "ws")
		os.Mkdir(ws, 0o755)
		s, err := gateway.New(b.Context(), gateway.Options{Workspace: ws, DataDir: filepath.Join(base, "data"),
			Sandbox: gateway.SandboxLinux, Linux: linux.Options{Helper: helper}, Jobs: gateway.JobOptions{Program: prog}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s.Close(ctx)
		})
		return s
	}
	caller := gateway.Caller{Name: "agent", Role: gateway.RoleAgent, RequestID: "bench"}
	b.Run("exec", func(b *testing.B) {
		s := newServer(b)
		for b.Loop() {
			o, err := s.Exec(b.Context(), caller, &gateway.Request{Argv: []string{"true"}})
			if err != nil || o.Result.ExitCode != 0 {
				b.Fatalf("exec: %v %+v", err, o)
			}
		}
	})
	b.Run("job", func(b *testing.B) {
		s := newServer(b)
		for b.Loop() {
			_, j, err := s.StartJob(b.Context(), caller, &gateway.JobRequest{Request: gateway.Request{Argv: []string{"true"}}})
			if err != nil {
				b.Fatalf("start: %v", err)
			}
			j, done, err := s.WaitJob(b.Context(), caller, j.ID, time.Minute)
			if err != nil || !done || j.State != jobs.Exited || *j.ExitCode != 0 {
				b.Fatalf("wait: %v %v %+v", err, done, j)
			}
		}
	})
}
