//go:build linux

package gateway

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// benchTask is a ready task of a one-file repository, for the benchmarks.
func benchTask(b *testing.B) (*Server, Caller, *Task) {
	b.Helper()
	cli := testenv.DockerEngine(b)
	o := testenv.NewOutside(b)
	g := testenv.NewGitServer(b, o.Listen(b), "")
	repo := g.Repo(b, "bench", map[string]string{"README.md": "bench\n"})
	s := taskServer(b, cli, TaskOptions{GitHubHosts: []string{}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "b"}
	task, err := s.CreateTask(b.Context(), alice, &TaskRequest{RepoURL: repo, WaitMS: 300_000})
	if err != nil || task.State != TaskReady {
		b.Fatalf("task: %+v %v", task, err)
	}
	b.Cleanup(func() { s.DeleteTask(context.Background(), alice, task.ID) })
	return s, alice, task
}

// BenchmarkDockerExec is `true` run in a ready task through cmdgate (the request
// parsed, decided by the policy, its decision record durable, run in the task's
// container, its execution record durable) beside `docker exec NAME true`, the CLI,
// in one run.
func BenchmarkDockerExec(b *testing.B) {
	s, alice, task := benchTask(b)
	b.Run("cmdgate", func(b *testing.B) {
		for b.Loop() {
			out, err := s.Exec(b.Context(), alice, &Request{Argv: []string{"true"}, Task: task.ID})
			if err != nil || out.Result.ExitCode != 0 {
				b.Fatalf("%+v %v", out, err)
			}
		}
	})
	b.Run("docker-cli", func(b *testing.B) {
		docker := testenv.NeedCommand(b, "docker")
		for b.Loop() {
			if out, err := exec.Command(docker, "exec", task.ContainerName, "true").CombinedOutput(); err != nil {
				b.Fatalf("docker exec: %v %s", err, out)
			}
		}
	})
}

// BenchmarkTaskPrepare is a task of a small repository without dependencies, from the
// request to ready, then deleted: container_ms is the container's part (an earlier one
// looked for, the network and its guard, create, start), clone_ms the clone, delete_ms
// the removal (container, guard rules, network).
func BenchmarkTaskPrepare(b *testing.B) {
	cli := testenv.DockerEngine(b)
	o := testenv.NewOutside(b)
	g := testenv.NewGitServer(b, o.Listen(b), "")
	repo := g.Repo(b, "small", map[string]string{"README.md": "small\n", "main.go": "package main\n"})
	s := taskServer(b, cli, TaskOptions{GitHubHosts: []string{}}, nil)
	alice := Caller{Name: "alice", Role: RoleAgent, RequestID: "b"}
	var container, clone, del time.Duration
	for b.Loop() {
		task, err := s.CreateTask(b.Context(), alice, &TaskRequest{RepoURL: repo, WaitMS: 300_000})
		if err != nil || task.State != TaskReady {
			b.Fatalf("task: %+v %v", task, err)
		}
		c := time.Duration(task.Steps[0].DurationMS) * time.Millisecond
		clone += c
		container += task.ReadyAt.Sub(task.CreatedAt) - c
		start := time.Now()
		if _, err := s.DeleteTask(b.Context(), alice, task.ID); err != nil {
			b.Fatal(err)
		}
		del += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(container.Milliseconds())/n, "container_ms")
	b.ReportMetric(float64(clone.Milliseconds())/n, "clone_ms")
	b.ReportMetric(float64(del.Milliseconds())/n, "delete_ms")
}
