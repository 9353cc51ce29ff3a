package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// DockerImage is the task image of the Docker tests: $CMDGATE_TEST_DOCKER_IMAGE, else
// coding-agent-executor:latest (scripts/docker-image.sh builds it).
func DockerImage() string {
	if img := os.Getenv("CMDGATE_TEST_DOCKER_IMAGE"); img != "" {
		return img
	}
	return "coding-agent-executor:latest"
}

// DockerEngine connects to the Docker engine of the environment (DOCKER_HOST), closed
// when the test ends; it skips (fails under CI=true) when none answers or DockerImage is
// missing.
func DockerEngine(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		Skip(t, "docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		Skip(t, "no Docker engine answers (start dockerd: scripts/docker-engine.sh): %v", err)
	}
	if _, err := cli.ImageInspect(ctx, DockerImage()); err != nil {
		Skip(t, "the image %s is missing (scripts/docker-image.sh builds it): %v", DockerImage(), err)
	}
	return cli
}
