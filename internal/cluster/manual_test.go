package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestManualFailoverUnderLoad: CLUSTER FAILOVER on a bloomd replica while clients add to its
// primary's filters: the primary pauses writes, the replica catches up with the paused offset
// and takes over with the others' votes, the old primary follows it, no node ever flags a
// failure, and every add that was answered is in the filters afterwards.
func TestManualFailoverUnderLoad(t *testing.T) {
	var nodes []*pnode
	for range 6 {
		nodes = append(nodes, startBloomdNode(t, 2000))
	}
	create(t, nodes, 1)
	ctx := context.Background()
	c := clusterClient(t, nodes)
	key := "{mf}:filter"
	if err := c.Do(ctx, "BF.RESERVE", key, "0.001", "1000000").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := c.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var primary, replica *pnode
	for _, n := range nodes {
		if n.Addr == p.Options().Addr {
			primary = n
		}
	}
	pid := primary.do("CLUSTER", "MYID")
	for _, n := range nodes {
		if f := nodesLine(n, n.do("CLUSTER", "MYID")); f != nil && f[3] == pid {
			replica = n
		}
	}
	var mu sync.Mutex
	var answered []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				item := fmt.Sprintf("g%d-%d", g, i)
				if err := c.Do(ctx, "BF.ADD", key, item).Err(); err == nil {
					mu.Lock()
					answered = append(answered, item)
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Second)
	// A manual failover gives up after 5 s if the replica has not caught up with the paused
	// primary (Redis's CLUSTER_MF_TIMEOUT), which a loaded machine can make happen: the
	// operator's answer, and the test's, is to ask again.
	promoted := func() bool {
		r, _ := replica.Do("ROLE")
		return strings.HasPrefix(r, "master")
	}
	for try := 1; ; try++ {
		replica.do("CLUSTER", "FAILOVER")
		deadline := time.Now().Add(12 * time.Second)
		for !promoted() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if promoted() {
			break
		}
		if try == 3 {
			t.Fatal("the replica not promoted after three CLUSTER FAILOVERs")
		}
		t.Logf("CLUSTER FAILOVER %d did not complete; asking again", try)
	}
	waitFor(t, 20*time.Second, "the old primary following", func() bool {
		r, _ := primary.Do("ROLE")
		return strings.HasPrefix(r, "slave")
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	for _, n := range nodes {
		if nodesText := n.do("CLUSTER", "NODES"); strings.Contains(nodesText, "fail") {
			t.Errorf("%s saw a failure during a manual failover:\n%s", n.Addr, nodesText)
		}
	}
	c.ReloadState(ctx)
	missing := 0
	for _, item := range answered {
		if ok, err := c.Do(ctx, "BF.EXISTS", key, item).Bool(); err != nil || !ok {
			missing++
		}
	}
	t.Logf("%d adds answered around the manual failover", len(answered))
	if missing > 0 {
		t.Errorf("%d of %d answered adds missing after the manual failover", missing, len(answered))
	}
	if !strings.Contains(readLog(replica), "manual failover can start") || !strings.Contains(readLog(primary), "manual failover requested by replica") {
		t.Errorf("the logs do not show the manual failover's steps")
	}
}
