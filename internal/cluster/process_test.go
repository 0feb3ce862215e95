package cluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/cluster"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The tests in this file run real processes on loopback: bloomd nodes (built from cmd/bloomd)
// and redis-server 7.0 nodes, joined by redis-cli --cluster as an operator would.

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // go-redis logs each failed dial to a killed node
	redistest.Main(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// bloomdBinary builds cmd/bloomd once per test binary.
func bloomdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bloomd-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		redistest.AtExit(func() { os.RemoveAll(dir) })
		buildOnce.bin = filepath.Join(dir, "bloomd")
		out, err := exec.Command("go", "build", "-o", buildOnce.bin, "../../cmd/bloomd").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

// A pnode is one cluster node process.
type pnode struct {
	*redistest.Server
	bus   int
	redis bool // a redis-server, not bloomd
	t     testing.TB
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBloomdNode starts a bloomd cluster node with a node timeout of timeoutMs and extra
// config lines.
func startBloomdNode(t testing.TB, timeoutMs int, extra ...string) *pnode {
	t.Helper()
	bin := bloomdBinary(t)
	bus := freePort(t)
	s, err := redistest.StartProgram(bin, "", func(port int, dir string) []string {
		conf := filepath.Join(dir, "bloomd.conf")
		lines := append([]string{
			"port " + strconv.Itoa(port),
			"bind 127.0.0.1",
			"dir " + dir,
			"appendonly yes",
			"appendfsync everysec",
			`save ""`,
			"logfile " + filepath.Join(dir, "bloomd.log"),
			"io-threads 1",
			"cluster-enabled yes",
			"cluster-port " + strconv.Itoa(bus),
			"cluster-node-timeout " + strconv.Itoa(timeoutMs),
		}, extra...)
		os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		return []string{conf}
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &pnode{Server: s, bus: bus, t: t}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "bloomd.log"))
			t.Logf("log of bloomd %s:\n%s", s.Addr, tail(string(log), 30))
		}
		s.Close()
	})
	return n
}

// startRedisNode starts a redis-server cluster node.
func startRedisNode(t testing.TB, timeoutMs int, extra ...string) *pnode {
	t.Helper()
	redistest.Require(t)
	bus := freePort(t)
	s, err := redistest.StartProgram("redis-server", "", func(port int, dir string) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", strconv.Itoa(timeoutMs),
			"--logfile", filepath.Join(dir, "redis.log")}, extra...)
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &pnode{Server: s, bus: bus, redis: true, t: t}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			t.Logf("log of redis-server %s:\n%s", s.Addr, tail(string(log), 30))
		}
		s.Close()
	})
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (n *pnode) do(args ...string) string {
	n.t.Helper()
	r, err := n.Do(args...)
	if err != nil {
		n.t.Fatalf("%s %v: %v", n.Addr, args, err)
	}
	return r
}

func (n *pnode) port() string {
	_, p, _ := net.SplitHostPort(n.Addr)
	return p
}

// infoField returns a field of CLUSTER INFO.
func (n *pnode) clusterInfo(field string) string {
	r, err := n.Do("CLUSTER", "INFO")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(r, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// waitFor polls ok every 100 ms for at most d.
func waitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// redisCLI runs redis-cli with args and returns its output.
func redisCLI(t testing.TB, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	redistest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput()
	return string(out), err
}

// create joins nodes with redis-cli --cluster create, replicas replicas per primary, and waits
// until every node says the cluster is ok.
func create(t testing.TB, nodes []*pnode, replicas int) {
	t.Helper()
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := redisCLI(t, 2*time.Minute, args...)
	if err != nil || !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, "cluster_state:ok on every node", func() bool {
		for _, n := range nodes {
			if n.clusterInfo("cluster_state") != "ok" {
				return false
			}
		}
		return true
	})
}

// clusterClient returns a go-redis ClusterClient of the nodes.
func clusterClient(t testing.TB, nodes []*pnode) *redis.ClusterClient {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// keyFor returns a key of slot.
func keyFor(slot int) string {
	for i := 0; ; i++ {
		k := "key:" + strconv.Itoa(i)
		if keySlot(k) == slot {
			return k
		}
	}
}

func nodesLine(n *pnode, id string) []string {
	for _, line := range strings.Split(n.do("CLUSTER", "NODES"), "\n") {
		if f := strings.Fields(line); len(f) >= 8 && f[0] == id {
			return f
		}
	}
	return nil
}

func keySlot(k string) int { return cluster.KeySlot([]byte(k)) }

// readLog returns a bloomd node's log.
func readLog(n *pnode) string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "bloomd.log"))
	return string(b)
}
