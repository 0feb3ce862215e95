package cluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReshardFilterUnderLoad: redis-cli --cluster reshard moves the slot of a large filter from
// one bloomd primary to another while clients keep adding to it through go-redis's
// ClusterClient (which follows -ASK and -MOVED); afterwards every add that was answered is in
// the filter on its new node. The filter is 32 MB by default (BLOOM_RESHARD_MB changes it; the
// 1 GB run is bench/cluster.sh's).
func TestReshardFilterUnderLoad(t *testing.T) {
	probe := startBloomdNode(t, 2000)
	if r, _ := probe.Do("COMMAND", "INFO", "MIGRATE"); strings.TrimSpace(r) == "" {
		t.Skip("bloomd has no MIGRATE yet: resharding with keys waits for it")
	}
	probe.Close()
	mb := 32
	if v := os.Getenv("BLOOM_RESHARD_MB"); v != "" {
		mb, _ = strconv.Atoi(v)
	}
	var nodes []*pnode
	for range 3 {
		nodes = append(nodes, startBloomdNode(t, 2000, "proto-max-bulk-len 2047mb"))
	}
	create(t, nodes, 0)
	src, dst := nodes[0], nodes[1]
	srcID, dstID := src.do("CLUSTER", "MYID"), dst.do("CLUSTER", "MYID")
	// The filter is in the source's first slot, the one reshard moves first.
	key := keyFor(0)
	ctx := context.Background()
	c := clusterClient(t, nodes)
	// At 1% a filter holds about 9.6 bits per item.
	capacity := mb << 20 * 8 * 10 / 96
	if err := c.Do(ctx, "BF.RESERVE", key, "0.01", capacity).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		c.Do(ctx, "BF.ADD", key, "before-"+strconv.Itoa(i))
	}
	var mu sync.Mutex
	var answered []string
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
				item := fmt.Sprintf("during-%d-%d", g, i)
				if err := c.Do(ctx, "BF.ADD", key, item).Err(); err == nil {
					mu.Lock()
					answered = append(answered, item)
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	out, err := redisCLI(t, 5*time.Minute, "--cluster", "reshard", src.Addr, "--cluster-from", srcID, "--cluster-to", dstID,
		"--cluster-slots", "1", "--cluster-yes", "--cluster-timeout", "60000")
	took := time.Since(start)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err != nil || strings.Contains(out, "[ERR]") {
		t.Fatalf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
	t.Logf("a %d MB filter resharded in %v (%.0f MB/s) with %d adds answered during the move", mb, took.Round(time.Millisecond), float64(mb)/took.Seconds(), len(answered))
	if n, _ := strconv.Atoi(src.do("DBSIZE")); n != 0 {
		t.Errorf("the source still holds %d keys", n)
	}
	c.ReloadState(ctx)
	missing := 0
	for _, item := range answered {
		ok, err := c.Do(ctx, "BF.EXISTS", key, item).Bool()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d adds answered during the move are missing", missing, len(answered))
	}
}
