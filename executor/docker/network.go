package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The network of a task (seed 001 sections 3.5 and 9.4): the outside world, for package
// installs, but never the host's own services nor the link-local metadata addresses.
// Each task with the network has a bridge of its own, named NetworkName(task), whose
// host interface has a name derived from the task's id; a short-lived guard container
// in the host's network namespace inserts iptables rules, each commented with the
// network's name, that drop what the bridge sends to the host and what it sends to the
// link-local, loopback and metadata ranges. Everything goes through the Engine API, so
// that it works with an engine elsewhere (DOCKER_HOST).
//
// Ordering: the network is made before its rules and removed after them, and the rules
// before the task's container and removed after it: a container never runs on a
// network without its guard, and a network that exists is what says rules may be left
// (RemoveTask and Reap start from the networks).

// Network modes of a task (ContainerSpec.Network).
const (
	// NetworkExternal is the task's own guarded network: the outside world, not the
	// host. It is the default.
	NetworkExternal = "external"
	// NetworkNone is no network at all: only the loopback interface.
	NetworkNone = "none"
	// networkAllowlist is the domain allowlist mode, not available yet.
	networkAllowlist = "allowlist"
)

// NetworkPrefix is the start of every task network's name.
const NetworkPrefix = "cmdgate-task-"

// LabelGuard marks the guard containers; its value is the task's id.
const LabelGuard = "cmdgate.guard"

// labelGuardImage, on a task network, is the image its rules were installed with, the
// one that removes them.
const labelGuardImage = "cmdgate.guard.image"

// errInUse says a task network still has a container: its rules and itself are kept.
var errInUse = errors.New("a container still uses it: its rules and itself are kept")

// guardTimeout bounds one run of the guard container.
const guardTimeout = time.Minute

// The guard's exit statuses beyond 0: it failed and left no rule of the task
// (guardClean), or it may have left some (any other status).
const guardClean = 10

// NetworkName is the name of a task's network; it is also the comment of every guard
// rule of the task.
func NetworkName(taskID string) string { return NetworkPrefix + taskID }

// bridgeName is the host interface of a task's bridge: deterministic, so that the rules
// name it before a container exists, and at most 15 bytes (IFNAMSIZ - 1).
func bridgeName(taskID string) string {
	h := sha256.Sum256([]byte(taskID))
	return "cgt" + hex.EncodeToString(h[:6])
}

// guardScript installs or removes a task's rules on the host, run by sh in the guard
// container: $1 is install or remove, $2 the comment (the network's name, of
// [A-Za-z0-9_.-] only), $3 the bridge's interface.
//
// It uses the iptables backend whose filter table has Docker's chain (nf_tables, or
// legacy when the kernel has legacy tables), plain iptables when neither has; rules are
// inserted in the raw table's PREROUTING and at the top of INPUT and FORWARD (see
// guard in the script). The same is done with ip6tables when the host has IPv6.
// Installing first removes the rules an earlier attempt left; a failed install removes
// what it inserted and exits 10, or 11 when that failed too. Removing deletes every
// rule of the filter and raw tables that carries the comment, and nothing else; no
// rule is success.
const guardScript = `PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
action=$1 comment=$2 iface=$3
ipt=
for c in iptables-nft iptables-legacy; do
  # Listing legacy tables loads them: only when the kernel has some already.
  if [ "$c" = iptables-legacy ] && ! [ -s /proc/net/ip_tables_names ]; then
    continue
  fi
  if command -v "$c" >/dev/null 2>&1 && "$c" -S 2>/dev/null | grep -qx -- '-N DOCKER'; then
    ipt=$c
    break
  fi
done
if [ -z "$ipt" ]; then
  if ! command -v iptables >/dev/null 2>&1; then
    echo "the guard image has no iptables (install the iptables package in it)" >&2
    exit 10
  fi
  ipt=iptables
fi
ip6t=
if [ -e /proc/net/if_inet6 ]; then
  ip6t=ip6${ipt#ip}
  if ! command -v "$ip6t" >/dev/null 2>&1; then
    echo "the host has IPv6 but the guard image has no $ip6t" >&2
    exit 10
  fi
fi

# unguard IPT deletes every rule of the filter and raw tables commented $comment.
unguard() {
  for t in filter raw; do
    rules=$("$1" -t "$t" -S) || return 1
    while IFS= read -r rule; do
      case "$rule " in
      "-A "*" --comment $comment "*) ;;
      *) continue ;;
      esac
      set -f
      # shellcheck disable=SC2086 # the rule's words, as -S wrote them
      "$1" -t "$t" -D ${rule#-A } || return 1
      set +f
    done <<EOF
$rules
EOF
  done
}

# guard IPT RANGES drops what the bridge sends to the host and to RANGES, twice: in
# the raw table's PREROUTING, before routing and address translation (a host address
# of any kind, a published port included), and at the top of the filter table's INPUT
# and FORWARD (what was translated to another address: a published port). Docker
# rewrites its own FORWARD rules and the jump to DOCKER-USER whenever a network comes
# or goes; the raw table and INPUT it leaves alone, and rules at the top of FORWARD
# stay ahead of its ACCEPT rules, which match only their own bridges.
guard() {
  "$1" -t raw -I PREROUTING -i "$iface" -m addrtype --dst-type LOCAL -m comment --comment "$comment" -j DROP || return 1
  "$1" -I INPUT -i "$iface" -m comment --comment "$comment" -j DROP || return 1
  "$1" -I FORWARD -i "$iface" -m conntrack --ctstate DNAT -m comment --comment "$comment" -j DROP || return 1
  for d in $2; do
    "$1" -t raw -I PREROUTING -i "$iface" -d "$d" -m comment --comment "$comment" -j DROP || return 1
    "$1" -I FORWARD -i "$iface" -d "$d" -m comment --comment "$comment" -j DROP || return 1
  done
}

unguardAll() {
  unguard "$ipt" || return 1
  [ -z "$ip6t" ] || unguard "$ip6t"
}

case $action in
remove)
  if ! unguardAll; then
    echo "cannot remove the rules commented $comment with $ipt" >&2
    exit 1
  fi
  ;;
install)
  if ! unguardAll; then
    echo "cannot remove the rules an earlier attempt left with $ipt" >&2
    exit 11
  fi
  if guard "$ipt" "169.254.0.0/16 127.0.0.0/8 0.0.0.0/8 100.100.100.200/32" &&
    { [ -z "$ip6t" ] || guard "$ip6t" "fe80::/10 ::1/128 ::/128 ::ffff:0:0/96 fd00:ec2::254/128"; }; then
    echo "guarded $iface with $ipt${ip6t:+ and $ip6t}"
    exit 0
  fi
  echo "cannot insert the rules of $iface with $ipt${ip6t:+ and $ip6t}" >&2
  unguardAll && exit 10
  exit 11
  ;;
*)
  echo "unknown action $action" >&2
  exit 10
  ;;
esac`

// guardError is a failed run of the guard: Clean says it left no rule of the task.
type guardError struct {
	Clean bool
	Err   error
}

func (e *guardError) Error() string { return e.Err.Error() }
func (e *guardError) Unwrap() error { return e.Err }

// runGuard runs guardScript with action for a task in a guard container of image on
// the engine's host (its network namespace, as root with NET_ADMIN and NET_RAW only),
// and removes the container. A failure is a *guardError with the script's output.
func runGuard(ctx context.Context, cli *client.Client, image, taskID, action string, extra map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, guardTimeout)
	defer cancel()
	l := map[string]string{}
	for k, v := range extra {
		l[k] = v
	}
	delete(l, LabelTask) // a guard is no task container
	l[LabelManaged], l[LabelGuard] = "true", taskID
	pids := int64(64)
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: image, User: "0", Labels: l,
			Entrypoint: []string{"/bin/sh", "-c", guardScript, "cmdgate-guard"},
			Cmd:        []string{action, NetworkName(taskID), bridgeName(taskID)},
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    "host",
			UsernsMode:     "host", // an engine remapping users refuses the host's network otherwise
			CapDrop:        []string{"ALL"},
			CapAdd:         []string{"NET_ADMIN", "NET_RAW"},
			SecurityOpt:    []string{"no-new-privileges"},
			ReadonlyRootfs: true,
			Tmpfs:          map[string]string{"/run": "rw,nosuid,nodev,size=1m", "/tmp": "rw,nosuid,nodev,size=16m"},
			LogConfig:      container.LogConfig{Type: "json-file"}, // its output is read back
			Resources:      container.Resources{Memory: 256 << 20, PidsLimit: &pids},
		},
	})
	if err != nil {
		return &guardError{Clean: true, Err: fmt.Errorf("create the guard container of image %s: %w", image, err)}
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		cli.ContainerRemove(rctx, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}()
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return &guardError{Clean: true, Err: fmt.Errorf("start the guard container of image %s: %w", image, err)}
	}
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var code int64
	select {
	case res := <-wait.Result:
		if res.Error != nil {
			return &guardError{Err: fmt.Errorf("wait for the guard container: %s", res.Error.Message)}
		}
		code = res.StatusCode
	case err := <-wait.Error:
		return &guardError{Err: fmt.Errorf("wait for the guard container: %w", err)}
	}
	out := guardOutput(ctx, cli, created.ID)
	if code == 0 {
		return nil
	}
	return &guardError{Clean: code == guardClean,
		Err: fmt.Errorf("the guard (image %s) failed with status %d: %s", image, code, out)}
}

// guardOutput is what the guard container wrote, on one line.
func guardOutput(ctx context.Context, cli *client.Client, id string) string {
	logs, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return fmt.Sprintf("(its output cannot be read: %v)", err)
	}
	defer logs.Close()
	var b bytes.Buffer
	stdcopy.StdCopy(&b, &b, logs)
	s := strings.Join(strings.Fields(b.String()), " ")
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	if s == "" {
		s = "(no output)"
	}
	return s
}

// createNetwork makes a task's guarded network: the bridge, then its rules. When the
// rules cannot be made it removes what it made and says why.
func createNetwork(ctx context.Context, cli *client.Client, spec ContainerSpec) error {
	name := NetworkName(spec.TaskID)
	l := labels(spec)
	l[labelGuardImage] = spec.GuardImage
	_, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge",
		Options: map[string]string{
			"com.docker.network.bridge.name":       bridgeName(spec.TaskID),
			"com.docker.network.bridge.enable_icc": "false",
		},
		Labels: l,
	})
	if err != nil {
		return fmt.Errorf("create network %s: %w", name, err)
	}
	err = runGuard(ctx, cli, spec.GuardImage, spec.TaskID, "install", spec.Labels)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("guard network %s (a task that cannot be guarded does not start): %w", name, err)
	rctx := context.WithoutCancel(ctx)
	if ge := (*guardError)(nil); errors.As(err, &ge) && ge.Clean {
		// No rule is left: the network goes, whatever the guard image can do.
		if rerr := removeBridge(rctx, cli, name); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	if rerr := removeNetwork(rctx, cli, spec.TaskID); rerr != nil {
		return errors.Join(err, fmt.Errorf("the network and its rules are left for RemoveTask or Reap: %w", rerr))
	}
	return err
}

// removeNetwork removes a task's rules, then its network; none is removed already. It
// refuses a network named like a task's that is not cmdgate's, and one that a container
// still uses (it would lose its guard).
func removeNetwork(ctx context.Context, cli *client.Client, taskID string) error {
	name := NetworkName(taskID)
	insp, err := cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect network %s: %w", name, err)
	}
	n := insp.Network
	if n.Name != name || n.Labels[LabelManaged] != "true" || n.Labels[LabelTask] != taskID {
		return fmt.Errorf("network %s is not cmdgate's (no labels %s=true, %s=%s): left as it is", name, LabelManaged, LabelTask, taskID)
	}
	if len(n.Containers) > 0 {
		return fmt.Errorf("network %s: %w", name, errInUse)
	}
	image := n.Labels[labelGuardImage]
	if image == "" {
		image = DefaultImage
	}
	var errs []error
	for attempt := range removeAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		err := runGuard(ctx, cli, image, taskID, "remove", guardLabels(n.Labels))
		if err == nil {
			return removeBridge(ctx, cli, n.ID)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("remove the rules of network %s (the network is kept until they are): %w", name, errors.Join(errs...))
}

// guardLabels are the labels of a network that its guard containers carry too: the
// task's own (ContainerSpec.Labels), not those cmdgate sets.
func guardLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if k != LabelManaged && k != LabelTask && k != labelGuardImage {
			out[k] = v
		}
	}
	return out
}

// removeBridge removes a network, trying up to three times; one that does not exist
// is removed already.
func removeBridge(ctx context.Context, cli *client.Client, idOrName string) error {
	var errs []error
	for attempt := range removeAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		_, err := cli.NetworkRemove(ctx, idOrName, client.NetworkRemoveOptions{})
		if err == nil || isNotFound(err) {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("remove network %s: %w", idOrName, errors.Join(errs...))
}

// RemoveTask removes what a task has on the engine: its container (as
// RemoveContainer), then its network's guard rules, then its network. What is gone
// already is removed; when the container cannot be removed, the rules and the network
// are kept (the container still uses them), and when the rules cannot, the network is
// (it is what leads RemoveTask and Reap back to them).
func RemoveTask(ctx context.Context, cli *client.Client, taskID string) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	if err := RemoveContainer(ctx, cli, ContainerName(taskID)); err != nil {
		return fmt.Errorf("remove task %s: %w", taskID, err)
	}
	if err := removeNetwork(ctx, cli, taskID); err != nil {
		return fmt.Errorf("remove task %s: %w", taskID, err)
	}
	return nil
}
