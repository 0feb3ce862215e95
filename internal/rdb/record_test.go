package rdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The files of testdata/ are recorded from the real programs by TestRecordTestdata:
//
//	REDISBLOOM_SO=/path/to/redisbloom.so go test ./internal/rdb -run TestRecordTestdata -count=1 -record
//
// It starts Debian's redis-server 7.0.15 with RedisBloom 2.6.28 loaded (loopback, a free port),
// fills it with the session below, saves it (SAVE) with rdbcompression yes and then no, and
// records, for every key, what Redis answers about it (TYPE, PEXPIRETIME, GET or HGETALL,
// BF.INFO or CF.INFO, every BF.SCANDUMP or CF.SCANDUMP chunk, BF.EXISTS or CF.EXISTS and
// CF.COUNT of every item added and of 200 never added) and its DUMP payload, in
// <file>.facts.json beside each RDB file. other.rdb holds the types bloomd does not hold.

// keyFacts is what Redis answered about one key.
type keyFacts struct {
	DB          int               `json:"db"`
	Key         string            `json:"key"`
	Type        string            `json:"type"`
	PExpireTime int64             `json:"pexpiretime"`
	Value       string            `json:"value,omitempty"`    // GET, hex
	Hash        map[string]string `json:"hash,omitempty"`     // HGETALL
	Info        []string          `json:"info,omitempty"`     // BF.INFO / CF.INFO, "name=value"
	ScanDump    []string          `json:"scandump,omitempty"` // "iterator length sha256" of each chunk
	Exists      string            `json:"exists,omitempty"`   // '0'/'1' for each of probeItems
	Count       string            `json:"count,omitempty"`    // CF.COUNT of each of probeItems, comma-separated
	Dump        string            `json:"dump"`               // DUMP, hex
}

type fileFacts struct {
	Recorded string     `json:"recorded"`
	Keys     []keyFacts `json:"keys"`
}

func items(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// recordSession fills db 0 (and a key of db 1) with the keys of bloom-*.rdb.
func recordSession(ctx context.Context, t *testing.T, c *redis.Client) {
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	madd := func(key string, list []any) {
		for i := 0; i < len(list); i += 50 {
			do(append([]any{"BF.MADD", key}, list[i:min(i+50, len(list))]...)...)
		}
	}
	do("BF.RESERVE", "bf-scaled", "0.01", "20", "EXPANSION", "2")
	madd("bf-scaled", items("item-", 150))
	do("BF.RESERVE", "bf-nonscaling", "0.001", "100", "NONSCALING")
	madd("bf-nonscaling", items("item-", 60))
	for _, it := range items("item-", 30) {
		do("BF.ADD", "bf-default", it)
	}
	do("BF.RESERVE", "bf-empty", "0.05", "10")
	do("BF.RESERVE", "bf-exp", "0.01", "50")
	madd("bf-exp", items("item-", 40))
	do("PEXPIREAT", "bf-exp", "4102444800000")
	do("BF.RESERVE", "bf-expansion3", "0.02", "10", "EXPANSION", "3")
	madd("bf-expansion3", items("item-", 100))
	do("CF.RESERVE", "cf", "64")
	for _, it := range items("item-", 200) {
		do("CF.ADD", "cf", it)
	}
	for _, it := range items("item-", 10) {
		do("CF.DEL", "cf", it)
	}
	do("CF.RESERVE", "cf-opts", "100", "BUCKETSIZE", "4", "MAXITERATIONS", "10", "EXPANSION", "2")
	do(append([]any{"CF.INSERT", "cf-opts", "ITEMS"}, items("item-", 500)...)...)
	for _, it := range items("item-", 20) {
		do("CF.DEL", "cf-opts", it)
	}
	do("CF.RESERVE", "cf-nonscaling", "50", "EXPANSION", "0")
	do(append([]any{"CF.INSERT", "cf-nonscaling", "ITEMS"}, items("item-", 30)...)...)
	do("SET", "str", "hello")
	do("SET", "str-int", "12345")
	do("SET", "str-neg", "-7")
	do("SET", "str-big", "3000000000")
	do("SET", "str-zero-lead", "0123")
	do("SET", "str-long", strings.Repeat("compress me, ", 20))
	do("SET", "str-mixed", "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6")
	do("SET", "str-empty", "")
	do("SET", "str-exp", "x", "PXAT", "4102444800123")
	do("HSET", "hash-small", "f1", "v1", "f2", "2", "f3", "-300", "f4", "70000", "num", "9223372036854775807", "long", strings.Repeat("h", 60))
	var large []any
	for i := range 200 {
		large = append(large, fmt.Sprintf("field-%d", i), fmt.Sprintf("value %d of a large hash", i))
	}
	do(append([]any{"HSET", "hash-large"}, large...)...)
	do("HSET", "hash-bigvalue", "f", strings.Repeat("a long value that is over 64 bytes ", 3))
	do("HSET", "hash-exp", "a", "1")
	do("PEXPIREAT", "hash-exp", "4102444800999")
	do("SELECT", "1")
	do("SET", "db1-key", "in db 1")
	do("SELECT", "0")
}

// recordOther fills a server with keys of types bloomd does not hold, among one of each it does.
func recordOther(ctx context.Context, t *testing.T, c *redis.Client) {
	do := func(args ...any) {
		t.Helper()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do("SET", "str", "kept")
	do("BF.ADD", "bf", "a")
	do("RPUSH", "list", "a", "b", "c")
	do("SADD", "set", "x", "y")
	do("SADD", "intset", "1", "2", "3")
	do("ZADD", "zset", "1", "a", "2.5", "b")
	do("XADD", "stream", "1-1", "f", "v")
	do("XGROUP", "CREATE", "stream", "g", "0")
	do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "stream", ">")
	do("CMS.INITBYDIM", "cms", "10", "5")
	do("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)")
}

// probeItems are the items whose membership is recorded: every item a session adds, and 200
// it never adds.
func probeItems() []any { return append(items("item-", 500), items("absent-", 200)...) }

// chunkFact describes a SCANDUMP chunk: its iterator, length and SHA-256.
func chunkFact(it int64, data []byte) string {
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%d %d %x", it, len(data), sum)
}

func recordKeys(ctx context.Context, t *testing.T, c *redis.Client) []keyFacts {
	var out []keyFacts
	for _, db := range []int{0, 1} {
		if err := c.Do(ctx, "SELECT", db).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, recordKey(ctx, t, c, db, k))
		}
	}
	c.Do(ctx, "SELECT", 0)
	return out
}

func recordKey(ctx context.Context, t *testing.T, c *redis.Client, db int, k string) keyFacts {
	f := keyFacts{DB: db, Key: k}
	f.Type = c.Type(ctx, k).Val()
	f.PExpireTime = c.Do(ctx, "PEXPIRETIME", k).Val().(int64)
	dump, err := c.Dump(ctx, k).Result()
	if err != nil {
		t.Fatal(err)
	}
	f.Dump = hex.EncodeToString([]byte(dump))
	flat := func(cmd string) []string {
		v, err := c.Do(ctx, cmd, k).Slice()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := 0; i+1 < len(v); i += 2 {
			out = append(out, fmt.Sprintf("%v=%v", v[i], v[i+1]))
		}
		return out
	}
	probe := probeItems()
	switch f.Type {
	case "string":
		f.Value = hex.EncodeToString([]byte(c.Get(ctx, k).Val()))
	case "hash":
		f.Hash = c.HGetAll(ctx, k).Val()
	case "MBbloom--", "MBbloomCF":
		cmd := "BF"
		if f.Type == "MBbloomCF" {
			cmd = "CF"
		}
		f.Info = flat(cmd + ".INFO")
		for it := int64(0); ; {
			v, err := c.Do(ctx, cmd+".SCANDUMP", k, it).Slice()
			if err != nil {
				t.Fatal(err)
			}
			it = v[0].(int64)
			if it == 0 {
				break
			}
			f.ScanDump = append(f.ScanDump, chunkFact(it, []byte(v[1].(string))))
		}
		ex, err := c.Do(ctx, append([]any{cmd + ".MEXISTS", k}, probe...)...).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, x := range ex {
			fmt.Fprint(&b, x)
		}
		f.Exists = b.String()
		if cmd == "CF" {
			counts := make([]string, len(probe))
			for i, it := range probe {
				counts[i] = fmt.Sprint(c.Do(ctx, "CF.COUNT", k, it).Val())
			}
			f.Count = strings.Join(counts, ",")
		}
	}
	return f
}

func TestRecordTestdata(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" || !*record {
		t.Skip("not recording testdata: set REDISBLOOM_SO and pass -record")
	}
	ctx := context.Background()
	for _, rec := range []struct {
		file     string
		compress string
		fill     func(context.Context, *testing.T, *redis.Client)
	}{
		{"bloom-compressed.rdb", "yes", recordSession},
		{"bloom-plain.rdb", "no", recordSession},
		{"other.rdb", "yes", recordOther},
	} {
		srv := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so, "--rdbcompression", rec.compress}})
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
		rec.fill(ctx, t, c)
		if err := c.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(srv.Dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", rec.file), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if rec.file != "other.rdb" {
			facts := fileFacts{Recorded: "redis-server 7.0.15 with RedisBloom 2.6.28, rdbcompression " + rec.compress, Keys: recordKeys(ctx, t, c)}
			js, err := json.MarshalIndent(facts, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", rec.file+".facts.json"), append(js, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		srv.Close()
	}
}
