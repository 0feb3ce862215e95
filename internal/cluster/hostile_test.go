package cluster_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/cluster"
)

// TestHostileBusTraffic sends a bloomd node's bus port garbage, truncated and oversized
// messages, messages of unknown types and versions, and messages with forged epochs from a node
// the cluster forgot: the node logs each clearly, never crashes, and its view of the cluster
// does not change.
func TestHostileBusTraffic(t *testing.T) {
	var nodes []*pnode
	for range 3 {
		nodes = append(nodes, startBloomdNode(t, 2000))
	}
	create(t, nodes, 0)
	target := nodes[0]
	busAddr := "127.0.0.1:" + strconv.Itoa(target.bus)
	epoch := target.clusterInfo("cluster_current_epoch")
	myEpoch := target.clusterInfo("cluster_my_epoch")

	// A fourth node joins, then is forgotten by everyone and stopped.
	extra := startBloomdNode(t, 2000)
	extra.do("CLUSTER", "MEET", "127.0.0.1", target.port(), strconv.Itoa(target.bus))
	extraID := extra.do("CLUSTER", "MYID")
	waitFor(t, 20*time.Second, "the fourth node known to all", func() bool {
		for _, n := range nodes {
			if nodesLine(n, extraID) == nil {
				return false
			}
		}
		return true
	})
	extra.Close()
	for _, n := range nodes {
		n.do("CLUSTER", "FORGET", extraID)
	}

	send := func(b []byte, wait bool) {
		t.Helper()
		c, err := net.Dial("tcp", busAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(b)
		if wait {
			c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			buf := make([]byte, 65536)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
		}
	}
	forged := func(typ cluster.MsgType) []byte {
		m := &cluster.Message{Type: typ, CurrentEpoch: 1 << 50, ConfigEpoch: 1 << 50, Port: 1, CPort: 2, Flags: cluster.FlagMaster}
		copy(m.Sender[:], extraID)
		for i := range 16384 {
			m.MySlots.Set(i)
		}
		copy(m.About[:], target.do("CLUSTER", "MYID"))
		m.UpdateEpoch = 1 << 50
		copy(m.UpdateNode[:], target.do("CLUSTER", "MYID"))
		return m.Append(nil)
	}
	valid := forged(cluster.MsgPing)
	withField := func(off int, v uint16) []byte {
		b := append([]byte(nil), valid...)
		binary.BigEndian.PutUint16(b[off:], v)
		return b
	}
	send([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), true)  // not a bus message
	send([]byte("RCmb\x7f\xff\xff\xff"), true)               // 2 GB announced
	send([]byte("RCmb\x00\x00\x00\x10"), true)               // shorter than a header
	send(valid[:1000], false)                                // truncated
	send(withField(8, 9), true)                              // protocol version 9
	send(withField(12, 77), true)                            // type 77
	send(append(withField(14, 3), make([]byte, 0)...), true) // 3 gossip sections announced, none there
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20 { // random damage to a valid message
		b := append([]byte(nil), valid...)
		for range 8 {
			b[8+rnd.IntN(len(b)-8)] = byte(rnd.IntN(256))
		}
		send(b, false)
	}
	// Forged messages from the forgotten node, on a connection of their own.
	var all []byte
	for _, typ := range []cluster.MsgType{cluster.MsgPing, cluster.MsgFail, cluster.MsgUpdate, cluster.MsgFailoverAuthRequest, cluster.MsgPong} {
		all = append(all, forged(typ)...)
	}
	send(all, true)

	time.Sleep(time.Second)
	if r, err := target.Do("PING"); err != nil || r != "PONG" {
		t.Fatalf("the node does not answer after the traffic: %v %v", r, err)
	}
	for _, n := range nodes {
		if got := n.clusterInfo("cluster_current_epoch"); got != epoch {
			t.Errorf("%s: current epoch %s after forged messages, was %s", n.Addr, got, epoch)
		}
		if got := n.clusterInfo("cluster_state"); got != "ok" {
			t.Errorf("%s: cluster state %s", n.Addr, got)
		}
		if nodesLine(n, extraID) != nil {
			t.Errorf("%s knows the forgotten node again", n.Addr)
		}
	}
	if got := target.clusterInfo("cluster_my_epoch"); got != myEpoch {
		t.Errorf("the target's epoch moved from %s to %s", myEpoch, got)
	}
	log, _ := os.ReadFile(filepath.Join(target.Dir, "bloomd.log"))
	for _, want := range []string{
		"bad message length or signature received from the cluster bus",
		"message too large",
		"cluster bus connection closed in the middle of a message",
		"unsupported protocol version 9",
		"unknown message type 77",
		"cannot hold its 3 gossip sections",
		"ignoring the state in a cluster bus message from a node not in this cluster",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	if strings.Contains(string(log), "panic") {
		t.Errorf("a panic was logged")
	}
}
