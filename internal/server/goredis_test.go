package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func goRedis(t *testing.T, addr string, proto int, password string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Password: password,
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestGoRedis drives bloomd through go-redis v9's BF* API, in RESP2 and RESP3, as an
// application would: reserve, add, check, info, dump and restore, pipelines, transactions,
// scans and expiry.
func TestGoRedis(t *testing.T) { forEachIOMode(t, testGoRedis) }

func testGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := startServer(t, nil)
			ctx := context.Background()
			rdb := goRedis(t, s.addr(), proto, "")
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(rdb.Ping(ctx).Err())
			must(rdb.BFReserve(ctx, "f", 0.01, 1000).Err())
			must(rdb.BFReserveExpansion(ctx, "g", 0.001, 100, 4).Err())
			must(rdb.BFReserveNonScaling(ctx, "h", 0.1, 3).Err())
			if err := rdb.BFReserve(ctx, "f", 0.01, 1000).Err(); err == nil || err.Error() != "ERR item exists" {
				t.Fatalf("second BF.RESERVE: %v", err)
			}
			if ok, err := rdb.BFAdd(ctx, "f", "alice").Result(); err != nil || !ok {
				t.Fatalf("BF.ADD new: %v %v", ok, err)
			}
			if ok, err := rdb.BFAdd(ctx, "f", "alice").Result(); err != nil || ok {
				t.Fatalf("BF.ADD again: %v %v", ok, err)
			}
			added, err := rdb.BFMAdd(ctx, "f", "bob", "carol", "alice").Result()
			if err != nil || !slices.Equal(added, []bool{true, true, false}) {
				t.Fatalf("BF.MADD: %v %v", added, err)
			}
			found, err := rdb.BFMExists(ctx, "f", "alice", "bob", "mallory").Result()
			if err != nil || !slices.Equal(found, []bool{true, true, false}) {
				t.Fatalf("BF.MEXISTS: %v %v", found, err)
			}
			if ok, err := rdb.BFExists(ctx, "missing", "x").Result(); err != nil || ok {
				t.Fatalf("BF.EXISTS on a missing key: %v %v", ok, err)
			}
			ins, err := rdb.BFInsert(ctx, "ins", &redis.BFInsertOptions{Capacity: 50, Error: 0.001, Expansion: 3}, "a", "b", "a").Result()
			if err != nil || !slices.Equal(ins, []bool{true, true, false}) {
				t.Fatalf("BF.INSERT: %v %v", ins, err)
			}
			if _, err := rdb.BFInsert(ctx, "nope", &redis.BFInsertOptions{NoCreate: true}, "a").Result(); err == nil || err.Error() != "ERR not found" {
				t.Fatalf("BF.INSERT NOCREATE on a missing key: %v", err)
			}
			full, err := rdb.BFMAdd(ctx, "h", "1", "2", "3", "4", "5").Result()
			if err == nil || !strings.Contains(err.Error(), "non scaling filter is full") {
				t.Fatalf("BF.MADD past a non-scaling filter's capacity: %v %v", full, err)
			}
			if n, err := rdb.BFCard(ctx, "f").Result(); err != nil || n != 3 {
				t.Fatalf("BF.CARD: %d %v", n, err)
			}
			info, err := rdb.BFInfo(ctx, "f").Result()
			if err != nil || info != (redis.BFInfo{Capacity: 1000, Size: 1480, Filters: 1, ItemsInserted: 3, ExpansionRate: 2}) {
				t.Fatalf("BF.INFO: %+v %v", info, err)
			}
			if c, err := rdb.BFInfoCapacity(ctx, "g").Result(); err != nil || c.Capacity != 100 {
				t.Fatalf("BF.INFO CAPACITY: %+v %v", c, err)
			}
			if e, err := rdb.BFInfoExpansion(ctx, "g").Result(); err != nil || e.ExpansionRate != 4 {
				t.Fatalf("BF.INFO EXPANSION: %+v %v", e, err)
			}
			must(rdb.Set(ctx, "str", "v", 0).Err())
			if err := rdb.BFAdd(ctx, "str", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Fatalf("BF.ADD on a string: %v", err)
			}

			// Grow a filter, dump it chunk by chunk and load the chunks into a copy.
			for i := range 300 {
				must(rdb.BFAdd(ctx, "g", fmt.Sprint("item-", i)).Err())
			}
			for it := int64(0); ; {
				d, err := rdb.BFScanDump(ctx, "g", it).Result()
				must(err)
				if d.Iter == 0 {
					break
				}
				must(rdb.BFLoadChunk(ctx, "g-copy", d.Iter, d.Data).Err())
				it = d.Iter
			}
			a, _ := rdb.BFInfo(ctx, "g").Result()
			b, _ := rdb.BFInfo(ctx, "g-copy").Result()
			if a != b || a.Filters < 2 {
				t.Fatalf("BF.INFO of a filter and its copy: %+v, %+v", a, b)
			}
			for i := range 400 {
				item := fmt.Sprint("item-", i)
				x, _ := rdb.BFExists(ctx, "g", item).Result()
				y, _ := rdb.BFExists(ctx, "g-copy", item).Result()
				if x != y || i < 300 && !x {
					t.Fatalf("%s: original %v, copy %v", item, x, y)
				}
			}

			// A pipeline of 1000 adds, then a transaction.
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range 1000 {
					p.BFAdd(ctx, "p", i)
				}
				return nil
			})
			must(err)
			if len(cmds) != 1000 {
				t.Fatalf("pipeline: %d replies", len(cmds))
			}
			if n, _ := rdb.BFCard(ctx, "p").Result(); n < 990 || n > 1000 {
				t.Fatalf("BF.CARD after 1000 distinct adds: %d", n)
			}
			tx, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.BFAdd(ctx, "t", "x")
				p.BFExists(ctx, "t", "x")
				p.Expire(ctx, "t", time.Hour)
				return nil
			})
			must(err)
			if !tx[0].(*redis.BoolCmd).Val() || !tx[1].(*redis.BoolCmd).Val() {
				t.Fatalf("transaction replies: %v", tx)
			}
			if ttl, err := rdb.TTL(ctx, "t").Result(); err != nil || ttl < 59*time.Minute || ttl > time.Hour {
				t.Fatalf("TTL after EXPIRE 3600: %v %v", ttl, err)
			}

			// SCAN returns every key exactly once.
			for i := range 500 {
				must(rdb.BFAdd(ctx, fmt.Sprint("scan:", i), "x").Err())
			}
			seen := map[string]int{}
			iter := rdb.Scan(ctx, 0, "scan:*", 50).Iterator()
			for iter.Next(ctx) {
				seen[iter.Val()]++
			}
			must(iter.Err())
			if len(seen) != 500 {
				t.Fatalf("SCAN found %d of 500 keys", len(seen))
			}
			for k, n := range seen {
				if n != 1 {
					t.Fatalf("SCAN returned %s %d times", k, n)
				}
			}
			keys, cursor, err := rdb.ScanType(ctx, 0, "*", 100000, "MBbloom--").Result()
			if len(keys) != 500+7 || cursor != 0 { // scan:*, and f g h ins g-copy p t
				t.Fatalf("SCAN TYPE MBbloom--: %d keys, %v", len(keys), err)
			}

			// What go-redis sent on connect, and the introspection commands.
			list, err := rdb.ClientList(ctx).Result()
			must(err)
			if !strings.Contains(list, "lib-name=go-redis") || !strings.Contains(list, fmt.Sprintf("resp=%d", proto)) {
				t.Fatalf("CLIENT LIST: %s", list)
			}
			infos, err := rdb.Command(ctx).Result()
			must(err)
			if infos["bf.add"] == nil || infos["bf.add"].Arity != -1 || infos["get"].Arity != 2 || !infos["get"].ReadOnly {
				t.Fatalf("COMMAND: bf.add %+v get %+v", infos["bf.add"], infos["get"])
			}
			cfg, err := rdb.ConfigGet(ctx, "max*").Result()
			must(err)
			if cfg["maxclients"] != "10000" || cfg["maxmemory"] != "0" {
				t.Fatalf("CONFIG GET max*: %v", cfg)
			}
			infoText, err := rdb.Info(ctx, "keyspace", "memory").Result()
			must(err)
			if !strings.Contains(infoText, "db0:keys=") || !strings.Contains(infoText, "used_memory:") {
				t.Fatalf("INFO keyspace memory: %s", infoText)
			}
			must(rdb.FlushAll(ctx).Err())
			if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
				t.Fatalf("DBSIZE after FLUSHALL: %d", n)
			}
		})
	}
}

// TestGoRedisPassword connects with requirepass: go-redis authenticates inside HELLO.
func TestGoRedisPassword(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Requirepass = "s3cret" })
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		if err := goRedis(t, s.addr(), proto, "s3cret").BFAdd(ctx, "k", "x").Err(); err != nil {
			t.Fatalf("RESP%d with the password: %v", proto, err)
		}
		err := goRedis(t, s.addr(), proto, "wrong").Ping(ctx).Err()
		if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("RESP%d with a wrong password: %v", proto, err)
		}
	}
}
