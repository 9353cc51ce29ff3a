package docker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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
// /workspace (a volume of its own) and /tmp (a tmpfs), CPU, memory and pids limits,
// and the task's guarded network or none (network.go).

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
	// Network is NetworkExternal ("" too: the task's own network, to the outside world
	// for package installs but never to the host's services nor the link-local
	// metadata addresses) or NetworkNone (no network). The domain allowlist mode is
	// refused: it is not available yet.
	Network string
	// GuardImage runs the guard that installs and removes the network's rules, as root
	// with NET_ADMIN in the engine host's network namespace: it needs sh, grep and
	// iptables (ip6tables when the host has IPv6). Default DefaultImage, never the
	// task's image, which a task may choose: an image chosen by a task must not run
	// with the host's network in its hands.
	GuardImage string
	// Labels are more labels (cmdgate's own win), on the container, its network and its
	// guard containers.
	Labels map[string]string
}

// taskIDRE is what a task's id may be: it names a container and a network, and
// comments the guard's rules.
var taskIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// checkTaskID refuses a task id that cannot name a container and a network.
func checkTaskID(taskID string) error {
	if !taskIDRE.MatchString(taskID) {
		return fmt.Errorf("task id %q cannot name a container (letters, digits, _ . -, at most 128, not starting with _ . -)", taskID)
	}
	return nil
}

// ContainerName is the name of a task's container.
func ContainerName(taskID string) string { return NamePrefix + taskID }

// CreateContainer creates and starts the container of a task, removing first what an
// earlier attempt of the same task left (RemoveTask; seed 001 section 5.1). With the
// external network, it makes the task's network and its guard rules first (network.go)
// and fails closed: when either cannot be made, it removes what it made and says why,
// and no container starts. It returns the container's id.
func CreateContainer(ctx context.Context, cli *client.Client, spec ContainerSpec) (string, error) {
	if err := checkTaskID(spec.TaskID); err != nil {
		return "", err
	}
	if spec.Image == "" {
		spec.Image = DefaultImage
	}
	if spec.GuardImage == "" {
		spec.GuardImage = DefaultImage
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
	case "", NetworkExternal:
		spec.Network = NetworkExternal
	case NetworkNone:
	case networkAllowlist:
		return "", fmt.Errorf("network %q: the domain allowlist is not available yet (want %s or %s)", spec.Network, NetworkExternal, NetworkNone)
	default:
		return "", fmt.Errorf("network %q: want %s or %s", spec.Network, NetworkExternal, NetworkNone)
	}
	if spec.User == "root" || spec.User == "0" || strings.HasPrefix(spec.User, "0:") || strings.HasPrefix(spec.User, "root:") {
		return "", errors.New("a task container never runs as root")
	}
	name := ContainerName(spec.TaskID)
	if err := RemoveTask(ctx, cli, spec.TaskID); err != nil {
		return "", fmt.Errorf("remove what an earlier attempt of the task left: %w", err)
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
	mode := container.NetworkMode(NetworkNone)
	if spec.Network == NetworkExternal {
		if err := createNetwork(ctx, cli, spec); err != nil {
			return "", err
		}
		mode = container.NetworkMode(NetworkName(spec.TaskID))
	}
	// undo removes what was made when the container cannot run: the container, the
	// rules, the network.
	undo := func(err error) (string, error) {
		if rerr := RemoveTask(context.WithoutCancel(ctx), cli, spec.TaskID); rerr != nil {
			return "", errors.Join(err, rerr)
		}
		return "", err
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
			NetworkMode:    mode,
			Init:           boolPtr(true), // reaps what commands leave behind
			Resources: container.Resources{
				NanoCPUs: int64(spec.CPUs * 1e9), Memory: spec.Memory, MemorySwap: spec.Memory, PidsLimit: &pids,
			},
		},
	})
	if err != nil {
		return undo(fmt.Errorf("create container %s: %w", name, err))
	}
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return undo(fmt.Errorf("start container %s: %w", name, err))
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

// Reap removes what is stale of the tasks, created before cutoff and carrying
// cmdgate's labels (and every label of only, when given), never anything else: the task
// containers with a name of the naming rule, with their networks and guard rules
// (RemoveTask); the task networks no container uses (left by a crash between the
// network and its container); the guard containers (left by a crash during a guard's
// run). It returns the names of the task containers it removed, and the failures.
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
		if c.Labels[LabelManaged] != "true" || !time.Unix(c.Created, 0).Before(cutoff) {
			continue
		}
		if task := c.Labels[LabelGuard]; task != "" && c.Labels[LabelTask] == "" {
			// A guard's rules are the network's: only the container goes.
			if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove the guard container %s of task %s: %w", c.ID, task, err))
			}
			continue
		}
		name := ""
		for _, n := range c.Names {
			if n = strings.TrimPrefix(n, "/"); strings.HasPrefix(n, NamePrefix) {
				name = n
			}
		}
		task := c.Labels[LabelTask]
		if name == "" || task == "" || name != ContainerName(task) {
			continue
		}
		if err := RemoveContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
		if checkTaskID(task) == nil {
			if err := removeNetwork(ctx, cli, task); err != nil {
				errs = append(errs, err)
			}
		}
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list task networks: %w", err))...)
	}
	for _, n := range nets.Items {
		task := n.Labels[LabelTask]
		if n.Labels[LabelManaged] != "true" || task == "" || checkTaskID(task) != nil ||
			n.Name != NetworkName(task) || !n.Created.Before(cutoff) {
			continue
		}
		// A network that a container uses is a live task's, or will be reaped with its
		// container.
		if err := removeNetwork(ctx, cli, task); err != nil && !errors.Is(err, errInUse) {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}
