package server

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// freeLoopbackPort returns a loopback port that was free a moment ago.
func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startClusterServer starts bloomd in this process as a fresh cluster node, on a free port
// with a free bus port.
func startClusterServer(t testing.TB, mod func(*Config)) *Server {
	t.Helper()
	return startServer(t, func(cfg *Config) {
		cfg.Dir = t.TempDir()
		cfg.Cluster.Enabled = true
		cfg.Cluster.Port = freeLoopbackPort(t)
		cfg.Cluster.NodeTimeout = 2000
		if mod != nil {
			mod(cfg)
		}
	})
}

// clusterNormalize replaces a node's ID and ports in a reply by <myid>, <port> and <busport>.
func clusterNormalize(v resp.Value, id, port, bus string) resp.Value {
	if len(v.Str) > 0 {
		s := string(v.Str)
		s = strings.ReplaceAll(s, id, "<myid>")
		s = strings.ReplaceAll(s, ":"+port+"@"+bus, ":<port>@<busport>")
		v.Str = []byte(s)
	}
	if v.Kind == ':' && strconv.FormatInt(v.Int, 10) == port {
		v.Kind, v.Str = '+', []byte("<port>")
	}
	for i := range v.Elems {
		v.Elems[i] = clusterNormalize(v.Elems[i], id, port, bus)
	}
	return v
}

// TestClusterTranscript replays testdata/cluster.txt against a fresh bloomd cluster node and a
// fresh redis-server 7.0 cluster node: the same replies, once each node's ID and ports are
// replaced by placeholders. With -record, the replies are rewritten from Redis's.
func TestClusterTranscript(t *testing.T) {
	path := "testdata/cluster.txt"
	blocks := readTranscript(t, path)
	run := func(t *testing.T, addr string, record bool) {
		c := dial(t, addr)
		c.send([]byte("CLUSTER"), []byte("MYID"))
		_, idv := c.read()
		id := idv.Text()
		_, port, _ := net.SplitHostPort(addr)
		c.send([]byte("CLUSTER"), []byte("NODES"))
		_, nodes := c.read()
		bus := strings.Fields(string(nodes.Str))[1]
		bus = bus[strings.IndexByte(bus, '@')+1:]
		changed := false
		for i, b := range blocks {
			args := make([][]byte, len(b.args))
			for j, a := range b.args {
				args[j] = bytes.ReplaceAll(a, []byte("<myid>"), []byte(id))
			}
			c.send(args...)
			_, v := c.read()
			got := resp.AppendValue(nil, clusterNormalize(v, id, port, bus))
			if record {
				if !bytes.Equal(got, b.reply) {
					blocks[i].reply = got
					blocks[i].replyTx = formatReply(got)
					changed = true
				}
				continue
			}
			if !bytes.Equal(got, b.reply) {
				t.Errorf("%s:%d: > %s\ngot:\n%s\nwant:\n%s", path, b.line, b.cmd, formatReply(got), b.replyTx)
			}
		}
		if changed {
			if err := os.WriteFile(path, formatTranscript(blocks, path), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("recorded %s", path)
		}
	}
	t.Run("redis-server", func(t *testing.T) {
		redistest.Require(t)
		bus := freeLoopbackPort(t)
		dir := t.TempDir()
		rs, err := redistest.StartProgram("redis-server", "", func(port int, _ string) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
				"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus), "--cluster-config-file", filepath.Join(dir, "nodes.conf")}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		run(t, rs.Addr, *record)
	})
	if *record {
		return
	}
	t.Run("bloomd", func(t *testing.T) {
		s := startClusterServer(t, nil)
		run(t, s.addr(), false)
	})
}

// A routeNode is one node of a two-node cluster for TestClusterRoutingMatchesRedis.
type routeNode struct {
	addr string
	c    *rawClient
}

func (n *routeNode) do(t *testing.T, args ...string) resp.Value {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	n.c.send(b...)
	_, v := n.c.read()
	return v
}

// twoNodeCluster joins a and b, a serving slots 0-8191 and b the rest, and waits until both
// say the cluster is ok.
func twoNodeCluster(t *testing.T, a, b *routeNode) {
	t.Helper()
	a.do(t, "CLUSTER", "ADDSLOTSRANGE", "0", "8191")
	b.do(t, "CLUSTER", "ADDSLOTSRANGE", "8192", "16383")
	a.do(t, "CLUSTER", "SET-CONFIG-EPOCH", "1")
	b.do(t, "CLUSTER", "SET-CONFIG-EPOCH", "2")
	_, bport, _ := net.SplitHostPort(b.addr)
	bus := strings.Fields(b.do(t, "CLUSTER", "NODES").Text())[1]
	a.do(t, "CLUSTER", "MEET", "127.0.0.1", bport, bus[strings.IndexByte(bus, '@')+1:])
	deadline := time.Now().Add(20 * time.Second)
	for {
		ia, ib := a.do(t, "CLUSTER", "INFO").Text(), b.do(t, "CLUSTER", "INFO").Text()
		if strings.Contains(ia, "cluster_state:ok") && strings.Contains(ib, "cluster_state:ok") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two nodes did not agree within 20s:\n%s\n%s", ia, ib)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// routingScript is the session TestClusterRoutingMatchesRedis runs: "@b" sends a command to the
// second node, anything else to the first. {b} hashes to slot 3300 and {c} to 7365 (the first
// node's), {a} to 15495 (the second's).
var routingScript = []string{
	"SET {a}1 v", "SET {b}1 v", "GET {b}1", "EXISTS {b}1 {a}1", "EXISTS {b}1 {c}1", "GET {a}1", "@b GET {a}1",
	"MULTI", "SET {b}2 x", "SET {a}2 y", "EXEC",
	"MULTI", "SET {b}3 x", "SET {c}3 y", "EXEC",
	"MULTI", "SET {b}4 x", "GET {b}4", "EXEC",
	"DBSIZE", "PING", "CLUSTER COUNTKEYSINSLOT 3300", "CLUSTER GETKEYSINSLOT 3300 1",
	"CLUSTER SETSLOT 3300 MIGRATING <b>", "@b CLUSTER SETSLOT 3300 IMPORTING <a>",
	"GET {b}1", "GET {b}nosuch", "EXISTS {b}1 {b}nosuch", "SET {b}nosuch 1",
	"@b GET {b}nosuch", "@b ASKING", "@b GET {b}nosuch", "@b GET {b}nosuch",
	"@b ASKING", "@b PING", "@b GET {b}nosuch",
	"@b ASKING", "@b EXISTS {b}1 {b}nosuch",
	"@b MULTI", "@b ASKING", "@b GET {b}x", "@b EXEC",
	"@b ASKING", "@b MULTI", "@b GET {b}x", "@b GET {b}y", "@b EXEC", "@b GET {b}x",
	"@b ASKING", "@b MULTI", "@b GET {b}x", "@b DISCARD", "@b GET {b}x",
	"CLUSTER SETSLOT 3300 STABLE", "@b CLUSTER SETSLOT 3300 STABLE",
	"READONLY", "GET {a}1", "READWRITE", "GET {a}1",
}

// TestClusterRoutingMatchesRedis runs routingScript on a two-node bloomd cluster and on a
// two-node redis-server cluster: the same replies (-MOVED, -ASK, -TRYAGAIN, -CROSSSLOT, ASKING
// for one command, transactions spoilt or discarded), once the nodes' addresses are replaced
// by <a> and <b>.
func TestClusterRoutingMatchesRedis(t *testing.T) {
	redistest.Require(t)
	run := func(t *testing.T, a, b *routeNode) []string {
		twoNodeCluster(t, a, b)
		ida, idb := a.do(t, "CLUSTER", "MYID").Text(), b.do(t, "CLUSTER", "MYID").Text()
		var out []string
		for _, line := range routingScript {
			n := a
			if rest, ok := strings.CutPrefix(line, "@b "); ok {
				n, line = b, rest
			}
			args := strings.Fields(strings.NewReplacer("<a>", ida, "<b>", idb).Replace(line))
			v := n.do(t, args...)
			s := strings.NewReplacer(a.addr, "<a>", b.addr, "<b>", ida, "<ida>", idb, "<idb>").Replace(v.String())
			out = append(out, line+" -> "+s)
		}
		return out
	}
	redisNode := func(t *testing.T) *routeNode {
		bus := freeLoopbackPort(t)
		dir := t.TempDir()
		rs, err := redistest.StartProgram("redis-server", "", func(port int, _ string) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
				"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "2000",
				"--cluster-config-file", filepath.Join(dir, "nodes.conf")}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		return &routeNode{addr: rs.Addr, c: dial(t, rs.Addr)}
	}
	bloomdNode := func(t *testing.T) *routeNode {
		s := startClusterServer(t, nil)
		return &routeNode{addr: s.addr(), c: dial(t, s.addr())}
	}
	redis := run(t, redisNode(t), redisNode(t))
	bloomd := run(t, bloomdNode(t), bloomdNode(t))
	for i := range redis {
		if redis[i] != bloomd[i] {
			t.Errorf("%s\n  redis:  %s\n  bloomd: %s", routingScript[i], redis[i], bloomd[i])
		}
	}
}
