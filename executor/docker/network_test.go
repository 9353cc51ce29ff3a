//go:build linux

package docker_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/executor/docker"
	"github.com/cmdgate/cmdgate/internal/testenv"
)

// serve accepts TCP connections on addr ("IP:0") of the host, answering each with a
// token and closing it; it returns the port and the token.
func serve(t *testing.T, addr string) (int, string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var b [6]byte
	rand.Read(b[:])
	token := "cmdgate-probe-" + hex.EncodeToString(b[:])
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(token))
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, token
}

// target is a host and a port to reach, as bash's /dev/tcp names them.
type target struct {
	Host string // an address; an IPv6 link-local one with its zone ("fe80::1%eth0")
	Port int
}

func (t target) String() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// reach tries every target from the container at once (bash's /dev/tcp, 3 s each) and
// says what came back from each: "open " and what the listener wrote, "refused" (the
// host answered that nothing listens: the packets got there), "timeout" (nothing came
// back: they were dropped) or "error " and the message.
func reach(t *testing.T, e *docker.Executor, targets ...target) map[target]string {
	t.Helper()
	var script strings.Builder
	script.WriteString(`p() {
  out=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && head -c 100 <&3' "$1" "$2" 2>&1); rc=$?
  out=$(printf %s "$out" | tr '\n' ' ')
  if [ $rc = 124 ]; then r=timeout
  elif [ $rc = 0 ]; then r="open $out"
  else case $out in *refused*) r=refused;; *) r="error $out";; esac
  fi
  printf '%s %s|%s\n' "$1" "$2" "$r"
}
`)
	for _, tg := range targets {
		fmt.Fprintf(&script, "p %s %d &\n", executor.QuotePOSIX([]string{tg.Host}), tg.Port)
	}
	script.WriteString("wait\n")
	res := run(t, e, script.String())
	got := map[target]string{}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "|")
		h, p, _ := strings.Cut(k, " ")
		port, _ := strconv.Atoi(p)
		got[target{h, port}] = v
	}
	if len(got) != len(targets) {
		t.Fatalf("probes: %q, %q", res.Stdout, res.Stderr)
	}
	return got
}

// dialFromHost reads what a listener at tg answers the host (the test's process).
func dialFromHost(tg target) string {
	c, err := net.DialTimeout("tcp", tg.String(), 3*time.Second)
	if err != nil {
		return "error " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	b := make([]byte, 100)
	n, _ := c.Read(b)
	return "open " + string(b[:n])
}

// localEngine skips the test (fails under CI=true) when the engine does not run on
// this machine: the test changes this machine's network and expects the engine's
// containers to see it.
func localEngine(t *testing.T) {
	t.Helper()
	if h := os.Getenv("DOCKER_HOST"); h != "" && !strings.HasPrefix(h, "unix://") {
		testenv.Skip(t, "the engine (DOCKER_HOST=%s) may run elsewhere: this test changes this machine's network", h)
	}
	if os.Geteuid() != 0 {
		testenv.Skip(t, "changing the host's network needs root")
	}
}

// ipCmd runs ip (iproute2) on the host, failing the test when it fails.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	ip := testenv.NeedCommand(t, "ip")
	if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func suffix() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// gateway is the host's address on a task's network.
func gateway(t *testing.T, cli *client.Client, task string) netip.Addr {
	t.Helper()
	insp, err := cli.NetworkInspect(context.Background(), docker.NetworkName(task), client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range insp.Network.IPAM.Config {
		if c.Gateway.Is4() {
			return c.Gateway
		}
	}
	t.Fatalf("network %s has no IPv4 gateway: %+v", docker.NetworkName(task), insp.Network.IPAM)
	return netip.Addr{}
}

// defaultBridgeGateway is the host's address on Docker's default bridge: the gateway
// of its IPAM configuration or, where the engine records none (Docker 20.10 on a
// first start: only the subnet), the IPv4 address of the bridge's interface.
func defaultBridgeGateway(t *testing.T, cli *client.Client) netip.Addr {
	t.Helper()
	def, err := cli.NetworkInspect(context.Background(), "bridge", client.NetworkInspectOptions{})
	if err != nil {
		t.Fatalf("Docker's default bridge: %v", err)
	}
	for _, c := range def.Network.IPAM.Config {
		if c.Gateway.Is4() {
			return c.Gateway
		}
	}
	name := def.Network.Options["com.docker.network.bridge.name"]
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("Docker's default bridge has no gateway in %+v, and its interface %q: %v", def.Network.IPAM, name, err)
	}
	as, _ := ifc.Addrs()
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return p.Addr()
		}
	}
	t.Fatalf("Docker's default bridge %s has no IPv4 address", name)
	return netip.Addr{}
}

// containerIP is a container's IPv4 address on its one network.
func containerIP(t *testing.T, cli *client.Client, id string) string {
	t.Helper()
	insp, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range insp.Container.NetworkSettings.Networks {
		if n.IPAddress.IsValid() {
			return n.IPAddress.String()
		}
	}
	t.Fatalf("container %s has no address", id)
	return ""
}

// A task container reaches none of the host's services: a listener of the host on
// every address is reachable from the host itself and from a container of Docker's
// default bridge, and from the task container neither through its network's gateway
// nor through any other address of the host (IPv6 ones too, link-local included, when
// the container has IPv6), nor on the host's loopback; the engine's socket is not in
// the container and its TCP ports are dropped too.
func TestNetworkGuardHostServices(t *testing.T) {
	t.Parallel()
	localEngine(t)
	cli := testenv.DockerEngine(t)
	task := taskID()
	_, e := taskContainer(t, cli, docker.ContainerSpec{TaskID: task})
	control, _, _ := newExecutor(t) // Docker's default bridge, no guard
	port, token := serve(t, ":0")
	loPort, loToken := serve(t, "127.0.0.1:0")

	gw := gateway(t, cli, task)
	hosts := []string{gw.String()}
	v6 := strings.TrimSpace(run(t, e, `grep -c . /proc/net/if_inet6 || true`).Stdout) != "0"
	if !v6 {
		t.Log("the task container has no IPv6 address: the host's IPv6 addresses are not tried")
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	bridge := interfaceOf(t, gw)
	for _, ifc := range ifs {
		// Interfaces named cg* are other tests' and tasks', which come and go.
		if strings.HasPrefix(ifc.Name, "cg") && ifc.Name != bridge {
			continue
		}
		as, _ := ifc.Addrs()
		for _, a := range as {
			p, err := netip.ParsePrefix(a.String())
			switch {
			case err != nil || p.Addr().IsLoopback() || p.Addr() == gw || p.Addr().Is6() && !v6:
			case p.Addr().IsLinkLocalUnicast() && p.Addr().Is6() && ifc.Name == bridge:
				// The host on the task's link, from the container's eth0.
				hosts = append(hosts, p.Addr().String()+"%eth0")
			case !p.Addr().IsLinkLocalUnicast():
				hosts = append(hosts, p.Addr().String())
			}
		}
	}
	t.Logf("the host's addresses tried: %v", hosts)

	var listener, dropped []target
	for _, h := range hosts {
		listener = append(listener, target{h, port})
		// The engine's TCP ports: a reachable host would refuse, these must time out.
		dropped = append(dropped, target{h, port}, target{h, 2375}, target{h, 2376})
	}
	dropped = append(dropped, target{gw.String(), loPort})
	if u, err := url.Parse(os.Getenv("DOCKER_HOST")); err == nil && u.Scheme == "tcp" {
		if p, err := strconv.Atoi(u.Port()); err == nil {
			dropped = append(dropped, target{gw.String(), p})
		}
	}

	// The host reaches its listeners (so that the test can fail), and so does a
	// container Docker does not guard, through its gateway.
	for _, tg := range listener {
		if strings.Contains(tg.Host, "%") {
			continue
		}
		if got := dialFromHost(tg); got != "open "+token {
			t.Fatalf("from the host, %s: %s; want its listener", tg, got)
		}
	}
	if got := dialFromHost(target{"127.0.0.1", loPort}); got != "open "+loToken {
		t.Fatalf("from the host, its loopback listener: %s", got)
	}
	viaDocker0 := target{defaultBridgeGateway(t, cli).String(), port}
	if got := reach(t, control, viaDocker0)[viaDocker0]; got != "open "+token {
		t.Fatalf("from an unguarded container, the host's listener at %s: %s; want open", viaDocker0, got)
	}

	// The container's own loopback is not the host's: the host's 127.0.0.1 listener is
	// not there either.
	own := []target{{"127.0.0.1", loPort}, {"127.0.0.1", port}}
	got := reach(t, e, append(append([]target{}, dropped...), own...)...)
	still := hostAddrs(t)
	for _, tg := range dropped {
		if h, _, _ := strings.Cut(tg.Host, "%"); !still[h] {
			// Another test's network went away meanwhile: its address is no longer the
			// host's, and nothing can be said of it.
			t.Logf("%s left the host during the probe: not judged", h)
			continue
		}
		if got[tg] != "timeout" {
			t.Errorf("from the task container, the host's %s: %s; want timeout (dropped)", tg, got[tg])
		}
	}
	for _, tg := range own {
		if strings.HasPrefix(got[tg], "open") {
			t.Errorf("from the task container, %s: %s; want nothing of the host's", tg, got[tg])
		}
	}
	if res := run(t, e, `ls -d /var/run/docker.sock /run/docker.sock 2>/dev/null; echo end`); res.Stdout != "end\n" {
		t.Errorf("the engine's socket in the task container: %q", res.Stdout)
	}
}

// interfaceOf is the host's interface holding addr.
func interfaceOf(t *testing.T, addr netip.Addr) string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		as, _ := ifc.Addrs()
		for _, a := range as {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return ifc.Name
			}
		}
	}
	t.Fatalf("no interface of the host holds %s", addr)
	return ""
}

// The link-local metadata addresses are out of reach: 169.254.169.254 on an interface
// of the host (a dummy), and 169.254.170.2 behind the host, in a namespace of its own
// reached by forwarding as a cloud's metadata server is. Each is reachable from the
// host and from a container of Docker's default bridge, not from the task container.
func TestNetworkGuardLinkLocal(t *testing.T) {
	t.Parallel()
	localEngine(t)
	cli := testenv.DockerEngine(t)
	_, e := taskContainer(t, cli, docker.ContainerSpec{})
	control, _, _ := newExecutor(t)

	dummy := "cgd" + suffix()
	if err := exec.Command("ip", "link", "add", dummy, "type", "dummy").Run(); err != nil {
		// A kernel without the dummy driver: a bridge without ports holds an address
		// as well.
		ipCmd(t, "link", "add", dummy, "type", "bridge")
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", dummy).Run() })
	ipCmd(t, "addr", "add", "169.254.169.254/32", "dev", dummy)
	ipCmd(t, "link", "set", dummy, "up")
	port, token := serve(t, "169.254.169.254:0")
	onHost := target{"169.254.169.254", port}

	// Nothing listens in the namespace: reaching it is being refused, not timing out.
	metadata := netip.MustParseAddr("169.254.170.2")
	forwardedNamespace(t, metadata)
	forwarded := target{metadata.String(), 80}

	if got := dialFromHost(onHost); got != "open "+token {
		t.Fatalf("from the host, %s: %s", onHost, got)
	}
	if got := dialFromHost(forwarded); !strings.Contains(got, "refused") {
		t.Fatalf("from the host, %s: %s; want refused (reached, nothing listening)", forwarded, got)
	}
	if got := reach(t, control, onHost, forwarded); got[onHost] != "open "+token || got[forwarded] != "refused" {
		t.Fatalf("from an unguarded container: %v", got)
	}
	got := reach(t, e, onHost, forwarded)
	for _, tg := range []target{onHost, forwarded} {
		if got[tg] != "timeout" {
			t.Errorf("from the task container, %s: %s; want timeout (dropped)", tg, got[tg])
		}
	}
}

// forwardedNamespace gives addr to the loopback of a network namespace of its own,
// joined to the host by a veth pair on a link-local /30 and routed from the host: a
// server the host reaches by forwarding. It is removed when the test ends.
func forwardedNamespace(t *testing.T, addr netip.Addr) {
	t.Helper()
	unshare := testenv.NeedCommand(t, "unshare")
	nsenter := testenv.NeedCommand(t, "nsenter")
	holder := exec.Command(unshare, "--net", "--", "sleep", "3600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	pid := strconv.Itoa(holder.Process.Pid)
	mine, _ := os.Readlink("/proc/self/ns/net")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if theirs, err := os.Readlink("/proc/" + pid + "/ns/net"); err == nil && theirs != mine {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the namespace was not created within 10 s")
		}
	}
	var r [2]byte
	rand.Read(r[:])
	base := netip.AddrFrom4([4]byte{169, 254, 100 + r[0]%50, r[1] & 0xfc})
	hostAddr, nsAddr := base.Next(), base.Next().Next()
	s := suffix()
	hostEnd, nsEnd := "cgmh"+s, "cgmo"+s
	inside := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(nsenter, append([]string{"-t", pid, "-n", "ip"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s in the namespace: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ipCmd(t, "link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd, "netns", pid)
	t.Cleanup(func() { exec.Command("ip", "link", "del", hostEnd).Run() })
	ipCmd(t, "addr", "add", hostAddr.String()+"/30", "dev", hostEnd)
	ipCmd(t, "link", "set", hostEnd, "up")
	inside("addr", "add", nsAddr.String()+"/30", "dev", nsEnd)
	inside("addr", "add", addr.String()+"/32", "dev", "lo")
	inside("link", "set", nsEnd, "up")
	inside("link", "set", "lo", "up")
	inside("route", "add", "default", "via", hostAddr.String())
	ipCmd(t, "route", "add", addr.String()+"/32", "via", nsAddr.String())
}

// The outside world is reachable from a task container (package installs): a listener
// in a namespace the host routes to, and names resolve; with the network "none" it is
// not, and the container has no interface but lo.
func TestNetworkExternalAndNone(t *testing.T) {
	t.Parallel()
	localEngine(t)
	cli := testenv.DockerEngine(t)
	out := testenv.NewOutside(t)
	ln := out.Listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("outside"))
			c.Close()
		}
	}()
	tg := target{out.Addr.String(), ln.Addr().(*net.TCPAddr).Port}
	_, ext := taskContainer(t, cli, docker.ContainerSpec{})
	_, none := taskContainer(t, cli, docker.ContainerSpec{Network: docker.NetworkNone})
	if got := reach(t, ext, tg)[tg]; got != "open outside" {
		t.Errorf("from a task container, the outside %s: %s; want open", tg, got)
	}
	// Docker's DNS answers in the task's namespace: a name the host resolves, the task
	// resolves too.
	if _, err := net.LookupHost("deb.debian.org"); err != nil {
		t.Logf("the host resolves no name (%v): the task's DNS is not tried", err)
	} else if res := run(t, ext, `getent hosts deb.debian.org >/dev/null && echo resolved`); res.Stdout != "resolved\n" {
		t.Errorf("the task container resolves no name: %+v", res)
	}
	if got := reach(t, none, tg)[tg]; strings.HasPrefix(got, "open") {
		t.Errorf("from a task container without network, the outside %s: %s", tg, got)
	}
	if res := run(t, none, `ls /sys/class/net`); res.Stdout != "lo\n" {
		t.Errorf("interfaces without network: %q; want lo only", res.Stdout)
	}
}

// Two tasks' containers cannot reach each other: each one's packets to the other are
// dropped (a reachable container would refuse the connection), while the outside
// world answers them.
func TestNetworkTasksIsolated(t *testing.T) {
	t.Parallel()
	localEngine(t)
	cli := testenv.DockerEngine(t)
	out := testenv.NewOutside(t)
	idA, a := taskContainer(t, cli, docker.ContainerSpec{})
	idB, b := taskContainer(t, cli, docker.ContainerSpec{})
	toB, toA := target{containerIP(t, cli, idB), 8080}, target{containerIP(t, cli, idA), 8080}
	closed := target{out.Addr.String(), 9} // nothing listens there: refused
	gotA, gotB := reach(t, a, toB, closed), reach(t, b, toA, closed)
	if gotA[closed] != "refused" || gotB[closed] != "refused" {
		t.Fatalf("a closed port of the outside world: %v, %v; want refused", gotA, gotB)
	}
	if gotA[toB] != "timeout" || gotB[toA] != "timeout" {
		t.Errorf("task A to task B: %s; B to A: %s; want timeout (dropped)", gotA[toB], gotB[toA])
	}
}

// hostAddrs are the host's addresses now.
func hostAddrs(t *testing.T) map[string]bool {
	t.Helper()
	as, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().String()] = true
		}
	}
	return out
}

// hostRules lists the rules of the engine host's filter and raw tables (IPv4 and IPv6, every
// iptables backend) that carry comment, through a container of the test image in the
// host's network namespace, as the guard reads them.
func hostRules(t *testing.T, cli *client.Client, comment string) []string {
	t.Helper()
	ctx := context.Background()
	// Legacy tables are listed only when the kernel has them (listing loads them).
	script := `l=; [ -s /proc/net/ip_tables_names ] && l=iptables-legacy; [ -s /proc/net/ip6_tables_names ] && l="$l ip6tables-legacy"
for c in iptables-nft ip6tables-nft $l; do for t in filter raw; do $c -t $t -S 2>/dev/null | sed "s/^/$c $t /"; done; done`
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: testenv.DockerImage(), User: "0", Entrypoint: []string{"sh", "-c", script},
			Labels: map[string]string{"cmdgate.test": t.Name()}},
		HostConfig: &container.HostConfig{NetworkMode: "host", CapDrop: []string{"ALL"}, CapAdd: []string{"NET_ADMIN", "NET_RAW"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	w := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{})
	select {
	case r := <-w.Result:
		if r.StatusCode != 0 {
			t.Fatalf("listing the host's rules: status %d", r.StatusCode)
		}
	case err := <-w.Error:
		t.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, c.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var out strings.Builder
	if _, err := stdcopy.StdCopy(&out, io.Discard, logs); err != nil {
		t.Fatal(err)
	}
	var rules []string
	for l := range strings.Lines(out.String()) {
		if l = strings.TrimSpace(l); strings.Contains(l+" ", " --comment "+comment+" ") {
			rules = append(rules, l)
		}
	}
	return rules
}

// A task's guard installs its rules (INPUT and forwarding, IPv4 and IPv6 when the host
// has it) and RemoveTask removes every rule carrying the task's comment, the network
// and the container; removing again succeeds.
func TestRemoveTaskLeavesNothing(t *testing.T) {
	t.Parallel()
	cli := testenv.DockerEngine(t)
	ctx := context.Background()
	task := taskID()
	id, _ := taskContainer(t, cli, docker.ContainerSpec{TaskID: task})
	rules := hostRules(t, cli, docker.NetworkName(task))
	var input, forward, raw bool
	for _, r := range rules {
		input = input || strings.Contains(r, "-A INPUT -i cgt") && strings.HasSuffix(r, "-j DROP")
		forward = forward || strings.Contains(r, "-A FORWARD ") && strings.Contains(r, "-i cgt") && strings.Contains(r, "-d 169.254.0.0/16") && strings.HasSuffix(r, "-j DROP")
		raw = raw || strings.Contains(r, " raw -A PREROUTING -i cgt") && strings.Contains(r, "--dst-type LOCAL") && strings.HasSuffix(r, "-j DROP")
	}
	if !input || !forward || !raw {
		t.Fatalf("the task's rules on the host:\n%s", strings.Join(rules, "\n"))
	}
	t.Logf("the guard's rules:\n%s", strings.Join(rules, "\n"))
	if err := docker.RemoveTask(ctx, cli, task); err != nil {
		t.Fatal(err)
	}
	if left := hostRules(t, cli, docker.NetworkName(task)); len(left) > 0 {
		t.Errorf("rules left after RemoveTask:\n%s", strings.Join(left, "\n"))
	}
	if _, err := cli.NetworkInspect(ctx, docker.NetworkName(task), client.NetworkInspectOptions{}); err == nil {
		t.Errorf("network %s left after RemoveTask", docker.NetworkName(task))
	}
	if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("container %s left after RemoveTask", id)
	}
	if err := docker.RemoveTask(ctx, cli, task); err != nil {
		t.Errorf("removing a removed task: %v", err)
	}
	if guards := guardContainers(t, cli, task); len(guards) > 0 {
		t.Errorf("guard containers left: %v", guards)
	}
}

// guardContainers lists the guard containers of a task.
func guardContainers(t *testing.T, cli *client.Client, task string) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelGuard+"="+task)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// noIptablesImage commits a container of the test image whose iptables programs were
// deleted, removed at the end.
func noIptablesImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	ctx := context.Background()
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: testenv.DockerImage(), User: "0", Labels: map[string]string{"cmdgate.test": t.Name()},
			Entrypoint: []string{"sh", "-c", `rm -f /usr/sbin/iptables* /usr/sbin/ip6tables* /usr/sbin/xtables* && ! command -v iptables`}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	w := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{})
	select {
	case r := <-w.Result:
		if r.StatusCode != 0 {
			t.Fatalf("deleting iptables from the image: status %d", r.StatusCode)
		}
	case err := <-w.Error:
		t.Fatal(err)
	}
	ref := "cmdgate-test-no-iptables:" + suffix()
	if _, err := cli.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{Reference: ref,
		Changes: []string{"USER agent", `ENTRYPOINT []`, "LABEL cmdgate.test=" + t.Name()}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true}) })
	return ref
}

// A task whose guard cannot install its rules (here, an image without iptables) does
// not start: CreateContainer says why and leaves no container, no network, no guard.
func TestGuardFailsClosed(t *testing.T) {
	t.Parallel()
	cli := testenv.DockerEngine(t)
	ctx := context.Background()
	image := noIptablesImage(t, cli)
	task := taskID()
	t.Cleanup(func() { docker.RemoveTask(context.Background(), cli, task) })
	_, err := docker.CreateContainer(ctx, cli, docker.ContainerSpec{TaskID: task, Image: testenv.DockerImage(), GuardImage: image,
		Labels: map[string]string{"cmdgate.test": t.Name()}})
	if err == nil || !strings.Contains(err.Error(), "no iptables") || !strings.Contains(err.Error(), "cannot be guarded") {
		t.Fatalf("CreateContainer with a guard image without iptables: %v; want a clear refusal", err)
	}
	t.Logf("refusal: %v", err)
	if _, err := cli.ContainerInspect(ctx, docker.ContainerName(task), client.ContainerInspectOptions{}); err == nil {
		t.Errorf("container %s left", docker.ContainerName(task))
	}
	if _, err := cli.NetworkInspect(ctx, docker.NetworkName(task), client.NetworkInspectOptions{}); err == nil {
		t.Errorf("network %s left", docker.NetworkName(task))
	}
	if guards := guardContainers(t, cli, task); len(guards) > 0 {
		t.Errorf("guard containers left: %v", guards)
	}
	// A guard image that does not exist is refused as clearly.
	_, err = docker.CreateContainer(ctx, cli, docker.ContainerSpec{TaskID: task, Image: testenv.DockerImage(), GuardImage: "cmdgate-test-no-such-image:" + suffix(),
		Labels: map[string]string{"cmdgate.test": t.Name()}})
	if err == nil || !strings.Contains(err.Error(), "no-such-image") {
		t.Errorf("CreateContainer with a missing guard image: %v", err)
	}
	if _, err := cli.NetworkInspect(ctx, docker.NetworkName(task), client.NetworkInspectOptions{}); err == nil {
		t.Errorf("network %s left", docker.NetworkName(task))
	}
}

// Network modes other than external and none are refused before anything is made
// (no engine: the client is nil), the allowlist as not available yet; so are task ids
// that cannot name a container and a network.
func TestNetworkModeRefused(t *testing.T) {
	t.Parallel()
	for mode, want := range map[string]string{
		"allowlist": "not available yet",
		"bridge":    "want external or none",
		"host":      "want external or none",
	} {
		_, err := docker.CreateContainer(context.Background(), nil, docker.ContainerSpec{TaskID: taskID(), Network: mode})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CreateContainer(network %q) = %v; want an error saying %q", mode, err, want)
		}
	}
	for _, id := range []string{"", "a/b", "a b", "-x", strings.Repeat("x", 200)} {
		if err := docker.RemoveTask(context.Background(), nil, id); err == nil {
			t.Errorf("RemoveTask(%q) = nil; want a refused task id", id)
		}
	}
}

// Reaping removes the networks and rules of the tasks whose containers it reaps, and a
// stale task network no container uses; never a network without cmdgate's labels, even
// named like a task's, which RemoveTask refuses too.
func TestReapNetworks(t *testing.T) {
	t.Parallel()
	cli := testenv.DockerEngine(t)
	ctx := context.Background()
	reaped := taskID()
	taskContainer(t, cli, docker.ContainerSpec{TaskID: reaped})
	orphan := taskID()
	orphanID, _ := taskContainer(t, cli, docker.ContainerSpec{TaskID: orphan})
	if err := docker.RemoveContainer(ctx, cli, orphanID); err != nil { // its network and rules stay
		t.Fatal(err)
	}
	foreign := taskID()
	fn, err := cli.NetworkCreate(ctx, docker.NetworkName(foreign), client.NetworkCreateOptions{Driver: "bridge",
		Labels: map[string]string{"cmdgate.test": t.Name(), docker.LabelTask: foreign}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.NetworkRemove(context.Background(), fn.ID, client.NetworkRemoveOptions{}) })
	if err := docker.RemoveTask(ctx, cli, foreign); err == nil || !strings.Contains(err.Error(), "not cmdgate's") {
		t.Errorf("RemoveTask of a task whose network is not cmdgate's: %v", err)
	}

	only := map[string]string{"cmdgate.test": t.Name()}
	if _, err := docker.Reap(ctx, cli, time.Now().Add(-time.Hour), only); err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{reaped, orphan} {
		if _, err := cli.NetworkInspect(ctx, docker.NetworkName(task), client.NetworkInspectOptions{}); err != nil {
			t.Fatalf("reaping what is an hour old removed network %s: %v", docker.NetworkName(task), err)
		}
	}
	removed, err := docker.Reap(ctx, cli, time.Now().Add(time.Minute), only)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != docker.ContainerName(reaped) {
		t.Errorf("reaped %v; want [%s]", removed, docker.ContainerName(reaped))
	}
	for _, task := range []string{reaped, orphan} {
		if _, err := cli.NetworkInspect(ctx, docker.NetworkName(task), client.NetworkInspectOptions{}); err == nil {
			t.Errorf("network %s survived the reaping", docker.NetworkName(task))
		}
		if left := hostRules(t, cli, docker.NetworkName(task)); len(left) > 0 {
			t.Errorf("rules of task %s survived the reaping:\n%s", task, strings.Join(left, "\n"))
		}
	}
	if _, err := cli.NetworkInspect(ctx, fn.ID, client.NetworkInspectOptions{}); err != nil {
		t.Errorf("the foreign network was touched: %v", err)
	}
}
