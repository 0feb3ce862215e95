package server

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisCF drives bloomd through go-redis v9's CF* API, in RESP2 and RESP3: reserve with
// options, add, add-if-new, insert, check, count, delete, info, and dump and restore.
func TestGoRedisCF(t *testing.T) {
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
			must(rdb.CFReserve(ctx, "sessions", 1000).Err())
			must(rdb.CFReserveWithArgs(ctx, "opts", &redis.CFReserveOptions{Capacity: 1000, BucketSize: 4, MaxIterations: 10, Expansion: 2}).Err())
			if err := rdb.CFReserve(ctx, "sessions", 1000).Err(); err == nil || err.Error() != "ERR item exists" {
				t.Fatalf("second CF.RESERVE: %v", err)
			}
			if ok, err := rdb.CFAdd(ctx, "sessions", "s1").Result(); err != nil || !ok {
				t.Fatalf("CF.ADD: %v %v", ok, err)
			}
			if ok, err := rdb.CFAddNX(ctx, "sessions", "s1").Result(); err != nil || ok {
				t.Fatalf("CF.ADDNX present: %v %v", ok, err)
			}
			if ok, err := rdb.CFAddNX(ctx, "sessions", "s2").Result(); err != nil || !ok {
				t.Fatalf("CF.ADDNX new: %v %v", ok, err)
			}
			ins, err := rdb.CFInsert(ctx, "sessions", nil, "s3", "s3").Result()
			if err != nil || !slices.Equal(ins, []bool{true, true}) {
				t.Fatalf("CF.INSERT: %v %v", ins, err)
			}
			insnx, err := rdb.CFInsertNX(ctx, "created", &redis.CFInsertOptions{Capacity: 100}, "a", "a", "b").Result()
			if err != nil || !slices.Equal(insnx, []int64{1, 0, 1}) {
				t.Fatalf("CF.INSERTNX: %v %v", insnx, err)
			}
			if err := rdb.CFInsert(ctx, "absent", &redis.CFInsertOptions{NoCreate: true}, "x").Err(); err == nil || err.Error() != "ERR not found" {
				t.Fatalf("CF.INSERT NOCREATE: %v", err)
			}
			if n, err := rdb.CFCount(ctx, "sessions", "s3").Result(); err != nil || n != 2 {
				t.Fatalf("CF.COUNT: %d %v", n, err)
			}
			ex, err := rdb.CFMExists(ctx, "sessions", "s1", "s2", "nope").Result()
			if err != nil || !slices.Equal(ex, []bool{true, true, false}) {
				t.Fatalf("CF.MEXISTS: %v %v", ex, err)
			}
			if ok, err := rdb.CFDel(ctx, "sessions", "s1").Result(); err != nil || !ok {
				t.Fatalf("CF.DEL: %v %v", ok, err)
			}
			if ok, err := rdb.CFExists(ctx, "sessions", "s1").Result(); err != nil || ok {
				t.Fatalf("CF.EXISTS after CF.DEL: %v %v", ok, err)
			}
			info, err := rdb.CFInfo(ctx, "opts").Result()
			want := redis.CFInfo{Size: 40 + 16 + 1024, NumBuckets: 256, NumFilters: 1, BucketSize: 4, ExpansionRate: 2, MaxIteration: 10}
			if err != nil || info != want {
				t.Fatalf("CF.INFO: %+v %v, want %+v", info, err, want)
			}
			if typ, err := rdb.Type(ctx, "sessions").Result(); err != nil || typ != "MBbloomCF" {
				t.Fatalf("TYPE: %q %v", typ, err)
			}
			// Dump and restore into another key, then compare answers.
			for i := range 500 {
				must(rdb.CFAdd(ctx, "sessions", fmt.Sprint("item-", i)).Err())
			}
			var chunks []redis.ScanDump
			for it := int64(0); ; {
				d, err := rdb.CFScanDump(ctx, "sessions", it).Result()
				if err == redis.Nil {
					// RESP3: the last reply is [0, null], as RedisBloom sends it (resp3-cf.txt),
					// and go-redis reports the null as redis.Nil.
					break
				}
				must(err)
				if d.Iter == 0 {
					break
				}
				chunks = append(chunks, d)
				it = d.Iter
			}
			for _, d := range chunks {
				must(rdb.CFLoadChunk(ctx, "copy", d.Iter, d.Data).Err())
			}
			for i := range 500 {
				if ok, err := rdb.CFExists(ctx, "copy", fmt.Sprint("item-", i)).Result(); err != nil || !ok {
					t.Fatalf("restored filter lost item-%d: %v", i, err)
				}
			}
			a, _ := rdb.CFInfo(ctx, "sessions").Result()
			b, _ := rdb.CFInfo(ctx, "copy").Result()
			if a != b {
				t.Fatalf("restored CF.INFO %+v, original %+v", b, a)
			}
		})
	}
}
