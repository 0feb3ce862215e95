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
	// Scripts (when the server has them): their declared keys are routed like any command's,
	// and the keys their commands touch must be here and, unless allow-cross-slot-keys (or
	// without a shebang), in one slot. "~" stands for a blank, "\n" for a newline.
	"EVAL return~redis.call('GET',KEYS[1]) 1 {b}1", "EVAL return~1 1 {a}1", "EVAL return~1 2 {b}1 {c}1",
	"EVAL return~redis.call('GET','{c}1') 1 {b}1", "EVAL return~redis.call('GET','{a}1') 0",
	"EVAL return~redis.call('GET','{b}1')..redis.call('GET','{c}1') 0",
	"EVAL #!lua~flags=allow-cross-slot-keys\\nreturn~redis.call('GET','{b}1')..redis.call('GET','{c}1') 0",
	"EVAL #!lua~flags=no-cluster\\nreturn~1 0",
	"EVAL #!lua\\nredis.call('GET','{b}1')~return~redis.call('GET','{c}1') 0",
	"EVAL #!lua\\nreturn~redis.call('GET','{c}1') 1 {b}1",
	"EVAL #!lua\\nreturn~redis.call('GET','{a}1') 0",
	"EVAL_RO return~redis.call('GET',KEYS[1]) 1 {a}1",
}

// TestClusterRoutingMatchesRedis runs routingScript on a two-node bloomd cluster and on a
// two-node redis-server cluster: the same replies (-MOVED, -ASK, -TRYAGAIN, -CROSSSLOT, ASKING
// for one command, transactions spoilt or discarded), once the nodes' addresses are replaced
// by <a> and <b>.
func TestClusterRoutingMatchesRedis(t *testing.T) {
	redistest.Require(t)
	// The script lines wait for EVAL in bloomd.
	scripts := startServer(t, nil).mux.Lookup([]byte("eval")) != nil
	var lines []string
	for _, line := range routingScript {
		if scripts || !strings.Contains(line, "EVAL") {
			lines = append(lines, line)
		}
	}
	run := func(t *testing.T, a, b *routeNode) []string {
		twoNodeCluster(t, a, b)
		ida, idb := a.do(t, "CLUSTER", "MYID").Text(), b.do(t, "CLUSTER", "MYID").Text()
		var out []string
		for _, line := range lines {
			n := a
			if rest, ok := strings.CutPrefix(line, "@b "); ok {
				n, line = b, rest
			}
			args := strings.Fields(strings.NewReplacer("<a>", ida, "<b>", idb).Replace(line))
			for i, a := range args {
				args[i] = strings.NewReplacer("~", " ", `\n`, "\n").Replace(a)
			}
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
			t.Errorf("%s\n  redis:  %s\n  bloomd: %s", lines[i], redis[i], bloomd[i])
		}
	}
}

// waitUntil polls ok every 50 ms for at most d.
func waitUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterLostSlotKeysDeleted: when another node takes a slot with a greater config epoch
// while this primary still holds keys there (and other slots), the keys are deleted, each
// journaled as a DEL, as Redis's delKeysInSlot does.
func TestClusterLostSlotKeysDeleted(t *testing.T) {
	j := &recordingJournal{}
	sa := startClusterServer(t, func(cfg *Config) { cfg.Journal = j })
	sb := startClusterServer(t, nil)
	a, b := &routeNode{addr: sa.addr(), c: dial(t, sa.addr())}, &routeNode{addr: sb.addr(), c: dial(t, sb.addr())}
	twoNodeCluster(t, a, b)
	for i := range 5 {
		if v := a.do(t, "SET", "{b}"+strconv.Itoa(i), "v"); v.Text() != "OK" { // slot 3300
			t.Fatalf("SET: %v", v)
		}
	}
	a.do(t, "SET", "{c}0", "v") // slot 7365, stays
	// The second node claims slot 3300 with a newer epoch.
	b.do(t, "CLUSTER", "SETSLOT", "3300", "NODE", b.do(t, "CLUSTER", "MYID").Text())
	b.do(t, "CLUSTER", "BUMPEPOCH")
	waitUntil(t, 10*time.Second, "the first node losing slot 3300's keys", func() bool {
		return a.do(t, "CLUSTER", "COUNTKEYSINSLOT", "3300").Int == 0
	})
	if n := a.do(t, "DBSIZE").Int; n != 1 {
		t.Errorf("DBSIZE %d after losing a slot, want the other slot's key", n)
	}
	if v := a.do(t, "GET", "{b}0"); !strings.HasPrefix(v.Text(), "MOVED 3300 ") {
		t.Errorf("GET of a lost key: %v", v)
	}
	dels := 0
	for _, rec := range j.snapshot() {
		if len(rec) == 2 && string(rec[0]) == "DEL" && strings.HasPrefix(string(rec[1]), "{b}") {
			dels++
		}
	}
	if dels != 5 {
		t.Errorf("%d DEL records journaled for the 5 keys of the lost slot", dels)
	}
}

// TestClusterResetReplica: CLUSTER RESET of a replica makes it an empty primary that knows no
// other node.
func TestClusterResetReplica(t *testing.T) {
	sa, sb := startClusterServer(t, nil), startClusterServer(t, nil)
	a, b := &routeNode{addr: sa.addr(), c: dial(t, sa.addr())}, &routeNode{addr: sb.addr(), c: dial(t, sb.addr())}
	a.do(t, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	_, bport, _ := net.SplitHostPort(b.addr)
	bus := strings.Fields(b.do(t, "CLUSTER", "NODES").Text())[1]
	a.do(t, "CLUSTER", "MEET", "127.0.0.1", bport, bus[strings.IndexByte(bus, '@')+1:])
	ida := a.do(t, "CLUSTER", "MYID").Text()
	waitUntil(t, 10*time.Second, "the nodes meeting", func() bool { return strings.Contains(b.do(t, "CLUSTER", "NODES").Text(), ida) })
	if v := b.do(t, "CLUSTER", "REPLICATE", ida); v.Text() != "OK" {
		t.Fatalf("CLUSTER REPLICATE: %v", v)
	}
	waitUntil(t, 10*time.Second, "the cluster ok", func() bool {
		return strings.Contains(a.do(t, "CLUSTER", "INFO").Text(), "cluster_state:ok")
	})
	for i := range 10 {
		a.do(t, "SET", "k"+strconv.Itoa(i), "v")
	}
	waitUntil(t, 10*time.Second, "the replica holding the keys", func() bool { return b.do(t, "DBSIZE").Int == 10 })
	if v := b.do(t, "CLUSTER", "RESET"); v.Text() != "OK" {
		t.Fatalf("CLUSTER RESET: %v", v)
	}
	if n := b.do(t, "DBSIZE").Int; n != 0 {
		t.Errorf("a reset replica keeps %d keys", n)
	}
	if r := b.do(t, "ROLE"); r.Elems[0].Text() != "master" {
		t.Errorf("ROLE after CLUSTER RESET: %v", r)
	}
	if n := b.do(t, "CLUSTER", "INFO").Text(); !strings.Contains(n, "cluster_known_nodes:1") {
		t.Errorf("after CLUSTER RESET:\n%s", n)
	}
	if v := a.do(t, "CLUSTER", "RESET"); !strings.Contains(v.Text(), "master nodes containing keys") {
		t.Errorf("CLUSTER RESET of a primary with keys: %v", v)
	}
}

// TestScriptRoute checks the cluster rules for the commands a script runs (Redis 7.0's
// scriptVerifyClusterState and its messages), for the script engine to call: keys served
// elsewhere, keys of two slots, the cluster down.
func TestScriptRoute(t *testing.T) {
	sa, sb := startClusterServer(t, nil), startClusterServer(t, nil)
	a, b := &routeNode{addr: sa.addr(), c: dial(t, sa.addr())}, &routeNode{addr: sb.addr(), c: dial(t, sb.addr())}
	twoNodeCluster(t, a, b)
	get, set := sa.mux.Lookup([]byte("get")), sa.mux.Lookup([]byte("set"))
	argv := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	slot := -1
	if msg := sa.scriptRoute(get, argv("GET", "{b}1"), false, false, false, &slot); msg != "" || slot != 3300 {
		t.Errorf("a local key: %q, slot %d", msg, slot)
	}
	if msg := sa.scriptRoute(get, argv("GET", "{c}1"), false, false, false, &slot); msg != "Script attempted to access keys that do not hash to the same slot" {
		t.Errorf("a second slot: %q", msg)
	}
	if msg := sa.scriptRoute(get, argv("GET", "{c}1"), false, false, true, &slot); msg != "" {
		t.Errorf("a second slot with allow-cross-slot-keys: %q", msg)
	}
	if msg := sa.scriptRoute(set, argv("SET", "{a}1", "v"), false, false, false, &slot); msg != "Script attempted to access a non local key in a cluster node" {
		t.Errorf("a key of the other node: %q", msg)
	}
	if msg := sa.scriptRoute(sa.mux.Lookup([]byte("ping")), argv("PING"), false, false, false, &slot); msg != "" {
		t.Errorf("a command without keys: %q", msg)
	}
	// Through a caller: Redis's error replies; nothing for the primary's stream.
	caller := sa.newConn(nil)
	slot = -1
	if msg := caller.scriptClusterCheck(set, argv("SET", "{a}1", "v"), false, &slot); msg != "ERR Script attempted to access a non local key in a cluster node" {
		t.Errorf("through a client: %q", msg)
	}
	caller.replApplier = true
	if msg := caller.scriptClusterCheck(set, argv("SET", "{a}1", "v"), false, &slot); msg != "" {
		t.Errorf("through the primary's stream: %q", msg)
	}
}
