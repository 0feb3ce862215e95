package cluster

import (
	"strconv"
	"testing"
)

// TestRouteCheck covers getNodeByQuery's cases: served here, MOVED, CROSSSLOT, an unassigned
// slot, a slot being migrated (ASK for a missing key, TRYAGAIN for some keys missing), a slot
// being imported (ASKING), READONLY on a replica, and the cluster down.
func TestRouteCheck(t *testing.T) {
	net := newSimNet(t, 20)
	nodes := net.create(3, 3, nil)
	net.run(2000)
	a, b, ra := nodes[0], nodes[1], nodes[3]
	keyIn := func(n int) string { // a key of slot n
		for i := 0; ; i++ {
			k := "k" + strconv.Itoa(i)
			if KeySlot([]byte(k)) == n {
				return k
			}
		}
	}
	k0 := keyIn(0)          // node 0's
	k6000 := keyIn(6000)    // node 1's
	k0b := "{" + k0 + "}.b" // another key of slot 0
	have := map[string]bool{}
	exists := func(k []byte) bool { return have[string(k)] }
	check := func(s *simNode, k CommandKind, keys ...string) string {
		var q Query
		for _, key := range keys {
			q.Add([]byte(key))
		}
		return s.c.Route().Check(&q, k, exists)
	}
	moved := func(slot int, to *simNode) string {
		return "MOVED " + strconv.Itoa(slot) + " 127.0.0.1:" + strconv.Itoa(to.port)
	}
	w := CommandKind{Write: true}
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"no keys", check(a, w), ""},
		{"own slot", check(a, w, k0), ""},
		{"same key twice", check(a, w, k0, k0), ""},
		{"two keys, one slot", check(a, w, k0, k0b), ""},
		{"other node", check(a, w, k6000), moved(6000, b)},
		{"cross slot", check(a, w, k0, k6000), "CROSSSLOT Keys in request don't hash to the same slot"},
		{"replica write", check(ra, w, k0), moved(0, a)},
		{"replica read", check(ra, CommandKind{}, k0), moved(0, a)},
		{"replica READONLY read", check(ra, CommandKind{ReadOnly: true}, k0), ""},
		{"replica READONLY write", check(ra, CommandKind{ReadOnly: true, Write: true}, k0), moved(0, a)},
		{"replica READONLY other shard", check(ra, CommandKind{ReadOnly: true}, k6000), moved(6000, b)},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}

	// Slot 0 migrates from node 0 to node 1.
	b.ok("SETSLOT", "0", "IMPORTING", a.id())
	a.ok("SETSLOT", "0", "MIGRATING", b.id())
	have[k0] = true
	cases = []struct {
		name string
		got  string
		want string
	}{
		{"migrating, key here", check(a, w, k0), ""},
		{"migrating, key gone", check(a, w, k0b), "ASK 0 127.0.0.1:" + strconv.Itoa(b.port)},
		{"migrating, some keys gone", check(a, w, k0, k0b), "TRYAGAIN Multiple keys request during rehashing of slot"},
		{"migrating, MIGRATE", check(a, CommandKind{Write: true, Migrate: true}, k0b), ""},
		{"importing, no ASKING", check(b, w, k0b), moved(0, a)},
		{"importing, ASKING", check(b, CommandKind{Write: true, Asking: true}, k0b), ""},
		{"importing, ASKING, two keys, one missing", check(b, CommandKind{Write: true, Asking: true}, k0, k0b), "TRYAGAIN Multiple keys request during rehashing of slot"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	// The slot moves: node 1 owns it, and everyone learns.
	delete(have, k0)
	b.ok("SETSLOT", "0", "NODE", b.id())
	a.ok("SETSLOT", "0", "NODE", b.id())
	net.runUntil(3000, "node 2 learning slot 0's owner", func() bool { return nodes[2].ownerOf(0) == b.id() })
	if got := check(nodes[2], w, k0); got != moved(0, b) {
		t.Errorf("after the move, node 2: %q", got)
	}
	if got := check(b, w, k0); got != "" {
		t.Errorf("after the move, node 1: %q", got)
	}
	// An unassigned slot, and the cluster down.
	b.ok("DELSLOTS", "0")
	if got := check(b, w, k0); got != "CLUSTERDOWN Hash slot not served" {
		t.Errorf("unassigned slot: %q", got)
	}
	net.runUntil(3000, "the cluster failing", func() bool { return b.info("cluster_state") == "fail" })
	if got := check(b, w, k6000); got != "CLUSTERDOWN The cluster is down" {
		t.Errorf("cluster down: %q", got)
	}
	cfg := b.cfg
	cfg.AllowReadsWhenDown = true
	b.c.SetConfig(cfg)
	if got := check(b, w, k6000); got != "CLUSTERDOWN The cluster is down and only accepts read commands" {
		t.Errorf("cluster down, reads allowed, a write: %q", got)
	}
	if got := check(b, CommandKind{}, k6000); got != "" {
		t.Errorf("cluster down, reads allowed, a read: %q", got)
	}
}

// TestQueryAllocs: adding the keys of a command and checking them allocates nothing.
func TestQueryAllocs(t *testing.T) {
	net := newSimNet(t, 21)
	nodes := net.create(3, 0, nil)
	r := nodes[0].c.Route()
	key := []byte("{b}a") // slot 3300, node 0's
	var q Query
	n := testing.AllocsPerRun(100, func() {
		q.Reset()
		for range 6 {
			q.Add(key)
		}
		r.Check(&q, CommandKind{Write: true}, func([]byte) bool { return true })
	})
	if n != 0 {
		t.Errorf("%v allocations per check", n)
	}
}
