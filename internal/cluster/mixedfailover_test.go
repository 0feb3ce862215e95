package cluster_test

import (
	"strings"
	"testing"
	"time"
)

// TestMixedFailover: in a cluster of two redis-server and two bloomd primaries, each with a
// replica of its own kind (added with redis-cli --cluster add-node --cluster-slave), a killed
// bloomd primary is replaced by its replica with the votes of the Redis primaries, and a killed
// Redis primary by its replica with the votes of the bloomd primaries: failure reports, FAIL,
// the failover auth request and ack, and the new configuration pass between the two kinds.
func TestMixedFailover(t *testing.T) {
	const timeout = 2000
	r0, b0, r1, b1 := startRedisNode(t, timeout), startBloomdNode(t, timeout), startRedisNode(t, timeout), startBloomdNode(t, timeout)
	create(t, []*pnode{r0, b0, r1, b1}, 0)
	r0r, b0r := startRedisNode(t, timeout), startBloomdNode(t, timeout)
	for _, pair := range [][2]*pnode{{r0r, r0}, {b0r, b0}} {
		replica, primary := pair[0], pair[1]
		out, err := redisCLI(t, time.Minute, "--cluster", "add-node", replica.Addr, primary.Addr,
			"--cluster-slave", "--cluster-master-id", primary.do("CLUSTER", "MYID"))
		if err != nil || !strings.Contains(out, "[OK] New node added correctly.") {
			t.Fatalf("redis-cli --cluster add-node %s as a replica of %s: %v\n%s", replica.Addr, primary.Addr, err, out)
		}
		waitFor(t, 30*time.Second, "the replica connected", func() bool {
			r, err := replica.Do("ROLE")
			return err == nil && strings.HasPrefix(r, "slave") && strings.Contains(r, "connected")
		})
	}
	alive := []*pnode{r0, b0, r1, b1, r0r, b0r}
	waitFor(t, 20*time.Second, "six nodes known everywhere and the cluster ok", func() bool {
		for _, n := range alive {
			if n.clusterInfo("cluster_known_nodes") != "6" || n.clusterInfo("cluster_state") != "ok" {
				return false
			}
		}
		return true
	})
	failover := func(victim, replica *pnode, voters []*pnode) {
		t.Helper()
		vid, rid := victim.do("CLUSTER", "MYID"), replica.do("CLUSTER", "MYID")
		start := time.Now()
		victim.Kill()
		waitFor(t, 30*time.Second, "the replica promoted", func() bool {
			r, err := replica.Do("ROLE")
			return err == nil && strings.HasPrefix(r, "master")
		})
		took := time.Since(start)
		waitFor(t, 20*time.Second, "every node seeing the new primary and the old one failed", func() bool {
			for _, n := range voters {
				f, old := nodesLine(n, rid), nodesLine(n, vid)
				if f == nil || !strings.Contains(f[2], "master") || len(f) < 9 || old == nil || !strings.Contains(old[2], "fail") {
					return false
				}
				if n.clusterInfo("cluster_state") != "ok" {
					return false
				}
			}
			return true
		})
		t.Logf("%s replaced by its replica in %v", victim.Addr, took.Round(time.Millisecond))
	}
	failover(b0, b0r, []*pnode{r0, r1, b1, r0r})
	failover(r0, r0r, []*pnode{r1, b1, b0r})
}
