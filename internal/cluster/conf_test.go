package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// normalize returns the lines of a nodes file sorted, with the ping and pong times (which a
// node sets to "now" or 0 when it loads them) and the link state dropped.
func normalize(text string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[0] != "vars" {
			f[4], f[5], f[7] = "_", "_", "_"
		}
		out = append(out, strings.Join(f, " "))
	}
	slices.Sort(out)
	return out
}

// TestNodesFileFromRedis loads nodes files written by redis-server 7.0 (a replica with a
// hostname, a migrating and an importing slot) and writes them back the same.
func TestNodesFileFromRedis(t *testing.T) {
	for _, name := range []string{"redis-node0.conf", "redis-node1.conf"} {
		orig, err := os.ReadFile(filepath.Join("testdata", "nodes", name))
		if err != nil {
			t.Fatal(err)
		}
		net := newSimNet(t, 1)
		cfg := DefaultConfig()
		cfg.Enabled = true
		port := 7000
		for _, line := range strings.Split(string(orig), "\n") {
			// This node announces the ports Redis had: those of its own line.
			if f := strings.Fields(line); len(f) > 2 && strings.Contains(f[2], "myself") {
				addr := strings.TrimPrefix(f[1], "127.0.0.1:")
				p, bus, _ := strings.Cut(addr, "@")
				port, _ = strconv.Atoi(p)
				cfg.AnnounceBusPort, _ = strconv.Atoi(bus)
			}
		}
		s := &simNode{net: net, dir: t.TempDir(), port: port, cfg: cfg, conns: map[*simConn]bool{}}
		s.host = &simHost{node: s, keys: map[int]int{}}
		if err := os.WriteFile(filepath.Join(s.dir, "nodes.conf"), orig, 0o644); err != nil {
			t.Fatal(err)
		}
		s.start()
		c := s.c
		c.mu.Lock()
		got := string(c.configText())
		me := c.myself
		nodes := len(c.nodes)
		var migrating, importing int
		var replica *node
		for i := range Slots {
			if c.migratingTo[i] != nil {
				migrating++
			}
			if c.importingFrom[i] != nil {
				importing++
			}
		}
		for _, n := range c.order {
			if n.isReplica() {
				replica = n
			}
		}
		c.mu.Unlock()
		if !slices.Equal(normalize(got), normalize(string(orig))) {
			t.Errorf("%s written back as\n%s\nnot\n%s", name, got, orig)
		}
		if nodes != 4 || me.numSlots == 0 || migrating+importing != 1 || replica == nil || replica.hostname != "replica-of-first.example" || replica.primary == nil {
			t.Errorf("%s: %d nodes, %d slots of mine, %d migrating, %d importing, replica %+v", name, nodes, me.numSlots, migrating, importing, replica)
		}
		if c.currentEpoch != 3 {
			t.Errorf("%s: currentEpoch %d", name, c.currentEpoch)
		}
		// The file a node saves reads back to the same text.
		c.mu.Lock()
		err = c.saveConfig()
		c.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		saved, _ := os.ReadFile(filepath.Join(s.dir, "nodes.conf"))
		if string(saved) != got {
			t.Errorf("saved\n%s\nnot\n%s", saved, got)
		}
		if st, _ := os.Stat(filepath.Join(s.dir, "nodes.conf")); st.Mode().Perm() != 0o644 {
			t.Errorf("nodes.conf mode %v", st.Mode())
		}
		if left, _ := filepath.Glob(filepath.Join(s.dir, ".nodes.conf.tmp-*")); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
		c.Close()
	}
}

// TestNodesFileDamaged: a damaged nodes file stops the node with the line and the fault.
func TestNodesFileDamaged(t *testing.T) {
	me := "6d171f6c2791f17ac0a8e2fcaef0557e886468bf"
	good := me + " 127.0.0.1:39339@38939 myself,master - 0 0 1 connected 0-5460\nvars currentEpoch 3 lastVoteEpoch 0\n"
	cases := []struct{ text, want string }{
		{"garbage\n", "line 1: a node line has at least 8 fields"},
		{strings.Replace(good, me, "XYZ", 1), `"XYZ" is not a node ID`},
		{strings.Replace(good, "127.0.0.1:39339", "127.0.0.1", 1), "has no port"},
		{strings.Replace(good, ":39339", ":port", 1), "bad port"},
		{strings.Replace(good, "@38939", "@x", 1), "bad bus port"},
		{strings.Replace(good, "myself,master", "myself,wizard", 1), `unknown flag "wizard"`},
		{strings.Replace(good, "0-5460", "0-99999", 1), "out of range"},
		{strings.Replace(good, "0-5460", "[5->-nonode]", 1), "is not a node ID"},
		{strings.Replace(good, "0-5460", "[5", 1), "is malformed"},
		{strings.Replace(good, " 1 connected", " x connected", 1), `config epoch "x"`},
		{strings.Replace(good, "currentEpoch 3", "currentEpoch", 1), "pairs"},
		{strings.Replace(good, "myself,", "", 1), "no node is marked myself"},
		{good + good, "two nodes are marked myself"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "nodes.conf"), []byte(c.text), 0o644)
		net := newSimNet(t, 1)
		s := &simNode{net: net, dir: dir}
		cfg := DefaultConfig()
		_, err := New(cfg, Options{Dir: dir, Port: 7000, Env: simEnv{s}, Host: &simHost{node: s}})
		if !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

// TestNodesFileLocked: two nodes cannot share a nodes file.
func TestNodesFileLocked(t *testing.T) {
	net := newSimNet(t, 1)
	a := net.addNode(nil)
	s := &simNode{net: net, dir: a.dir}
	_, err := New(DefaultConfig(), Options{Dir: a.dir, Port: 7001, Env: simEnv{s}, Host: &simHost{node: s}})
	if err == nil || !strings.Contains(err.Error(), "already used by a different cluster node") {
		t.Fatalf("second node on one nodes file: %v", err)
	}
	a.kill()
	c, err := New(DefaultConfig(), Options{Dir: a.dir, Port: 7001, Env: simEnv{s}, Host: &simHost{node: s}})
	if err != nil {
		t.Fatalf("after the first node stopped: %v", err)
	}
	c.Close()
}

// TestRestartKeepsState: a node restarted from its nodes file has the same ID, slots, epochs
// and vote.
func TestRestartKeepsState(t *testing.T) {
	net := newSimNet(t, 12)
	nodes := net.create(3, 3, nil)
	net.run(2000)
	nodes[0].kill()
	net.runUntil(10000, "the failover", func() bool { return strings.Contains(nodes[3].nodeLine(nodes[3].id())[2], "master") })
	before := map[int]string{}
	for _, s := range nodes[1:] {
		s.c.mu.Lock()
		before[s.idx] = strings.Join(normalize(string(s.c.configText())), "\n")
		s.c.mu.Unlock()
		s.kill()
	}
	for _, s := range nodes[1:] {
		s.restart()
		s.c.mu.Lock()
		after := strings.Join(normalize(string(s.c.configText())), "\n")
		s.c.mu.Unlock()
		if after != before[s.idx] {
			t.Errorf("node %d after a restart:\n%s\nbefore:\n%s", s.idx, after, before[s.idx])
		}
	}
}
