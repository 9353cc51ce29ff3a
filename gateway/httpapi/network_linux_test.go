package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cmdgate/cmdgate/gateway"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// countingServer is an HTTP server on ln that answers 404 to everything and counts the
// requests it got.
func countingServer(t *testing.T, ln net.Listener) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &n
}

// A dependency install is granted the network by the default policy, and it gets the
// outside world only: pointed at a registry on the host (its loopback, the gateway's
// own port, any of the host's addresses) it reaches nothing; pointed at a registry
// outside (a network namespace of the test's, behind a veth pair) it does.
func TestNetworkGrantReachesOnlyOutside(t *testing.T) {
	t.Parallel()
	testenv.NeedCommand(t, "npm")
	out := testenv.NewOutside(t)
	env := linuxEnv(t, gateway.SandboxLinux)
	if st := env.srv.SandboxStatus(); st.Linux == nil || st.Linux.Uplink == "" {
		testenv.Skip(t, "the sandbox has no uplink: %v", st.Linux.Unavailable["network"])
	}
	gw, err := url.Parse(env.url)
	if err != nil {
		t.Fatal(err)
	}

	type target struct {
		name     string
		registry string
		requests func() int64
	}
	var host []target
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	loop := countingServer(t, ln)
	host = append(host, target{"host loopback", "http://" + ln.Addr().String() + "/", loop.Load})
	host = append(host, target{"the gateway", "http://" + gw.Host + "/", nil})
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.IP.IsLoopback() {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ipn.IP.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		n := countingServer(t, ln)
		host = append(host, target{"host address " + ipn.IP.String(), "http://" + ln.Addr().String() + "/", n.Load})
	}
	outLn := out.Listen(t)
	outside := countingServer(t, outLn)

	install := func(registry string) (decision string, stderr string) {
		t.Helper()
		cmd := "npm install --no-audit --no-fund --fetch-retries=0 --registry " + registry + " left-pad"
		var res struct {
			Decision string `json:"decision"`
			ExitCode int    `json:"exit_code"`
			Stderr   string `json:"stderr"`
		}
		a := env.exec(env.tokens["agent"], map[string]any{"command": cmd, "timeout_ms": 60000})
		a.decode(t, &res)
		if a.status != 200 {
			t.Fatalf("exec %q = %d %s", cmd, a.status, a.body)
		}
		if res.ExitCode == 0 {
			t.Errorf("%q succeeded: no registry serves left-pad here", cmd)
		}
		return res.Decision, res.Stderr
	}
	for _, h := range host {
		decision, stderr := install(h.registry)
		if decision != "allow" {
			t.Fatalf("npm install from %s: decision %s, want allow (with the network)", h.name, decision)
		}
		if !strings.Contains(stderr, "EACCES") && !strings.Contains(stderr, "ECONNREFUSED") {
			t.Errorf("npm install from %s: stderr %q; want the connection refused (EACCES or ECONNREFUSED)", h.name, stderr)
		}
		if h.requests != nil && h.requests() != 0 {
			t.Errorf("the registry on %s got %d requests from a sandbox granted the network", h.name, h.requests())
		}
	}
	outURL := "http://" + netip.AddrPortFrom(out.Addr, uint16(outLn.Addr().(*net.TCPAddr).Port)).String() + "/"
	if _, stderr := install(outURL); outside.Load() == 0 {
		t.Errorf("the registry outside (%s) got no request: npm said %q", outURL, stderr)
	}
}
