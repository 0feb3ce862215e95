package cluster

import (
	"bytes"
	"container/heap"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
)

// A simNet runs several Clusters on a simulated network and clock: messages, connections,
// failures and ticks are events on one virtual timeline, so a test of minutes of cluster
// life runs in a fraction of a second, and the same seed gives the same run.
type simNet struct {
	t       testing.TB
	now     int64
	rnd     *rand.Rand
	events  eventHeap
	seq     int
	nodes   []*simNode
	cut     map[[2]*simNode]bool // pairs that cannot reach each other
	latency int64
}

type simEvent struct {
	at  int64
	seq int
	fn  func()
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func newSimNet(t testing.TB, seed uint64) *simNet {
	return &simNet{t: t, now: 1_700_000_000_000, rnd: rand.New(rand.NewPCG(seed, seed)), cut: map[[2]*simNode]bool{}, latency: 1}
}

func (n *simNet) at(t int64, fn func()) {
	n.seq++
	heap.Push(&n.events, &simEvent{at: t, seq: n.seq, fn: fn})
}

// run advances the clock by d milliseconds, running every event due.
func (n *simNet) run(d int64) {
	end := n.now + d
	for len(n.events) > 0 && n.events[0].at <= end {
		e := heap.Pop(&n.events).(*simEvent)
		n.now = max(n.now, e.at)
		e.fn()
	}
	n.now = end
}

// runUntil advances the clock until ok holds, checking every 100 ms, for at most limit ms.
func (n *simNet) runUntil(limit int64, what string, ok func() bool) {
	n.t.Helper()
	for waited := int64(0); !ok(); waited += 100 {
		if waited >= limit {
			n.t.Fatalf("after %d ms of simulated time: not %s", limit, what)
		}
		n.run(100)
	}
}

func (n *simNet) reachable(a, b *simNode) bool {
	return a.up && b.up && !n.cut[[2]*simNode{a, b}] && !n.cut[[2]*simNode{b, a}]
}

// partition cuts every node of group a from every node of group b.
func (n *simNet) partition(a, b []*simNode, on bool) {
	for _, x := range a {
		for _, y := range b {
			if on {
				n.cut[[2]*simNode{x, y}] = true
			} else {
				delete(n.cut, [2]*simNode{x, y})
				delete(n.cut, [2]*simNode{y, x})
			}
		}
	}
}

// A simNode is one node: its Cluster, its host and its connections.
type simNode struct {
	net   *simNet
	idx   int
	port  int
	dir   string
	cfg   Config
	c     *Cluster
	host  *simHost
	up    bool
	conns map[*simConn]bool
	gen   int // incremented at each start, to drop the ticks of a previous life
	log   bytes.Buffer
	logMu sync.Mutex
}

func (s *simNode) Write(p []byte) (int, error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.Write(p)
}

func (s *simNode) logText() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// addNode makes a node listening on 127.0.0.1:7000+i, bus port +10000, and starts it.
func (n *simNet) addNode(cfg *Config) *simNode {
	n.t.Helper()
	i := len(n.nodes)
	s := &simNode{net: n, idx: i, port: 7000 + i, dir: n.t.TempDir(), conns: map[*simConn]bool{}}
	s.cfg = DefaultConfig()
	s.cfg.Enabled = true
	s.cfg.NodeTimeout = 1000
	if cfg != nil {
		s.cfg = *cfg
	}
	s.host = &simHost{node: s, keys: map[int]int{}}
	n.nodes = append(n.nodes, s)
	s.start()
	return s
}

func (s *simNode) start() {
	s.net.t.Helper()
	log := slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(s.cfg, Options{Dir: s.dir, Port: s.port, Env: simEnv{s}, Host: s.host, Log: log})
	if err != nil {
		s.net.t.Fatal(err)
	}
	s.c = c
	s.up = true
	s.gen++
	s.host.down = 0
	gen := s.gen
	var tick func()
	tick = func() {
		if !s.up || s.gen != gen {
			return
		}
		s.c.Tick()
		s.net.at(s.net.now+100, tick)
	}
	s.net.at(s.net.now+int64(s.net.rnd.IntN(100))+1, tick)
}

// kill stops a node at once, as kill -9: its connections close.
func (s *simNode) kill() {
	s.up = false
	for sc := range s.conns {
		sc.close(true)
	}
	s.c.Close()
}

// restart starts a killed node again from its nodes file.
func (s *simNode) restart() {
	s.conns = map[*simConn]bool{}
	s.start()
}

func (s *simNode) id() string { return s.c.Myself().String() }

// do runs a CLUSTER subcommand and returns its reply.
func (s *simNode) do(args ...string) resp.Value {
	s.net.t.Helper()
	argv := [][]byte{[]byte("CLUSTER")}
	for _, a := range args {
		argv = append(argv, []byte(a))
	}
	w := resp.NewWriter(nil)
	s.c.Command(w, argv, func() { s.host.flushed++ })
	v, err := resp.NewReader(bytes.NewReader(w.Bytes())).ReadReply()
	if err != nil {
		s.net.t.Fatalf("CLUSTER %v: %v", args, err)
	}
	return v
}

func (s *simNode) ok(args ...string) {
	s.net.t.Helper()
	if v := s.do(args...); v.IsError() {
		s.net.t.Fatalf("node %d: CLUSTER %s: %s", s.idx, strings.Join(args, " "), v.Str)
	}
}

// info returns a CLUSTER INFO field.
func (s *simNode) info(field string) string {
	s.net.t.Helper()
	for _, line := range strings.Split(s.do("INFO").Text(), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// nodeLine returns the CLUSTER NODES line of the node id, as seen by s.
func (s *simNode) nodeLine(id string) []string {
	for _, line := range strings.Split(s.do("NODES").Text(), "\n") {
		if f := strings.Fields(line); len(f) >= 8 && f[0] == id {
			return f
		}
	}
	return nil
}

type simEnv struct{ s *simNode }

func (e simEnv) Now() int64     { return e.s.net.now }
func (e simEnv) Intn(n int) int { return e.s.net.rnd.IntN(n) }

func (e simEnv) Dial(l *Link, ip string, port int) Conn {
	from := e.s
	net := from.net
	local := &simConn{net: net, owner: from, link: l}
	from.conns[local] = true
	var to *simNode
	for _, x := range net.nodes {
		if ip == "127.0.0.1" && x.port+portIncr == port {
			to = x
		}
	}
	gen := from.gen
	net.at(net.now+net.latency, func() {
		if !from.up || from.gen != gen || local.closed {
			return
		}
		switch {
		case to == nil || !to.up:
			local.closed = true
			delete(from.conns, local)
			from.c.LinkLost(l, fmt.Errorf("connection refused"))
		case !net.reachable(from, to):
			// A partition: the connection hangs until the dialer's timeout.
			net.at(net.now+from.cfg.NodeTimeout, func() {
				if from.up && from.gen == gen && !local.closed {
					local.closed = true
					delete(from.conns, local)
					from.c.LinkLost(l, fmt.Errorf("i/o timeout"))
				}
			})
		default:
			remote := &simConn{net: net, owner: to, peer: local}
			local.peer = remote
			to.conns[remote] = true
			remote.link = to.c.Accept(remote)
			local.connected, remote.connected = true, true
			from.c.Connected(l)
			for _, b := range local.queued {
				local.deliver(b)
			}
			local.queued = nil
		}
	})
	return local
}

// A simConn is one side of a simulated connection.
type simConn struct {
	net       *simNet
	owner     *simNode
	peer      *simConn
	link      *Link
	connected bool
	closed    bool
	queued    [][]byte // sent before the connection was made
}

func (c *simConn) Send(b []byte) {
	if c.closed {
		return
	}
	if !c.connected {
		c.queued = append(c.queued, b)
		return
	}
	c.deliver(b)
}

func (c *simConn) deliver(b []byte) {
	p := c.peer
	net := c.net
	if !net.reachable(c.owner, p.owner) {
		return // lost in the partition
	}
	gen := p.owner.gen
	net.at(net.now+net.latency, func() {
		if p.closed || !p.owner.up || p.owner.gen != gen || !net.reachable(c.owner, p.owner) {
			return
		}
		p.owner.c.Receive(p.link, b)
	})
}

// close closes this side; the peer sees the end unless the network between them is cut.
func (c *simConn) close(notifyPeer bool) {
	if c.closed {
		return
	}
	c.closed = true
	delete(c.owner.conns, c)
	p := c.peer
	if p == nil || !notifyPeer {
		return
	}
	net := c.net
	gen := p.owner.gen
	net.at(net.now+net.latency, func() {
		if p.closed || !p.owner.up || p.owner.gen != gen {
			return
		}
		p.closed = true
		delete(p.owner.conns, p)
		p.owner.c.LinkLost(p.link, io.EOF)
	})
}

func (c *simConn) Close()           { c.close(true) }
func (c *simConn) LocalIP() string  { return "127.0.0.1" }
func (c *simConn) RemoteIP() string { return "127.0.0.1" }
func (c *simConn) Pending() int     { return len(c.queued) }

// A simHost is a node's server: keys counted per slot, and replication that copies the
// primary's offset while the primary is reachable.
type simHost struct {
	mu        sync.Mutex
	node      *simNode
	keys      map[int]int
	primary   *simNode // replicated, nil for a primary
	offset    int64
	down      int64 // when the link went down, 0 if up or never
	paused    int64
	pauses    int
	flushed   int
	deleted   []int
	published []string
}

func (h *simHost) CountKeysInSlot(slot int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys[slot]
}

func (h *simHost) KeysInSlot(slot, n int) [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out [][]byte
	for i := range min(n, h.keys[slot]) {
		out = append(out, []byte("key"+strconv.Itoa(i)))
	}
	return out
}

func (h *simHost) DBSize() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, k := range h.keys {
		n += k
	}
	return n
}

func (h *simHost) DeleteKeysInSlot(slot int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, slot)
	h.deleted = append(h.deleted, slot)
}

func (h *simHost) ReplicaOf(ip string, port int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.node.net.nodes {
		if n.port == port {
			h.primary = n
		}
	}
}

func (h *simHost) StopReplication() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.primary = nil
}

func (h *simHost) Replicating() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.primary != nil
}

// sync copies the primary's offset when it is reachable; it runs when the offset is read.
func (h *simHost) sync() {
	if p := h.primary; p != nil {
		if h.node.net.reachable(h.node, p) {
			h.offset = max(h.offset, p.host.offset)
			h.down = 0
		} else if h.down == 0 {
			h.down = h.node.net.now
		}
	}
}

func (h *simHost) ReplOffset() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sync()
	return h.offset
}

func (h *simHost) ReplLink() (bool, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sync()
	if h.down != 0 {
		return false, h.down
	}
	return true, h.node.net.now
}

func (h *simHost) PauseWrites(until int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paused = until
	if until != 0 {
		h.pauses++
	}
}

func (h *simHost) Publish(ch, msg []byte, shard bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.published = append(h.published, string(ch)+"="+string(msg))
}

// write moves a primary's replication offset on, as a write would.
func (h *simHost) write(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offset += n
}

// create makes a cluster as redis-cli --cluster create does: slots split among the first
// primaries nodes, a config epoch each, MEETs to the first node, and then the others as
// replicas, one per primary in turn.
func (n *simNet) create(primaries, replicas int, cfg *Config) []*simNode {
	n.t.Helper()
	var nodes []*simNode
	for range primaries + replicas {
		nodes = append(nodes, n.addNode(cfg))
	}
	per := Slots / primaries
	for i := range primaries {
		lo, hi := i*per, (i+1)*per-1
		if i == primaries-1 {
			hi = Slots - 1
		}
		nodes[i].ok("ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi))
	}
	for i, s := range nodes {
		s.ok("SET-CONFIG-EPOCH", strconv.Itoa(i+1))
	}
	for _, s := range nodes[1:] {
		s.ok("MEET", "127.0.0.1", strconv.Itoa(nodes[0].port))
	}
	n.runUntil(20000, "every node knowing every other", func() bool {
		for _, s := range nodes {
			if s.info("cluster_known_nodes") != strconv.Itoa(len(nodes)) {
				return false
			}
			for _, o := range nodes {
				if f := s.nodeLine(o.id()); f == nil || strings.Contains(f[2], "handshake") {
					return false
				}
			}
		}
		return true
	})
	for i, s := range nodes[primaries:] {
		s.ok("REPLICATE", nodes[i%primaries].id())
	}
	n.runUntil(20000, "the cluster ok everywhere", func() bool {
		for _, s := range nodes {
			if s.info("cluster_state") != "ok" {
				return false
			}
		}
		return true
	})
	return nodes
}

// dumpLogs prints the nodes' logs when a test failed.
func (n *simNet) dumpLogs() {
	if !n.t.Failed() || os.Getenv("SIM_LOGS") == "" {
		return
	}
	for _, s := range n.nodes {
		n.t.Logf("--- node %d (%d):\n%s", s.idx, s.port, s.logText())
	}
}
