package cluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// TestRecordBus records the cluster bus traffic of real redis-server 7.0 nodes into
// testdata/bus, the golden messages of TestGoldenMessages. It runs only with
// BLOOM_RECORD_BUS=1 (see testdata/bus/README.md): every node announces the port of a proxy
// as its bus port, so every connection to it passes the proxy, which keeps each message whole.
func TestRecordBus(t *testing.T) {
	if os.Getenv("BLOOM_RECORD_BUS") != "1" {
		t.Skip("records testdata/bus from redis-server; set BLOOM_RECORD_BUS=1 to run")
	}
	redistest.Require(t)
	rec := &recorder{seen: map[string]int{}}
	type nodeInfo struct {
		s     *redistest.Server
		proxy net.Listener
		bus   int
	}
	var nodes []*nodeInfo
	var targets []*atomic.Value // each proxy's node ID, once known
	for i := range 4 {
		bus := freeTestPort(t)
		proxy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pport := proxy.Addr().(*net.TCPAddr).Port
		args := func(port int, dir string) []string {
			a := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
				"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
				"--cluster-port", strconv.Itoa(bus), "--cluster-announce-bus-port", strconv.Itoa(pport)}
			if i == 3 {
				a = append(a, "--cluster-announce-hostname", "replica-of-first.example")
			}
			return a
		}
		s, err := redistest.StartProgram("redis-server", "", args)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		n := &nodeInfo{s: s, proxy: proxy, bus: bus}
		nodes = append(nodes, n)
		target := new(atomic.Value)
		targets = append(targets, target)
		go rec.serve(proxy, "127.0.0.1:"+strconv.Itoa(bus), target)
		t.Cleanup(func() { proxy.Close() })
	}
	for i, n := range nodes {
		id, err := n.s.Do("CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		targets[i].Store(id)
	}
	addrs := []string{nodes[0].s.Addr, nodes[1].s.Addr, nodes[2].s.Addr}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	do := func(n *nodeInfo, args ...string) string {
		t.Helper()
		r, err := n.s.Do(args...)
		if err != nil {
			t.Fatalf("%s %v: %v", n.s.Addr, args, err)
		}
		return r
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	_, port0, _ := net.SplitHostPort(nodes[0].s.Addr)
	do(nodes[3], "CLUSTER", "MEET", "127.0.0.1", port0, strconv.Itoa(nodes[0].proxy.Addr().(*net.TCPAddr).Port))
	id0 := do(nodes[0], "CLUSTER", "MYID")
	waitFor("the fourth node to know the first", func() bool { return strings.Contains(do(nodes[3], "CLUSTER", "NODES"), id0) })
	do(nodes[3], "CLUSTER", "REPLICATE", id0)
	waitFor("the cluster to be ok", func() bool {
		for _, n := range nodes {
			if !strings.Contains(do(n, "CLUSTER", "INFO"), "cluster_state:ok") {
				return false
			}
		}
		return strings.Contains(do(nodes[3], "INFO", "replication"), "master_link_status:up")
	})
	// nodes.conf with a replica, a hostname and open slots, as Redis writes it.
	id1 := do(nodes[1], "CLUSTER", "MYID")
	do(nodes[0], "CLUSTER", "SETSLOT", "1", "MIGRATING", id1)
	do(nodes[1], "CLUSTER", "SETSLOT", "1", "IMPORTING", id0)
	for i, n := range nodes[:2] {
		do(n, "CLUSTER", "SAVECONFIG")
		b, err := os.ReadFile(filepath.Join(n.s.Dir, "nodes.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "nodes", fmt.Sprintf("redis-node%d.conf", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(nodes[0], "CLUSTER", "SETSLOT", "1", "STABLE")
	do(nodes[1], "CLUSTER", "SETSLOT", "1", "STABLE")
	do(nodes[1], "PUBLISH", "news", "hello from a node")
	do(nodes[0], "SPUBLISH", "{b}shard", "to the shard") // slot 3300, node 0's
	time.Sleep(500 * time.Millisecond)
	// A manual failover: MFSTART, a paused primary's PING, FAILOVER_AUTH_REQUEST with
	// FORCEACK, FAILOVER_AUTH_ACK.
	do(nodes[3], "CLUSTER", "FAILOVER")
	waitFor("the manual failover", func() bool { return strings.Contains(do(nodes[3], "ROLE"), "master") })
	id3 := do(nodes[3], "CLUSTER", "MYID")
	// A failure: the new primary dies, its replica (the old primary) is elected after FAIL.
	nodes[3].s.Kill()
	waitFor("the automatic failover", func() bool { return strings.HasPrefix(do(nodes[0], "ROLE"), "master") })
	// The dead primary comes back with an old configuration: every node it pings answers it
	// with an UPDATE. The proxies hold what is sent to it for a few seconds, so that it goes on
	// claiming its old slots that long.
	rec.hold(id3, time.Now().Add(4*time.Second))
	if err := nodes[3].s.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor("the old primary to become a replica", func() bool { return strings.Contains(do(nodes[3], "ROLE"), "slave") })
	time.Sleep(time.Second)
	rec.save(t, filepath.Join("testdata", "bus"))
}

// freeTestPort returns a loopback port that was free a moment ago.
func freeTestPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A recorder keeps the first messages of each kind that pass its proxies. It can hold the
// messages sent to one node for a while.
type recorder struct {
	mu        sync.Mutex
	seen      map[string]int
	msgs      []recorded
	holdID    string
	holdUntil time.Time
}

type recorded struct {
	name string
	data []byte
}

func (r *recorder) hold(id string, until time.Time) {
	r.mu.Lock()
	r.holdID, r.holdUntil = id, until
	r.mu.Unlock()
}

// wait delays a message sent to the node id while it is held.
func (r *recorder) wait(id string) {
	r.mu.Lock()
	d := time.Until(r.holdUntil)
	held := id != "" && id == r.holdID
	r.mu.Unlock()
	if held && d > 0 {
		time.Sleep(d)
	}
}

// serve proxies the connections to one node's bus port; target holds that node's ID.
func (r *recorder) serve(ln net.Listener, addr string, target *atomic.Value) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", addr)
		if err != nil {
			in.Close()
			continue
		}
		var dialer atomic.Value // the ID of the node that connected, from its first message
		go r.pipe(in, out, func(f []byte) {
			if dialer.Load() == nil {
				dialer.Store(string(f[offSender : offSender+NameLen]))
			}
			id, _ := target.Load().(string)
			r.wait(id)
		})
		go r.pipe(out, in, func([]byte) {
			id, _ := dialer.Load().(string)
			r.wait(id)
		})
	}
}

// pipe copies whole messages from src to dst, recording them; before each write, before is
// called with the message.
func (r *recorder) pipe(src, dst net.Conn, before func([]byte)) {
	defer dst.Close()
	defer src.Close()
	for {
		frame, err := ReadFrame(src, nil, MaxMessage)
		if err != nil {
			return
		}
		r.keep(frame)
		before(frame)
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}

// keep records a message if it is among the first few of its kind: its type, whether it has
// gossip sections and extensions, and its message flags.
func (r *recorder) keep(frame []byte) {
	t := MsgType(uint16(frame[offType])<<8 | uint16(frame[offType+1]))
	kind := t.String()
	if t <= MsgMeet {
		count := int(frame[offCount])<<8 | int(frame[offCount+1])
		kind += fmt.Sprintf("-gossip%d", min(count, 2))
		if frame[offMFlags]&MFlagExtData != 0 {
			kind += "-ext"
		}
	}
	if f := frame[offMFlags]; f&(MFlagPaused|MFlagForceAck) != 0 {
		kind += fmt.Sprintf("-mflags%d", f&(MFlagPaused|MFlagForceAck))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[kind] >= 2 {
		return
	}
	r.seen[kind]++
	r.msgs = append(r.msgs, recorded{fmt.Sprintf("%s-%d.bin", kind, r.seen[kind]), append([]byte(nil), frame...)})
}

func (r *recorder) save(t *testing.T, dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
	for _, f := range old {
		os.Remove(f)
	}
	var names []string
	for _, m := range r.msgs {
		if err := os.WriteFile(filepath.Join(dir, m.name), m.data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, m.name)
	}
	sort.Strings(names)
	t.Logf("recorded %d messages: %s", len(names), strings.Join(names, " "))
}
