package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BuildNATSServer builds the nats-server of the module's go.mod into dir
// (once per test binary: call it from TestMain) and returns its path. The
// cluster runs it as real processes so that a node can be frozen
// (SIGSTOP) and killed (SIGKILL) like a machine, which an in-process
// server cannot.
func BuildNATSServer(dir string) (string, error) {
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	bin := filepath.Join(dir, "nats-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build nats-server: %v\n%s", err, out)
	}
	return bin, nil
}

// NATSCluster is a JetStream cluster of nats-server processes on
// loopback, each node with its own store dir, fsyncing every write
// (sync_interval: always) as production should (docs/operations.md).
type NATSCluster struct {
	t     testing.TB
	Name  string
	Nodes []*NATSNode
}

// NATSNode is one server of a cluster.
type NATSNode struct {
	Name        string
	Port        int // clients
	ClusterPort int // routes
	HTTPPort    int // monitoring (/jsz)
	Dir         string
	Proc        *Proc
	t           testing.TB
}

// StartNATSCluster starts size servers of bin (BuildNATSServer), waits
// until they elected a meta leader, and kills them with the test.
func StartNATSCluster(t testing.TB, bin string, size int) *NATSCluster {
	t.Helper()
	var err error
	// A port picked free may be taken before its server binds it: start
	// again on others.
	for attempt := 0; attempt < 3; attempt++ {
		c := &NATSCluster{t: t, Name: "hq"}
		if err = c.start(bin, size, filepath.Join(t.TempDir(), fmt.Sprintf("cluster%d", attempt))); err == nil {
			t.Cleanup(c.kill)
			c.WaitReady(90 * time.Second)
			return c
		}
		c.kill()
	}
	t.Fatalf("nats cluster: %v", err)
	return nil
}

func (c *NATSCluster) start(bin string, size int, dir string) error {
	for i := 0; i < size; i++ {
		n := &NATSNode{t: c.t, Name: fmt.Sprintf("n%d", i+1), Port: FreePort(c.t), ClusterPort: FreePort(c.t),
			HTTPPort: FreePort(c.t), Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))}
		c.Nodes = append(c.Nodes, n)
	}
	routes := make([]string, size)
	for i, n := range c.Nodes {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", n.ClusterPort)
	}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return err
		}
		conf := filepath.Join(n.Dir, "nats.conf")
		// Raft timings are the server's own: the tests see the failover
		// production would.
		body := fmt.Sprintf(`server_name: %s
host: 127.0.0.1
port: %d
http: "127.0.0.1:%d"
max_payload: 1MB
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: %s
  host: 127.0.0.1
  port: %d
  routes: [%s]
}
`, n.Name, n.Port, n.HTTPPort, filepath.Join(n.Dir, "jetstream"), c.Name, n.ClusterPort, strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return err
		}
		n.Proc = &Proc{Name: "nats-server " + n.Name, Args: []string{bin, "-c", conf}, Log: filepath.Join(n.Dir, "nats.log")}
		n.Proc.Start(c.t)
	}
	for _, n := range c.Nodes {
		if err := n.waitListening(30 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (c *NATSCluster) kill() {
	for _, n := range c.Nodes {
		if n.Proc != nil {
			n.Proc.Kill()
		}
	}
}

// URL is the comma-separated client URL list of every node, as
// posedge's hq.nats_url and posedge-hq's nats_url take it.
func (c *NATSCluster) URL() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Node returns the node named name (as in a stream's cluster info).
func (c *NATSCluster) Node(name string) *NATSNode {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	c.t.Fatalf("no node %q in the cluster", name)
	return nil
}

// MetaLeader is the name of the node leading the cluster's meta group
// as a running node sees it, or "" when none is elected.
func (c *NATSCluster) MetaLeader() string {
	for _, n := range c.Nodes {
		if !n.Proc.Running() || n.frozen() {
			continue
		}
		if jz, err := n.jsz(); err == nil && jz.Meta.Leader != "" {
			return jz.Meta.Leader
		}
	}
	return ""
}

// WaitReady waits until a meta leader is elected and every running node
// knows it.
func (c *NATSCluster) WaitReady(d time.Duration) {
	c.t.Helper()
	WaitFor(c.t, d, "the JetStream cluster to elect a meta leader", func() bool {
		leader := ""
		for _, n := range c.Nodes {
			if !n.Proc.Running() || n.frozen() {
				continue
			}
			jz, err := n.jsz()
			if err != nil || jz.Meta.Leader == "" || (leader != "" && jz.Meta.Leader != leader) {
				return false
			}
			leader = jz.Meta.Leader
		}
		return leader != ""
	})
}

// URL is the node's client URL.
func (n *NATSNode) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// Kill kills the node's process (SIGKILL): a machine losing power. The
// process group is thawed first so that a frozen node dies too.
func (n *NATSNode) Kill() { n.Proc.Kill() }

// Freeze stops the node's process (SIGSTOP): a machine that hangs, its
// sockets open and silent, the case timeouts rather than resets reveal.
func (n *NATSNode) Freeze() { n.Proc.Signal(syscall.SIGSTOP) }

// Thaw lets a frozen node run on (SIGCONT).
func (n *NATSNode) Thaw() { n.Proc.Signal(syscall.SIGCONT) }

// Start (re)starts a killed node on its ports and store dir and waits
// until it accepts clients (not until it caught up with the cluster).
func (n *NATSNode) Start() {
	n.t.Helper()
	if n.Proc.Running() {
		return
	}
	n.Proc.Start(n.t)
	if err := n.waitListening(30 * time.Second); err != nil {
		n.t.Fatalf("restart %s: %v", n.Name, err)
	}
}

func (n *NATSNode) waitListening(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !n.Proc.Running() {
			return fmt.Errorf("nats-server %s exited:\n%s", n.Name, n.Proc.Tail(2000))
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.Port), time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nats-server %s not listening on %d within %v:\n%s", n.Name, n.Port, d, n.Proc.Tail(2000))
}

// frozen reports whether the process is stopped (state T in /proc).
func (n *NATSNode) frozen() bool {
	n.Proc.mu.Lock()
	cmd := n.Proc.cmd
	n.Proc.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, the state follows ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'T'
}

// jsz is the part of the monitoring endpoint /jsz the tests read.
type jsz struct {
	Meta struct {
		Leader string `json:"leader"`
		Size   int    `json:"cluster_size"`
	} `json:"meta_cluster"`
}

func (n *NATSNode) jsz() (jsz, error) {
	var z jsz
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", n.HTTPPort))
	if err != nil {
		return z, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return z, fmt.Errorf("/jsz: %s", resp.Status)
	}
	return z, json.NewDecoder(resp.Body).Decode(&z)
}
