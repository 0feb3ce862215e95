package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestCreateSixBloomdNodes: redis-cli --cluster create joins six bloomd nodes as three
// primaries with a replica each; --cluster check finds nothing wrong; go-redis's ClusterClient
// and redis-py's RedisCluster add to and test filters in every slot.
func TestCreateSixBloomdNodes(t *testing.T) {
	var nodes []*pnode
	for range 6 {
		nodes = append(nodes, startBloomdNode(t, 2000))
	}
	create(t, nodes, 1)
	out, err := redisCLI(t, time.Minute, "--cluster", "check", nodes[0].Addr)
	if err != nil || !strings.Contains(out, "[OK] All nodes agree about slots configuration.") ||
		!strings.Contains(out, "[OK] All 16384 slots covered.") || strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERR]") {
		t.Fatalf("redis-cli --cluster check: %v\n%s", err, out)
	}
	if strings.Count(out, "slots: (0 slots) slave") != 3 {
		t.Errorf("--cluster check shows no three replicas:\n%s", out)
	}
	for _, n := range nodes {
		if got := n.do("INFO", "cluster"); !strings.Contains(got, "cluster_enabled:1") {
			t.Errorf("%s INFO cluster: %q", n.Addr, got)
		}
	}

	// go-redis: one filter per slot range of a few hundred slots, then every item of each.
	ctx := context.Background()
	c := clusterClient(t, nodes)
	const filters, items = 64, 50
	key := func(i int) string { return keyFor(i * 16384 / filters) }
	for i := range filters {
		if err := c.Do(ctx, "BF.RESERVE", key(i), "0.001", "1000").Err(); err != nil {
			t.Fatalf("BF.RESERVE %s: %v", key(i), err)
		}
		for j := range items {
			if n, err := c.Do(ctx, "BF.ADD", key(i), fmt.Sprintf("item-%d", j)).Bool(); err != nil || !n {
				t.Fatalf("BF.ADD %s: %v %v", key(i), n, err)
			}
		}
	}
	for i := range filters {
		args := []any{"BF.MEXISTS", key(i)}
		for j := range items {
			args = append(args, fmt.Sprintf("item-%d", j))
		}
		got, err := c.Do(ctx, args...).BoolSlice()
		if err != nil {
			t.Fatalf("BF.MEXISTS %s: %v", key(i), err)
		}
		for j, v := range got {
			if !v {
				t.Fatalf("%s lost item-%d", key(i), j)
			}
		}
	}
	// Every filter is on its primary and that primary's replica: twice in all.
	waitFor(t, 10*time.Second, "the replicas holding their primaries' filters", func() bool {
		total := 0
		for _, n := range nodes {
			if k, _ := n.Do("DBSIZE"); k != "" {
				var x int
				fmt.Sscan(k, &x)
				total += x
			}
		}
		return total == 2*filters
	})
	// A command on the wrong node is redirected; READONLY serves a replica's reads.
	var replica *pnode
	for _, n := range nodes {
		if strings.HasPrefix(n.do("ROLE"), "slave") {
			replica = n
			break
		}
	}
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	var mine string
	for i := range filters {
		if p, _ := c.MasterForKey(ctx, key(i)); p != nil && strings.Contains(replica.do("ROLE"), strings.Split(p.Options().Addr, ":")[1]) {
			mine = key(i)
			break
		}
	}
	if mine == "" {
		t.Fatal("no filter of the replica's primary")
	}
	if err := rc.Do(ctx, "BF.EXISTS", mine, "item-1").Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Errorf("BF.EXISTS on a replica without READONLY: %v, want MOVED", err)
	}
	pipe := rc.Pipeline()
	pipe.Do(ctx, "READONLY")
	exists := pipe.Do(ctx, "BF.EXISTS", mine, "item-1")
	add := pipe.Do(ctx, "BF.ADD", mine, "new")
	pipe.Exec(ctx)
	if v, err := exists.Bool(); err != nil || !v {
		t.Errorf("BF.EXISTS on a replica after READONLY: %v %v", v, err)
	}
	if err := add.Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Errorf("BF.ADD on a replica after READONLY: %v, want MOVED", err)
	}

	// redis-py's RedisCluster: Debian's python3-redis, or a python3 on PATH with redis-py.
	py := ""
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import redis.cluster").Run() == nil {
			py = path
			break
		}
	}
	if py == "" {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatalf("no python3 with redis-py's cluster client (apt-get install python3-redis), and %s=1 requires it", redistest.RequireEnv)
		}
		t.Log("no python3 with redis-py's cluster client (apt-get install python3-redis): the redis-py part is not run")
		return
	}
	host, port := "127.0.0.1", nodes[2].port()
	script := `
import sys
from redis.cluster import RedisCluster
rc = RedisCluster(host=sys.argv[1], port=int(sys.argv[2]))
for i in range(200):
    k = "py:%d" % i
    assert rc.execute_command("BF.ADD", k, "a") == 1, k
    assert rc.execute_command("BF.ADD", k, "b") == 1, k
for i in range(200):
    k = "py:%d" % i
    assert rc.execute_command("BF.MEXISTS", k, "a", "b", "c") == [1, 1, 0], k
    assert rc.execute_command("BF.CARD", k) == 2, k
nodes = {n.name for n in rc.get_nodes()}
print("ok", len(nodes))
`
	outb, err := exec.Command(py, "-c", script, host, port).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(outb), "ok 6") {
		t.Fatalf("redis-py RedisCluster: %v\n%s", err, outb)
	}
}
