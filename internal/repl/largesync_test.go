package repl_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// largeEnv gates TestLargeFullSync: it moves a filter of more than 1 GB (and writes it to disk
// three times), which takes tens of seconds and gigabytes of memory.
const largeEnv = "BLOOM_LARGE_SYNC"

// dumpDigest hashes a filter's whole BF.SCANDUMP, chunk after chunk.
func dumpDigest(t *testing.T, c *redis.Client, key string) (string, int64) {
	t.Helper()
	h := sha256.New()
	var n int64
	ctx := context.Background()
	for it := int64(0); ; {
		v, err := c.Do(ctx, "BF.SCANDUMP", key, it).Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("BF.SCANDUMP: %v %v", v, err)
		}
		it = v[0].(int64)
		if it == 0 {
			return fmt.Sprintf("%x", h.Sum(nil)), n
		}
		chunk := v[1].(string)
		h.Write([]byte(chunk))
		n += int64(len(chunk))
	}
}

// TestLargeFullSync makes a replica of a primary holding a filter of more than 1 GB while a
// client keeps adding to it: the replica ends bit for bit equal (BF.SCANDUMP compared), and the
// adds are answered throughout. It logs the full sync's time against a plain copy of the
// replica's snapshot file.
func TestLargeFullSync(t *testing.T) {
	if os.Getenv(largeEnv) != "1" {
		t.Skipf("moves more than 1 GB; set %s=1 to run it", largeEnv)
	}
	redistest.Require(t)
	primary := startBloomd(t, "appendonly no")
	ctx := context.Background()
	pc := redis.NewClient(&redis.Options{Addr: primary.Addr, ReadTimeout: 30 * time.Second, PoolSize: 4, Protocol: 2})
	defer pc.Close()
	if err := pc.Do(ctx, "BF.RESERVE", "big", "0.01", "900000000", "NONSCALING").Err(); err != nil {
		t.Fatal(err)
	}
	infoInt := func(c *redis.Client, field string) int64 {
		v, err := c.Do(ctx, "BF.INFO", "big", field).Slice() // RESP2: a one-element array
		if err != nil || len(v) != 1 {
			t.Fatalf("BF.INFO big %s: %v %v", field, v, err)
		}
		return v[0].(int64)
	}
	size := infoInt(pc, "SIZE")
	if size < 1<<30 {
		t.Fatalf("filter of %d bytes, want at least 1 GiB", size)
	}
	batch := func(i int) []any {
		args := []any{"BF.MADD", "big"}
		for j := range 100 {
			args = append(args, fmt.Sprintf("k%d-%d", i, j))
		}
		return args
	}
	for i := range 200 {
		if err := pc.Do(ctx, batch(i)...).Err(); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var worst time.Duration
	adds := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if err := pc.Do(ctx, batch(i)...).Err(); err != nil {
				t.Errorf("add during the full sync: %v", err)
				return
			}
			mu.Lock()
			worst = max(worst, time.Since(start))
			adds++
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	start := time.Now()
	replica := startBloomd(t, "appendonly no", "replicaof "+strings.Replace(primary.Addr, ":", " ", 1))
	eventually(t, 10*time.Minute, "full sync of the large filter", func() bool { return info(replica, "master_link_status") == "up" })
	syncTime := time.Since(start)
	time.Sleep(500 * time.Millisecond) // adds go on after the sync too
	close(stop)
	<-done
	eventually(t, time.Minute, "replica caught up", func() bool {
		return info(replica, "slave_repl_offset") == info(primary, "master_repl_offset")
	})
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr, ReadTimeout: 30 * time.Second, Protocol: 2})
	defer rc.Close()
	a, n := dumpDigest(t, pc, "big")
	b, _ := dumpDigest(t, rc, "big")
	if a != b {
		t.Error("the replica's filter differs from the primary's")
	}
	pi, ri := infoInt(pc, "ITEMS"), infoInt(rc, "ITEMS")
	if pi != ri {
		t.Errorf("items: primary %d, replica %d", pi, ri)
	}

	// A plain copy of the replica's snapshot file, synced, for comparison.
	src := filepath.Join(replica.Dir, "dump.bdb")
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	cstart := time.Now()
	in, _ := os.Open(src)
	out, _ := os.Create(filepath.Join(replica.Dir, "copy.bdb"))
	io.Copy(out, in)
	out.Sync()
	out.Close()
	in.Close()
	copyTime := time.Since(cstart)
	os.Remove(filepath.Join(replica.Dir, "copy.bdb"))
	mu.Lock()
	defer mu.Unlock()
	t.Logf("full sync of a %d-byte filter (%d-byte snapshot): %v (from the replica's start to link up: transfer to a file, load, save of its own snapshot); plain copy+fsync of the snapshot: %v (ratio %.2f); %d adds of 100 items during it, slowest %v",
		n, fi.Size(), syncTime.Round(time.Millisecond), copyTime.Round(time.Millisecond), syncTime.Seconds()/copyTime.Seconds(), adds, worst.Round(time.Millisecond))
}
