package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Task containers: one per task, named NamePrefix + the task's id, carrying cmdgate's
// labels, with the isolation of seed 001 (sections 3.4 and 9): a non-root user, every
// capability dropped, no-new-privileges, a read-only root file system but for
// /workspace (a volume of its own) and /tmp (a tmpfs), CPU, memory and pids limits.

// NamePrefix is the start of every task container's name.
const NamePrefix = "coding-agent-exec-"

// Labels every task container carries: reaping touches only containers that have both
// them and a name of the naming rule.
const (
	LabelManaged = "cmdgate.managed" // "true"
	LabelTask    = "cmdgate.task"    // the task's id
)

// Defaults of a task container.
const (
	DefaultImage  = "coding-agent-executor:latest"
	DefaultCPUs   = 2.0
	DefaultMemory = 4 << 30
	DefaultPids   = 1024
	DefaultTmp    = 1 << 30
	// Workspace is where the project lives (seed 001 section 5.4): project/ and tmp/.
	Workspace = "/workspace"
	// stopGrace is how long a task container may take to stop before it is killed.
	stopGrace = 10 * time.Second
	// removeAttempts bounds the tries to remove a container.
	removeAttempts = 3
)

// ContainerSpec is the container of one task.
type ContainerSpec struct {
	TaskID string
	Image  string // default DefaultImage
	User   string // default the image's user ("agent" in cmdgate's image); never root
	CPUs   float64
	Memory int64 // bytes, swap included
	Pids   int64
	// Network is "bridge" (the default: the outside world, for package installs) or
	// "none".
	Network string
	// Labels are more labels (cmdgate's own win).
	Labels map[string]string
}

// ContainerName is the name of a task's container.
func ContainerName(taskID string) string { return NamePrefix + taskID }

// CreateContainer creates and starts the container of a task, removing first a
// container of the same task left by an earlier attempt (seed 001 section 5.1). It
// returns the container's id.
func CreateContainer(ctx context.Context, cli *client.Client, spec ContainerSpec) (string, error) {
	if spec.TaskID == "" || strings.ContainsAny(spec.TaskID, "/ ") {
		return "", fmt.Errorf("task id %q cannot name a container", spec.TaskID)
	}
	if spec.Image == "" {
		spec.Image = DefaultImage
	}
	if spec.CPUs == 0 {
		spec.CPUs = DefaultCPUs
	}
	if spec.Memory == 0 {
		spec.Memory = DefaultMemory
	}
	if spec.Pids == 0 {
		spec.Pids = DefaultPids
	}
	switch spec.Network {
	case "":
		spec.Network = "bridge"
	case "bridge", "none":
	default:
		return "", fmt.Errorf("network %q: want bridge or none", spec.Network)
	}
	if spec.User == "root" || spec.User == "0" || strings.HasPrefix(spec.User, "0:") || strings.HasPrefix(spec.User, "root:") {
		return "", errors.New("a task container never runs as root")
	}
	name := ContainerName(spec.TaskID)
	if err := RemoveContainer(ctx, cli, name); err != nil {
		return "", fmt.Errorf("remove the task's earlier container: %w", err)
	}
	user := spec.User
	if user == "" {
		img, err := cli.ImageInspect(ctx, spec.Image)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", spec.Image, err)
		}
		if img.Config != nil {
			user = img.Config.User
		}
		if user == "" || user == "root" || user == "0" {
			return "", fmt.Errorf("image %s runs as root: give the task a user (a task container never runs as root)", spec.Image)
		}
	}
	pids := spec.Pids
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image: spec.Image, User: user, Cmd: []string{"sleep", "infinity"}, WorkingDir: Workspace + "/project",
			Env:    []string{"HOME=" + Workspace + "/tmp", "TMPDIR=/tmp"},
			Labels: labels(spec),
		},
		HostConfig: &container.HostConfig{
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Tmpfs:          map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d", DefaultTmp)},
			Mounts:         []mount.Mount{{Type: mount.TypeVolume, Target: Workspace}},
			NetworkMode:    container.NetworkMode(spec.Network),
			Init:           boolPtr(true), // reaps what commands leave behind
			Resources: container.Resources{
				NanoCPUs: int64(spec.CPUs * 1e9), Memory: spec.Memory, MemorySwap: spec.Memory, PidsLimit: &pids,
			},
		},
	})
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		RemoveContainer(context.WithoutCancel(ctx), cli, created.ID)
		return "", fmt.Errorf("start container %s: %w", name, err)
	}
	return created.ID, nil
}

func boolPtr(b bool) *bool { return &b }

func labels(spec ContainerSpec) map[string]string {
	l := map[string]string{}
	for k, v := range spec.Labels {
		l[k] = v
	}
	l[LabelManaged], l[LabelTask] = "true", spec.TaskID
	return l
}

// RemoveContainer stops a container (SIGTERM, then SIGKILL after 10 s) and removes it
// with its anonymous volumes, trying up to three times. A container that does not
// exist is removed already.
func RemoveContainer(ctx context.Context, cli *client.Client, idOrName string) error {
	var errs []error
	for attempt := range removeAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		grace := int(stopGrace / time.Second)
		_, err := cli.ContainerStop(ctx, idOrName, client.ContainerStopOptions{Timeout: &grace})
		if err != nil && isNotFound(err) {
			return nil
		}
		_, err = cli.ContainerRemove(ctx, idOrName, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || isNotFound(err) {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("remove container %s: %w", idOrName, errors.Join(errs...))
}

// isNotFound says the engine has no such container.
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// Reap removes the task containers created before cutoff: those carrying cmdgate's
// labels (and every label of only, when given) and a name of the naming rule, never any
// other container. It returns the names it removed, and the failures.
func Reap(ctx context.Context, cli *client.Client, cutoff time.Time, only map[string]string) ([]string, error) {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	for k, v := range only {
		f = f.Add("label", k+"="+v)
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list task containers: %w", err)
	}
	var removed []string
	var errs []error
	for _, c := range list.Items {
		name := ""
		for _, n := range c.Names {
			if n = strings.TrimPrefix(n, "/"); strings.HasPrefix(n, NamePrefix) {
				name = n
			}
		}
		if name == "" || c.Labels[LabelManaged] != "true" || c.Labels[LabelTask] == "" ||
			name != ContainerName(c.Labels[LabelTask]) || !time.Unix(c.Created, 0).Before(cutoff) {
			continue
		}
		if err := RemoveContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}
