package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFailoverUnderLoad: clients add to filters through go-redis's ClusterClient, each add
// followed by WAIT 1 on its primary; a primary is killed with SIGKILL; its replica is elected
// and promoted within the node timeout and a few seconds, the clients follow the new primary,
// and every add that WAIT acknowledged is in the filters afterwards.
func TestFailoverUnderLoad(t *testing.T) {
	const timeoutMs = 1000
	var nodes []*pnode
	for range 6 {
		nodes = append(nodes, startBloomdNode(t, timeoutMs))
	}
	create(t, nodes, 1)
	ctx := context.Background()
	c := clusterClient(t, nodes)
	const filters = 24
	key := func(i int) string { return fmt.Sprintf("{f%d}:filter", i) }
	for i := range filters {
		if err := c.Do(ctx, "BF.RESERVE", key(i), "0.001", "100000").Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The victim: the primary of filter 0.
	p0, err := c.MasterForKey(ctx, key(0))
	if err != nil {
		t.Fatal(err)
	}
	var victim *pnode
	for _, n := range nodes {
		if n.Addr == p0.Options().Addr {
			victim = n
		}
	}
	victimID := victim.do("CLUSTER", "MYID")
	var replica *pnode
	for _, n := range nodes {
		if f := nodesLine(n, n.do("CLUSTER", "MYID")); f != nil && f[3] == victimID {
			replica = n
		}
	}
	if replica == nil {
		t.Fatal("the victim has no replica")
	}

	type add struct{ key, item string }
	var mu sync.Mutex
	var acked []add
	var failures int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := add{key((g*7919 + i) % filters), fmt.Sprintf("g%d-%d", g, i)}
				for tries := 0; ; tries++ {
					select {
					case <-stop:
						return
					default:
					}
					node, err := c.MasterForKey(ctx, a.key)
					var added *redis.Cmd
					var waited *redis.Cmd
					if err == nil {
						pipe := node.Pipeline()
						added = pipe.Do(ctx, "BF.ADD", a.key, a.item)
						waited = pipe.Do(ctx, "WAIT", 1, 2000)
						_, err = pipe.Exec(ctx)
					}
					if err == nil {
						// Added; acknowledged if a replica has it (a primary left without
						// replica answers 0 after the timeout: that add is not counted).
						if waitedOK(waited) {
							mu.Lock()
							acked = append(acked, a)
							mu.Unlock()
						}
						break
					}
					mu.Lock()
					failures++
					mu.Unlock()
					_ = added
					time.Sleep(50 * time.Millisecond)
					c.ReloadState(ctx)
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	if before == 0 {
		close(stop)
		wg.Wait()
		t.Fatalf("no add acknowledged before the kill (%d failures)", failures)
	}
	killed := time.Now()
	victim.Kill()
	waitFor(t, 30*time.Second, "the replica promoted", func() bool {
		r, err := replica.Do("ROLE")
		return err == nil && strings.HasPrefix(r, "master")
	})
	promotion := time.Since(killed)
	waitFor(t, 30*time.Second, "the cluster ok on the promoted replica", func() bool {
		return replica.clusterInfo("cluster_state") == "ok"
	})
	recovered := time.Since(killed)
	// The old primary comes back as the new primary's replica, so that WAIT 1 is answered on
	// that shard again.
	if err := victim.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the old primary replicating the new one", func() bool {
		r, err := victim.Do("ROLE")
		return err == nil && strings.HasPrefix(r, "slave") && strings.Contains(r, "connected")
	})
	time.Sleep(2 * time.Second) // adds to the new primary
	close(stop)
	wg.Wait()
	t.Logf("promoted %v after SIGKILL (cluster ok after %v, node timeout %d ms); %d adds acknowledged, %d before the kill; %d retries",
		promotion.Round(time.Millisecond), recovered.Round(time.Millisecond), timeoutMs, len(acked), before, failures)
	if promotion > timeoutMs*time.Millisecond+15*time.Second {
		t.Errorf("promotion took %v", promotion)
	}
	c.ReloadState(ctx)
	missing := 0
	for _, a := range acked {
		ok, err := c.Do(ctx, "BF.EXISTS", a.key, a.item).Bool()
		if err != nil {
			t.Fatalf("BF.EXISTS %v: %v", a, err)
		}
		if !ok {
			missing++
			if missing < 10 {
				t.Errorf("acknowledged add lost: %v", a)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged adds lost", missing, len(acked))
	}
	mu.Lock()
	after := len(acked) - before
	mu.Unlock()
	if after == 0 {
		t.Errorf("no add acknowledged after the kill")
	}
}

func waitedOK(c *redis.Cmd) bool {
	n, err := c.Int()
	return err == nil && n >= 1
}
