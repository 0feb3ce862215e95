package repl_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestSentinelMixedGroup runs three real redis-sentinel processes over a Redis primary with two
// replicas, one bloomd (replica-priority 1, so Sentinel prefers it) and one redis-server (100);
// with REDISBLOOM_SO, the Redis servers load RedisBloom and the clients add to a filter as well
// as set strings. A go-redis failover client writes, each write followed by WAIT 1; the primary
// is killed; Sentinel promotes bloomd, the Redis replica follows it (a partial resync, bloomd
// keeping the old history as its secondary ID), the client goes on, and every write
// acknowledged with WAIT 1 is on bloomd. Then the way back: the priorities are swapped and
// SENTINEL FAILOVER promotes the Redis replica; bloomd follows it, the client goes on, and every
// acknowledged write is on Redis, whose data bloomd holds exactly.
func TestSentinelMixedGroup(t *testing.T) {
	needSentinel(t)
	redistest.Require(t)
	mod, filters := redisBloomArgs(t)
	primary := redistest.New(t, &redistest.Options{Args: mod})
	other := redistest.New(t, &redistest.Options{Args: append(mod, "--replica-priority", "100", "--replicaof", "127.0.0.1", portOf(primary))})
	bloomd := startBloomd(t, "replica-priority 1", "replicaof 127.0.0.1 "+portOf(primary))
	// Both replicas are past their full sync (a diskless one, delayed by Redis's
	// repl-diskless-sync-delay) before the writes start: a write that WAIT 1 acknowledges
	// through the Redis replica alone, while bloomd is still waiting for its snapshot, is not on
	// bloomd, and Sentinel, which ranks replicas by priority before their offsets, would promote
	// bloomd without it, as it would a Redis replica.
	eventually(t, 30*time.Second, "replicas synced and online", func() bool {
		return info(bloomd, "master_link_status") == "up" && info(other, "master_link_status") == "up" &&
			strings.Contains(info(primary, "slave0"), "state=online") && strings.Contains(info(primary, "slave1"), "state=online")
	})
	var sentinels []*redistest.Server
	var addrs []string
	for range 3 {
		s := startSentinel(t, primary.Addr, 2, "sentinel down-after-milliseconds mymaster 1500", "sentinel failover-timeout mymaster 6000")
		sentinels = append(sentinels, s)
		addrs = append(addrs, s.Addr)
	}
	for _, s := range sentinels {
		eventually(t, 30*time.Second, "sentinels see the replicas and each other", func() bool {
			return sentinelField(s, "num-slaves") == "2" && sentinelField(s, "num-other-sentinels") == "2"
		})
	}
	ctx := context.Background()
	fc := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "mymaster", SentinelAddrs: addrs, Protocol: 2,
		DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: time.Second, MaxRetries: -1,
	})
	defer fc.Close()

	var mu sync.Mutex
	var acked []int
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(2 * time.Minute)
		for i := 0; time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			cmds, err := fc.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, fmt.Sprint("k", i), i, 0)
				if filters {
					p.Do(ctx, "BF.ADD", "users", fmt.Sprint("user-", i))
				}
				p.Do(ctx, "WAIT", 1, 1000)
				return nil
			})
			if err == nil {
				if n, _ := cmds[len(cmds)-1].(*redis.Cmd).Int(); n >= 1 {
					mu.Lock()
					acked = append(acked, i)
					mu.Unlock()
				}
			} else {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	countAcked := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	agreed := func() string {
		addr := ""
		for _, s := range sentinels {
			out, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
			if err != nil {
				return ""
			}
			a := strings.Replace(out, "\n", ":", 1)
			if addr != "" && a != addr {
				return ""
			}
			addr = a
		}
		return addr
	}
	// checkAcked makes sure every write acknowledged so far is on s.
	checkAcked := func(s *redistest.Server, what string) {
		t.Helper()
		mu.Lock()
		got := append([]int(nil), acked...)
		mu.Unlock()
		c := client(t, s)
		for start := 0; start < len(got); start += 500 {
			batch := got[start:min(start+500, len(got))]
			keys := make([]string, len(batch))
			args := []any{"BF.MEXISTS", "users"}
			for j, i := range batch {
				keys[j] = fmt.Sprint("k", i)
				args = append(args, fmt.Sprint("user-", i))
			}
			vals, err := c.MGet(ctx, keys...).Result()
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range vals {
				if v != fmt.Sprint(batch[j]) {
					t.Errorf("%s: acknowledged write of k%d is missing (%v)", what, batch[j], v)
				}
			}
			if filters {
				res, err := c.Do(ctx, args...).Int64Slice()
				if err != nil {
					t.Fatal(err)
				}
				for j, r := range res {
					if r != 1 {
						t.Errorf("%s: acknowledged add of user-%d is missing", what, batch[j])
					}
				}
			}
		}
		t.Logf("%s: %d acknowledged writes checked", what, len(got))
	}

	eventually(t, 20*time.Second, "acknowledged writes before the failure", func() bool { return countAcked() >= 200 })
	primary.Kill()
	killed := time.Now()
	eventually(t, 30*time.Second, "Sentinel promotes bloomd", func() bool { return agreed() == bloomd.Addr })
	t.Logf("failover to bloomd took %v", time.Since(killed).Round(time.Millisecond))
	before := countAcked()
	eventually(t, 20*time.Second, "the client writes to bloomd", func() bool { return countAcked() >= before+200 })
	eventually(t, 20*time.Second, "the Redis replica follows bloomd", func() bool {
		return info(other, "master_port") == portOf(bloomd) && info(other, "master_link_status") == "up"
	})
	if full := info(bloomd, "sync_full"); full != "0" {
		t.Errorf("the Redis replica needed a full sync from bloomd (sync_full %s)", full)
	}
	checkAcked(bloomd, "on bloomd, promoted")

	// The way back: Sentinel is told to prefer the Redis replica, and fails over.
	other.Do("CONFIG", "SET", "replica-priority", "1")
	bloomd.Do("CONFIG", "SET", "replica-priority", "100")
	for _, s := range sentinels {
		eventually(t, 30*time.Second, "Sentinel sees the new priority", func() bool {
			out, err := s.Do("SENTINEL", "REPLICAS", "mymaster")
			return err == nil && strings.Contains(out, "\nslave-priority\n1\n")
		})
	}
	if _, err := sentinels[0].Do("SENTINEL", "FAILOVER", "mymaster"); err != nil {
		t.Fatal(err)
	}
	switched := time.Now()
	eventually(t, 30*time.Second, "Sentinel promotes the Redis replica", func() bool { return agreed() == other.Addr })
	t.Logf("failover back to Redis took %v", time.Since(switched).Round(time.Millisecond))
	before = countAcked()
	eventually(t, 20*time.Second, "the client writes to Redis", func() bool { return countAcked() >= before+200 })
	eventually(t, 30*time.Second, "bloomd follows the Redis replica", func() bool {
		return info(bloomd, "master_port") == portOf(other) && info(bloomd, "master_link_status") == "up"
	})
	close(stop)
	<-done
	checkAcked(other, "on Redis, promoted again")
	sameState(t, other, bloomd, "bloomd following Redis again")
	t.Logf("bloomd's return to Redis: sync_full %s, sync_partial_ok %s", info(other, "sync_full"), info(other, "sync_partial_ok"))
}
