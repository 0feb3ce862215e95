package cluster

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
)

// primaryOf returns the node that s says serves slot, by its CLUSTER NODES line.
func (s *simNode) ownerOf(slot int) string {
	for _, line := range strings.Split(s.do("NODES").Text(), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 {
			continue
		}
		for _, r := range f[8:] {
			if r[0] == '[' {
				continue
			}
			lo, hi, _ := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if hi != "" {
				b, _ = strconv.Atoi(hi)
			}
			if a <= slot && slot <= b {
				return f[0]
			}
		}
	}
	return ""
}

func TestSimCreate(t *testing.T) {
	net := newSimNet(t, 1)
	defer net.dumpLogs()
	nodes := net.create(3, 3, nil)
	for _, s := range nodes {
		if got := s.info("cluster_slots_assigned"); got != "16384" {
			t.Errorf("node %d: %s slots assigned", s.idx, got)
		}
		if got := s.info("cluster_size"); got != "3" {
			t.Errorf("node %d: cluster size %s", s.idx, got)
		}
	}
	net.run(3000)
	// Every node has the same view: the same owner for each slot, replicas of the right
	// primaries, everyone connected and nobody failing.
	for _, s := range nodes {
		for i, r := range nodes[3:] {
			f := s.nodeLine(r.id())
			if f == nil || !strings.Contains(f[2], "slave") || f[3] != nodes[i].id() {
				t.Errorf("node %d sees replica %d as %v", s.idx, r.idx, f)
			}
		}
		for _, o := range nodes {
			f := s.nodeLine(o.id())
			if f[7] != "connected" || strings.Contains(f[2], "fail") {
				t.Errorf("node %d sees node %d as %v", s.idx, o.idx, f)
			}
		}
		for _, slot := range []int{0, 5461, 16383} {
			if s.ownerOf(slot) != nodes[min(slot/5461, 2)].id() {
				t.Errorf("node %d: slot %d owned by %s", s.idx, slot, s.ownerOf(slot))
			}
		}
	}
	// Each replica follows its primary.
	for i, r := range nodes[3:] {
		if r.host.primary != nodes[i] {
			t.Errorf("replica %d replicates %v", r.idx, r.host.primary)
		}
	}
}

// TestSimFailover kills a primary: the others mark it PFAIL after the node timeout, FAIL once
// a majority of primaries reported it, and its replica wins an election, takes its slots with
// a new epoch and stops replicating; when the old primary returns it becomes its replica.
func TestSimFailover(t *testing.T) {
	net := newSimNet(t, 2)
	defer net.dumpLogs()
	nodes := net.create(3, 3, nil)
	net.run(2000)
	p, r := nodes[0], nodes[3]
	epochBefore, _ := strconv.Atoi(r.info("cluster_current_epoch"))
	killed := net.now
	p.kill()
	net.runUntil(10000, "the replica promoted", func() bool {
		return r.nodeLine(r.id()) != nil && strings.Contains(r.nodeLine(r.id())[2], "master")
	})
	took := net.now - killed
	// Node timeout 1000 ms, then FAIL, a 500-1000 ms delay, the election: a few seconds.
	if took > 5000 {
		t.Errorf("failover took %d ms of simulated time", took)
	}
	if r.host.primary != nil {
		t.Errorf("the promoted replica still replicates")
	}
	for _, s := range nodes[1:] {
		net.runUntil(3000, "every node seeing the new owner", func() bool { return s.ownerOf(0) == r.id() })
		if f := s.nodeLine(p.id()); !strings.Contains(f[2], "fail") || strings.Contains(f[2], "fail?") {
			t.Errorf("node %d sees the dead primary as %v", s.idx, f)
		}
	}
	epochAfter, _ := strconv.Atoi(r.info("cluster_my_epoch"))
	if epochAfter <= epochBefore {
		t.Errorf("new primary's epoch %d, the cluster's before %d", epochAfter, epochBefore)
	}
	if got := r.info("cluster_state"); got != "ok" {
		t.Errorf("cluster state %s after the failover", got)
	}
	// The old primary returns with its old configuration and is turned into a replica.
	p.restart()
	net.runUntil(10000, "the old primary following the new one", func() bool {
		f := p.nodeLine(p.id())
		return f != nil && strings.Contains(f[2], "slave") && f[3] == r.id() && p.host.primary == r
	})
	net.runUntil(10000, "the old primary's FAIL cleared everywhere", func() bool {
		for _, s := range nodes {
			if f := s.nodeLine(p.id()); strings.Contains(f[2], "fail") {
				return false
			}
		}
		return true
	})
}

// TestSimNoMajority: a primary cut off from one other primary only is not failed: PFAIL by
// that one is not a majority.
func TestSimNoMajority(t *testing.T) {
	net := newSimNet(t, 3)
	defer net.dumpLogs()
	nodes := net.create(3, 3, nil)
	net.run(2000)
	net.partition([]*simNode{nodes[0]}, []*simNode{nodes[1]}, true)
	net.runUntil(5000, "node 1 suspecting node 0", func() bool {
		return strings.Contains(nodes[1].nodeLine(nodes[0].id())[2], "fail?")
	})
	net.run(5000)
	for _, s := range nodes {
		if f := s.nodeLine(nodes[0].id()); strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?") || !strings.Contains(f[2], "master") {
			t.Errorf("node %d sees node 0 as %v", s.idx, f)
		}
	}
	if got := nodes[1].do("COUNT-FAILURE-REPORTS", nodes[0].id()).Int; got > 0 {
		// Node 1's own suspicion is not a report; only other primaries' are.
		t.Logf("node 1 holds %d failure reports about node 0", got)
	}
	net.partition([]*simNode{nodes[0]}, []*simNode{nodes[1]}, false)
	net.runUntil(5000, "node 1 seeing node 0 again", func() bool {
		return !strings.Contains(nodes[1].nodeLine(nodes[0].id())[2], "fail")
	})
}

// TestSimManualFailover runs CLUSTER FAILOVER: the primary pauses writes, the replica catches
// up with the paused offset, wins a forced-ack election, and the old primary follows it; no
// FAIL is ever raised.
func TestSimManualFailover(t *testing.T) {
	net := newSimNet(t, 4)
	defer net.dumpLogs()
	nodes := net.create(3, 3, nil)
	net.run(2000)
	p, r := nodes[1], nodes[4]
	p.host.write(1000)
	net.run(500)
	r.ok("FAILOVER")
	net.runUntil(5000, "the replica promoted", func() bool {
		return strings.Contains(r.nodeLine(r.id())[2], "master")
	})
	if p.host.pauses == 0 {
		t.Errorf("the primary did not pause its writes")
	}
	if got := r.host.offset; got != 1000 {
		t.Errorf("the replica took over at offset %d, the primary's was 1000", got)
	}
	net.runUntil(5000, "the old primary following", func() bool {
		f := p.nodeLine(p.id())
		return strings.Contains(f[2], "slave") && f[3] == r.id()
	})
	if p.host.paused != 0 {
		t.Errorf("the old primary still pauses writes")
	}
	for _, s := range nodes {
		if strings.Contains(s.do("NODES").Text(), "fail") {
			t.Errorf("node %d saw a failure during a manual failover:\n%s", s.idx, s.do("NODES").Text())
		}
	}
	// Refusals.
	if v := p.do("FAILOVER", "sideways"); v.Text() != "ERR syntax error" {
		t.Errorf("FAILOVER sideways: %v", v)
	}
	if v := r.do("FAILOVER"); v.Text() != "ERR You should send CLUSTER FAILOVER to a replica" {
		t.Errorf("FAILOVER on a primary: %v", v)
	}
}

// TestSimTakeover: CLUSTER FAILOVER TAKEOVER needs no majority: the replica of a primary that
// is cut from every other primary takes over with an epoch of its own.
func TestSimTakeover(t *testing.T) {
	net := newSimNet(t, 5)
	defer net.dumpLogs()
	nodes := net.create(3, 3, nil)
	net.run(2000)
	// Node 2 and its replica 5 alone with node 0 and 1 gone: no majority for an election.
	nodes[0].kill()
	nodes[1].kill()
	net.run(3000)
	nodes[5].ok("FAILOVER", "TAKEOVER")
	net.runUntil(2000, "the takeover", func() bool { return strings.Contains(nodes[5].nodeLine(nodes[5].id())[2], "master") })
	net.runUntil(5000, "node 2 following", func() bool { return nodes[2].nodeLine(nodes[2].id())[3] == nodes[5].id() })
	// The new primary's epoch beats its old primary's everywhere.
	if e5, e2 := nodes[5].nodeLine(nodes[5].id())[6], nodes[2].nodeLine(nodes[2].id())[6]; e5 == "3" || e5 != e2 {
		t.Errorf("after the takeover node 5 has epoch %s, node 2 sees %s", e5, e2)
	}
}

// TestSimEpochCollision: nodes created without SET-CONFIG-EPOCH all start at epoch 0; the
// collision handling leaves every primary with its own epoch.
func TestSimEpochCollision(t *testing.T) {
	net := newSimNet(t, 6)
	defer net.dumpLogs()
	var nodes []*simNode
	for range 5 {
		nodes = append(nodes, net.addNode(nil))
	}
	for _, s := range nodes[1:] {
		s.ok("MEET", "127.0.0.1", strconv.Itoa(nodes[0].port))
	}
	net.runUntil(30000, "distinct epochs", func() bool {
		seen := map[string]bool{}
		for _, s := range nodes {
			e := s.nodeLine(s.id())
			if e == nil || seen[e[6]] {
				return false
			}
			seen[e[6]] = true
		}
		return true
	})
}

// TestSimReplicaMigration: when a primary loses its only replica, a replica of a primary with
// two moves to it.
func TestSimReplicaMigration(t *testing.T) {
	net := newSimNet(t, 7)
	defer net.dumpLogs()
	nodes := net.create(3, 4, nil) // node 0 has two replicas: 3 and 6
	net.run(2000)
	nodes[4].kill() // node 1's only replica
	net.runUntil(20000, "a replica migrating to node 1", func() bool {
		for _, s := range []*simNode{nodes[3], nodes[6]} {
			if f := s.nodeLine(s.id()); f[3] == nodes[1].id() && s.host.primary == nodes[1] {
				return true
			}
		}
		return false
	})
	// With the barrier raised, nothing moves.
	net2 := newSimNet(t, 8)
	cfg := DefaultConfig()
	cfg.Enabled, cfg.NodeTimeout, cfg.MigrationBarrier = true, 1000, 2
	nodes2 := net2.create(3, 4, &cfg)
	net2.run(2000)
	nodes2[4].kill()
	net2.run(15000)
	for _, s := range []*simNode{nodes2[3], nodes2[6]} {
		if f := s.nodeLine(s.id()); f[3] != nodes2[0].id() {
			t.Errorf("with cluster-migration-barrier 2, replica %d moved to %s", s.idx, f[3])
		}
	}
}

// TestSimValidityFactor: a replica whose link to its primary has been down for long does not
// fail over (cluster-replica-validity-factor), unless the factor is 0.
func TestSimValidityFactor(t *testing.T) {
	for _, factor := range []int{1, 0} {
		net := newSimNet(t, 9)
		cfg := DefaultConfig()
		cfg.Enabled, cfg.NodeTimeout, cfg.ReplicaValidityFactor = true, 1000, factor
		nodes := net.create(3, 3, &cfg)
		net.run(2000)
		// The replica loses its primary for a long time (its data ages), then the primary dies.
		net.partition([]*simNode{nodes[3]}, []*simNode{nodes[0]}, true)
		net.run(15000)
		nodes[0].kill()
		net.partition([]*simNode{nodes[3]}, []*simNode{nodes[0]}, false)
		net.run(10000)
		promoted := strings.Contains(nodes[3].nodeLine(nodes[3].id())[2], "master")
		if promoted != (factor == 0) {
			t.Errorf("validity factor %d: promoted %v", factor, promoted)
		}
		if factor == 1 && !strings.Contains(nodes[3].logText(), "Disconnected from master for longer than allowed") {
			t.Errorf("the replica did not say why it does not fail over")
		}
	}
}

// TestSimFullCoverage: an unassigned slot makes the cluster fail, unless
// cluster-require-full-coverage is no.
func TestSimFullCoverage(t *testing.T) {
	net := newSimNet(t, 10)
	nodes := net.create(3, 0, nil)
	nodes[0].ok("DELSLOTS", "0")
	net.runUntil(3000, "the cluster failing", func() bool { return nodes[0].info("cluster_state") == "fail" })
	cfg := nodes[0].cfg
	cfg.RequireFullCoverage = false
	nodes[0].c.SetConfig(cfg)
	net.runUntil(6000, "the cluster ok without full coverage", func() bool { return nodes[0].info("cluster_state") == "ok" })
}

// TestSimForget: a forgotten node is not added back by gossip for a minute, and messages it
// sends, with forged epochs, change nothing and are logged.
func TestSimForget(t *testing.T) {
	net := newSimNet(t, 11)
	defer net.dumpLogs()
	nodes := net.create(3, 0, nil)
	net.run(2000)
	extra := net.addNode(nil)
	extra.ok("MEET", "127.0.0.1", strconv.Itoa(nodes[0].port))
	net.runUntil(10000, "the extra node known everywhere", func() bool {
		for _, s := range nodes {
			if s.nodeLine(extra.id()) == nil {
				return false
			}
		}
		return true
	})
	extra.kill()
	for _, s := range nodes {
		s.ok("FORGET", extra.id())
	}
	net.run(5000)
	for _, s := range nodes {
		if s.nodeLine(extra.id()) != nil {
			t.Errorf("node %d knows the forgotten node again", s.idx)
		}
	}
	// The forgotten node sends a PING claiming huge epochs and node 0's slots.
	epoch := nodes[1].info("cluster_current_epoch")
	forged := &Message{Type: MsgPing, CurrentEpoch: 1 << 40, ConfigEpoch: 1 << 40, Port: uint16(extra.port), CPort: uint16(extra.port + portIncr), Flags: FlagMaster}
	copy(forged.Sender[:], extra.id())
	for i := range 100 {
		forged.MySlots.Set(i)
	}
	// A new connection from the forgotten node.
	l := nodes[1].c.Accept(&simConn{net: net, owner: nodes[1], connected: true, peer: &simConn{net: net, owner: extra, closed: true}})
	nodes[1].c.Receive(l, forged.Append(nil))
	for _, typ := range []MsgType{MsgFail, MsgUpdate, MsgFailoverAuthRequest} {
		m := *forged
		m.Type = typ
		nodes[1].c.Receive(l, m.Append(nil))
	}
	net.run(2000)
	if got := nodes[1].info("cluster_current_epoch"); got != epoch {
		t.Errorf("current epoch %s after a forged message, was %s", got, epoch)
	}
	if nodes[1].ownerOf(0) != nodes[0].id() {
		t.Errorf("slot 0 moved to %s", nodes[1].ownerOf(0))
	}
	if !strings.Contains(nodes[1].logText(), "ignoring the state in a cluster bus message from a node not in this cluster") {
		t.Errorf("the forged message was not logged")
	}
}

// TestSimVerifyData: keys loaded at start in a slot without owner make this node its owner;
// keys in a slot another node owns put the slot in importing state, for redis-cli --cluster fix.
func TestSimVerifyData(t *testing.T) {
	net := newSimNet(t, 13)
	nodes := net.create(3, 0, nil)
	a := nodes[0]
	a.ok("DELSLOTS", "5")
	a.host.keys[5] = 3
	a.host.keys[6000] = 2 // node 1's
	a.c.VerifyData()
	if a.ownerOf(5) != a.id() {
		t.Errorf("slot 5, with keys and no owner, is %q's", a.ownerOf(5))
	}
	line := a.nodeLine(a.id())
	if !strings.Contains(strings.Join(line, " "), "[6000-<-"+nodes[1].id()+"]") {
		t.Errorf("slot 6000 not importing from its owner: %v", line)
	}
}

// TestSimMalformedNames: a known node's message carrying gossip about a node with a malformed ID
// or address, or a hostname that could not be written in the nodes file, and a MEET from a
// sender whose ID is not one, leave CLUSTER NODES well formed and the nodes file loadable.
func TestSimMalformedNames(t *testing.T) {
	net := newSimNet(t, 14)
	nodes := net.create(3, 0, nil)
	net.run(2000)
	a, b := nodes[0], nodes[1]
	var l *Link
	a.c.mu.Lock()
	for _, n := range a.c.order {
		if n.name.String() == b.id() {
			l = n.inLink
		}
	}
	a.c.mu.Unlock()
	if l == nil {
		t.Fatal("no link from node 1")
	}
	m := &Message{Type: MsgPing, Port: uint16(b.port), CPort: uint16(b.port + portIncr), Flags: FlagMaster, ConfigEpoch: 2}
	copy(m.Sender[:], b.id())
	for _, g := range []struct{ name, ip string }{
		{"this is not a node ID at all, not at al", "127.0.0.1"},
		{strings.Repeat("a", NameLen), "127.0.0.1\nfake line"},
		{strings.Repeat("b", NameLen), "1.2.3.4 5"},
	} {
		var e Gossip
		copy(e.Node[:], g.name)
		copy(e.IP[:], g.ip)
		e.Port, e.CPort, e.Flags = 1, 2, FlagMaster|FlagMyself
		m.Gossip = append(m.Gossip, e)
	}
	m.SetHostname("evil\nhost name")
	for i := range Slots {
		if b.host.node.c.Route().Serves(i, false) {
			m.MySlots.Set(i)
		}
	}
	a.c.Receive(l, m.Append(nil))
	meet := &Message{Type: MsgMeet, Port: 9, CPort: 10}
	copy(meet.Sender[:], "NOT-A-NODE-ID"+strings.Repeat("!", NameLen-13))
	l2 := a.c.Accept(&simConn{net: net, owner: a, connected: true, peer: &simConn{net: net, owner: b, closed: true}})
	a.c.Receive(l2, meet.Append(nil))
	net.run(1000)
	text := a.do("NODES").Text()
	if got := strings.Count(text, "\n"); got != 3 {
		t.Errorf("CLUSTER NODES has %d lines:\n%s", got, text)
	}
	if strings.Count(text, "myself") != 1 || strings.Contains(text, "evil") {
		t.Errorf("CLUSTER NODES:\n%s", text)
	}
	for _, want := range []string{"malformed node ID or address", "malformed announced hostname", "sender is not a node ID"} {
		if !strings.Contains(a.logText(), want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	a.kill()
	a.restart()
	if got := a.info("cluster_known_nodes"); got != "3" {
		t.Errorf("after a restart from its nodes file the node knows %s nodes", got)
	}
}

// FuzzReceive feeds arbitrary messages to a node of a simulated three-node cluster, on the link
// of a node it knows and on a new connection, with the signature, length and version made
// right and, half the time, a known node's name as the sender: whatever they say, the node must
// not panic, and its nodes file must stay loadable.
func FuzzReceive(f *testing.F) {
	for _, b := range golden(f) {
		f.Add(b, true)
	}
	net := newSimNet(f, 15)
	nodes := net.create(3, 0, nil)
	net.run(2000)
	a, b := nodes[0], nodes[1]
	var known *Link
	a.c.mu.Lock()
	for _, n := range a.c.order {
		if n.name.String() == b.id() {
			known = n.inLink
		}
	}
	a.c.mu.Unlock()
	f.Fuzz(func(t *testing.T, msg []byte, asKnown bool) {
		if len(msg) < HeaderLen {
			return
		}
		msg = append([]byte(nil), msg...)
		copy(msg, "RCmb")
		binary.BigEndian.PutUint32(msg[offTotlen:], uint32(len(msg)))
		binary.BigEndian.PutUint16(msg[offVer:], ProtoVersion)
		if asKnown {
			copy(msg[offSender:], b.id())
		}
		if known != nil && !known.freed {
			a.c.Receive(known, msg)
		}
		l := a.c.Accept(&simConn{net: net, owner: a, connected: true, peer: &simConn{net: net, owner: b, closed: true}})
		a.c.Receive(l, msg)
		net.run(10)
		a.c.mu.Lock()
		text := string(a.c.configText())
		a.c.mu.Unlock()
		c := &Cluster{nodes: map[NodeID]*node{}, blacklist: map[NodeID]int64{}, env: simEnv{a}, log: a.c.log}
		if err := c.parseConfig(strings.NewReader(text), "fuzzed"); err != nil {
			t.Fatalf("the nodes file no longer loads: %v\n%s", err, text)
		}
	})
}

// TestSimReplicaNoFailover: a replica with cluster-replica-no-failover never takes over by
// itself, and is flagged nofailover for the others; CLUSTER FAILOVER FORCE still promotes it.
func TestSimReplicaNoFailover(t *testing.T) {
	net := newSimNet(t, 16)
	nodes := net.create(3, 3, nil)
	r := nodes[3]
	cfg := r.cfg
	cfg.ReplicaNoFailover = true
	r.c.SetConfig(cfg)
	net.runUntil(5000, "the others seeing the nofailover flag", func() bool {
		return strings.Contains(nodes[1].nodeLine(r.id())[2], "nofailover")
	})
	nodes[0].kill()
	net.run(10000)
	if f := r.nodeLine(r.id()); !strings.Contains(f[2], "slave") {
		t.Fatalf("a nofailover replica took over: %v", f)
	}
	r.ok("FAILOVER", "FORCE")
	net.runUntil(5000, "the forced failover", func() bool { return strings.Contains(r.nodeLine(r.id())[2], "master") })
}

// TestSimNoReplicaMigration: with cluster-allow-replica-migration no, no replica moves to an
// orphaned primary.
func TestSimNoReplicaMigration(t *testing.T) {
	net := newSimNet(t, 7) // the seed of TestSimReplicaMigration, where a replica does move
	cfg := DefaultConfig()
	cfg.Enabled, cfg.NodeTimeout, cfg.AllowReplicaMigration = true, 1000, false
	nodes := net.create(3, 4, &cfg)
	net.run(2000)
	nodes[4].kill()
	net.run(15000)
	for _, s := range []*simNode{nodes[3], nodes[6]} {
		if f := s.nodeLine(s.id()); f[3] != nodes[0].id() {
			t.Errorf("with cluster-allow-replica-migration no, replica %d moved to %s", s.idx, f[3])
		}
	}
}

// TestSimHostnames: a node's cluster-announce-hostname reaches the others, who show it in
// CLUSTER NODES and, with cluster-preferred-endpoint-type hostname, redirect to it.
func TestSimHostnames(t *testing.T) {
	net := newSimNet(t, 17)
	nodes := net.create(3, 0, nil)
	b := nodes[1]
	cfg := b.cfg
	cfg.AnnounceHostname = "node-b.example"
	b.c.SetConfig(cfg)
	a := nodes[0]
	net.runUntil(5000, "the hostname known", func() bool {
		return strings.HasSuffix(a.nodeLine(b.id())[1], ",node-b.example")
	})
	acfg := a.cfg
	acfg.PreferredEndpoint = "hostname"
	a.c.SetConfig(acfg)
	var q Query
	q.Add([]byte("{c}x")) // slot 7365, node 1's
	if got := a.c.Route().Check(&q, CommandKind{}, func([]byte) bool { return false }); got != "MOVED 7365 node-b.example:7001" {
		t.Errorf("redirection with hostnames: %q", got)
	}
	// CLUSTER SLOTS: the hostname first, the IP in the map.
	v := a.do("SLOTS")
	for _, r := range v.Elems {
		if r.Elems[0].Int == 5461 {
			n := r.Elems[2]
			if n.Elems[0].Text() != "node-b.example" || len(n.Elems[3].Elems) != 2 || n.Elems[3].Elems[1].Text() != "127.0.0.1" {
				t.Errorf("CLUSTER SLOTS entry: %v", n)
			}
		}
	}
}
