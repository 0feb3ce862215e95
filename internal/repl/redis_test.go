package repl_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Replication between Redis and bloomd, both ways, against Debian's redis-server 7.0: strings,
// hashes, expiry times and the commands Redis rewrites for its stream (no module needed, so CI
// runs them), and with REDISBLOOM_SO set, RedisBloom's filters too, compared bit for bit with
// BF.SCANDUMP and CF.SCANDUMP.

// redisBloomArgs returns the redis-server arguments that load RedisBloom from REDISBLOOM_SO, and
// whether it is set: without it the tests run without filters, and say so.
func redisBloomArgs(t *testing.T) ([]string, bool) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Log("REDISBLOOM_SO is not set: strings and hashes only, no filters, in this test against redis-server")
		return nil, false
	}
	return []string{"--loadmodule", so}, true
}

// startRedis starts a redis-server with RedisBloom when REDISBLOOM_SO names it, and args.
func startRedis(t *testing.T, args ...string) (*redistest.Server, bool) {
	t.Helper()
	mod, filters := redisBloomArgs(t)
	return redistest.New(t, &redistest.Options{Args: append(mod, args...)}), filters
}

// keyState describes every key a server holds, as a client sees it: type, expiry time, and the
// value (GET; HGETALL's pairs sorted; BF.INFO or CF.INFO and a digest of every BF.SCANDUMP or
// CF.SCANDUMP chunk), so that two servers can be compared key by key.
func keyState(t *testing.T, s *redistest.Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	keys, err := s.Do("KEYS", "*")
	if err != nil {
		t.Fatalf("KEYS on %s: %v", s.Addr, err)
	}
	if keys == "" {
		return out
	}
	for _, k := range strings.Split(keys, "\n") {
		typ, _ := s.Do("TYPE", k)
		exp, _ := s.Do("PEXPIRETIME", k)
		desc := typ + " expire=" + exp
		switch typ {
		case "string":
			v, _ := s.Do("GET", k)
			desc += " " + strconv.Quote(v)
		case "hash":
			all, _ := s.Do("HGETALL", k)
			f := strings.Split(all, "\n")
			var pairs []string
			for i := 0; i+1 < len(f); i += 2 {
				pairs = append(pairs, strconv.Quote(f[i])+"="+strconv.Quote(f[i+1]))
			}
			slices.Sort(pairs)
			desc += " " + strings.Join(pairs, " ")
		case "MBbloom--", "MBbloomCF":
			prefix := "BF."
			if typ == "MBbloomCF" {
				prefix = "CF."
			}
			info, _ := s.Do(prefix+"INFO", k)
			desc += " " + strings.ReplaceAll(info, "\n", " ")
			h := sha256.New()
			for it := "0"; ; {
				d, err := s.Do(prefix+"SCANDUMP", k, it)
				if err != nil {
					t.Fatalf("%sSCANDUMP %s %s: %v", prefix, k, it, err)
				}
				next, chunk, _ := strings.Cut(d, "\n")
				if next == "0" {
					break
				}
				fmt.Fprintf(h, "%s:%d:", next, len(chunk))
				h.Write([]byte(chunk))
				it = next
			}
			desc += " dump=" + hex.EncodeToString(h.Sum(nil))[:16]
		}
		out[k] = desc
	}
	return out
}

// sameState waits until replica has applied all that primary sent, then compares their keys.
func sameState(t *testing.T, primary, replica *redistest.Server, what string) map[string]string {
	t.Helper()
	defer func() {
		if t.Failed() {
			r, _ := replica.Do("INFO", "replication")
			p, _ := primary.Do("INFO", "replication")
			t.Logf("replica:\n%s\nprimary:\n%s", r, p)
		}
	}()
	eventually(t, 30*time.Second, what+": the replica in sync", func() bool {
		return info(replica, "master_link_status") == "up" && info(replica, "slave_repl_offset") == info(primary, "master_repl_offset")
	})
	a, b := keyState(t, primary), keyState(t, replica)
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: key %q\n  primary: %s\n  replica: %s", what, k, v, b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s: key %q only on the replica: %s", what, k, v)
		}
	}
	return a
}

// checkKinds makes sure the comparison covered every kind of value the workload writes.
func checkKinds(t *testing.T, st map[string]string, filters bool) {
	t.Helper()
	kinds := map[string]int{}
	for _, d := range st {
		typ, _, _ := strings.Cut(d, " ")
		kinds[typ]++
		if strings.Contains(d, "expire=-1") {
			kinds["no expiry"]++
		} else {
			kinds["expiry"]++
		}
	}
	want := []string{"string", "hash", "expiry", "no expiry"}
	if filters {
		want = append(want, "MBbloom--", "MBbloomCF")
	}
	for _, w := range want {
		if kinds[w] == 0 {
			t.Errorf("no key of kind %s compared (%v)", w, kinds)
		}
	}
	t.Logf("compared %d keys: %v", len(st), kinds)
}

// A step is one command of the workloads below; redisOnly marks commands bloomd does not have
// (whose rewritten forms, which Redis propagates, it applies).
type step struct {
	redisOnly bool
	args      []any
}

// workload returns the writes of one round, named by round so that rounds add keys: the string,
// hash and expiry commands of Redis 7.0, among them those it propagates rewritten (SET EX as
// SET PXAT, EXPIRE as PEXPIREAT, INCRBYFLOAT as SET KEEPTTL, HINCRBYFLOAT as HSET, GETDEL as DEL,
// GETEX as PEXPIREAT, SETEX as SET PXAT), a transaction and a script; with filters, RedisBloom's
// writes.
func workload(round int, filters bool) []step { return workloadAt(round, filters, false) }

// farFuture is an expiry time no recording outlives: 2100-01-01.
const farFuture = 4102444800

// workloadAt is workload; with far, every expiry time is absolute and far in the future, so that
// a stream recorded from it replays the same years later.
func workloadAt(round int, filters, far bool) []step {
	k := func(name string) string { return fmt.Sprintf("%s:%d", name, round) }
	s := func(args ...any) step { return step{args: args} }
	r := func(args ...any) step { return step{redisOnly: true, args: args} }
	ex := func(key string, secs int) step { return s("EXPIRE", key, secs) }
	exOpt := []any{"EX", 1000}
	getex := r("GETEX", k("m1"), "EX", 3000)
	setex := r("SETEX", k("sx"), 300, "v")
	if far {
		ex = func(key string, secs int) step { return s("EXPIREAT", key, farFuture+secs) }
		exOpt = []any{"EXAT", farFuture}
		getex = r("GETEX", k("m1"), "EXAT", farFuture+3000)
		setex = r("SET", k("sx"), "v", "PXAT", farFuture*1000+300)
	}
	steps := []step{
		s("SET", k("s"), "hello"),
		s(append([]any{"SET", k("ex"), "v"}, exOpt...)...),
		s("SET", k("px"), "v", "PXAT", farFuture*1000+7),
		s("APPEND", k("s"), " world"),
		s("SETRANGE", k("s"), 1, "EL"),
		s("SETBIT", k("bits"), 1000, 1),
		s("BITFIELD", k("bf"), "SET", "u8", 0, 200, "INCRBY", "u8", 0, 100, "OVERFLOW", "SAT", "INCRBY", "i8", 8, 300),
		s("MSET", k("m1"), "a", k("m2"), "b"),
		s("MSETNX", k("m3"), "c", k("m4"), "d"),
		s("SETNX", k("m1"), "not set"),
		s("INCR", k("n")),
		s("INCRBY", k("n"), 41),
		s("DECRBY", k("n"), 2),
		s("HSET", k("h"), "f1", "v1", "f2", "v2", "n", "1"),
		s("HINCRBY", k("h"), "n", 3),
		s("HINCRBYFLOAT", k("h"), "fl", "1.5"),
		s("HSETNX", k("h"), "f1", "ignored"),
		s("HDEL", k("h"), "f2"),
		ex(k("h"), 5000),
		s("SET", k("gone"), "x"),
		s("DEL", k("gone")),
		s("SET", k("old"), "renamed"),
		s("RENAME", k("old"), k("new")),
		s(append([]any{"SET", k("p"), "v"}, exOpt...)...),
		s("PERSIST", k("p")),
		s("PEXPIREAT", k("m2"), farFuture*1000+1234),
		s("UNLINK", k("m4")),
		r("INCRBYFLOAT", k("f"), "2.5"),
		r("GETDEL", k("m3")),
		getex,
		setex,
		r("GETSET", k("s"), "replaced"),
	}
	if filters {
		var items []any
		for i := range 300 {
			items = append(items, fmt.Sprintf("item-%d-%d", round, i))
		}
		steps = append(steps,
			s(append([]any{"BF.MADD", k("bfd")}, items[:120]...)...), // created with the defaults, grows
			s("BF.RESERVE", k("bfr"), "0.001", "50", "EXPANSION", "3"),
			s(append([]any{"BF.MADD", k("bfr")}, items...)...),
			s("BF.ADD", k("bfr"), "item-0-0"),
			s(append([]any{"BF.INSERT", k("bfi"), "CAPACITY", "500", "ERROR", "0.01", "NONSCALING", "ITEMS"}, items[:50]...)...),
			s("BF.RESERVE", k("bfempty"), "0.05", "10", "NONSCALING"),
			s("CF.RESERVE", k("cf"), "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "30", "EXPANSION", "2"),
			s(append([]any{"CF.INSERT", k("cf"), "ITEMS"}, items[:200]...)...),
			s("CF.ADD", k("cf"), "item-0-1"),
			s("CF.ADDNX", k("cf"), "item-0-2"),
			s("CF.DEL", k("cf"), "item-0-3"),
			s("CF.ADD", k("cfd"), "x"),
			s(append([]any{"CF.INSERTNX", k("cfd"), "ITEMS"}, items[:30]...)...),
			s("CF.COMPACT", k("cf")),
		)
	}
	steps = append(steps,
		s("MULTI"), s("SET", k("tx"), "1"), s("INCR", k("tx")), s("HSET", k("txh"), "a", "b"), s("EXEC"),
		s("EVAL", "redis.call('SET', KEYS[1], ARGV[1]); redis.call('HSET', KEYS[2], 'f', ARGV[1]); return 1", 2, k("lua"), k("luah"), "from lua"),
	)
	return steps
}

// run sends the steps of a workload to c, skipping those its server (bloomd) does not have.
func run(t *testing.T, c *redis.Client, steps []step, isRedis bool) {
	t.Helper()
	ctx := context.Background()
	var tx []any // queued inside MULTI: sent as one pipeline
	for _, st := range steps {
		if st.redisOnly && !isRedis {
			continue
		}
		name := strings.ToUpper(fmt.Sprint(st.args[0]))
		switch {
		case name == "MULTI":
			tx = []any{}
			continue
		case name == "EXEC":
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, a := range tx {
					p.Do(ctx, a.([]any)...)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("MULTI/EXEC %v: %v", tx, err)
			}
			tx = nil
			continue
		case tx != nil:
			tx = append(tx, st.args)
			continue
		}
		if err := c.Do(ctx, st.args...).Err(); err != nil && err != redis.Nil {
			t.Fatalf("%v: %v", st.args, err)
		}
	}
}

func client(t *testing.T, s *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBloomdReplicaOfRedis makes bloomd a replica of a Redis primary that saves its RDB to disk
// for the full sync ($<length>) and of one that sends it diskless ($EOF:<mark>). bloomd loads it
// from the link and then applies the stream: the commands of the workload, as Redis rewrites
// them, a transaction and a script's effects (MULTI/EXEC), PUBLISH, REPLCONF GETACK (WAIT 1 on
// the primary counts bloomd's acknowledgement); a cut link continues with a partial resync.
// After each step bloomd holds what Redis holds, key by key.
func TestBloomdReplicaOfRedis(t *testing.T) {
	for _, diskless := range []string{"no", "yes"} {
		t.Run("repl-diskless-sync-"+diskless, func(t *testing.T) {
			primary, filters := startRedis(t, "--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0")
			pc := client(t, primary)
			run(t, pc, workload(0, filters), true)
			replica := startBloomd(t)
			proxy := startProxy(t, primary.Addr)
			if _, err := replica.Do("REPLICAOF", "127.0.0.1", proxy.port()); err != nil {
				t.Fatal(err)
			}
			sameState(t, primary, replica, "after the full sync")
			if got := info(primary, "sync_full"); got != "1" {
				t.Errorf("the primary counts %s full syncs", got)
			}

			// The stream: every command of another round, and a message to a subscriber of the
			// replica.
			rc := client(t, replica)
			sub := rc.Subscribe(context.Background(), "news")
			defer sub.Close()
			if _, err := sub.Receive(context.Background()); err != nil {
				t.Fatal(err)
			}
			run(t, pc, workload(1, filters), true)
			if n, err := pc.Do(context.Background(), "WAIT", 1, 5000).Int(); err != nil || n != 1 {
				t.Errorf("WAIT 1 on the primary: %d %v", n, err)
			}
			pc.Publish(context.Background(), "news", "from the primary")
			select {
			case m := <-sub.Channel():
				if m.Payload != "from the primary" {
					t.Errorf("the replica's subscriber got %q", m.Payload)
				}
			case <-time.After(10 * time.Second):
				t.Error("a message published on the primary did not reach the replica's subscriber")
			}
			checkKinds(t, sameState(t, primary, replica, "after the stream"), filters)

			// A cut link continues where it was.
			proxy.Cut()
			run(t, pc, workload(2, filters), true)
			sameState(t, primary, replica, "after a partial resync")
			if got := info(primary, "sync_partial_ok"); got != "1" {
				t.Errorf("the primary counts %s partial resyncs (sync_full %s)", got, info(primary, "sync_full"))
			}
			if got := info(replica, "master_link_error"); got != "" {
				t.Errorf("master_link_error: %s", got)
			}
		})
	}
}

// TestRedisReplicaOfBloomd makes redis-server a replica of a bloomd primary: it loads the RDB that
// bloomd sends ($EOF:<mark>), then applies bloomd's stream, which must be made of commands that
// Redis applies to the same effect; a cut link continues with a partial resync.
func TestRedisReplicaOfBloomd(t *testing.T) {
	primary := startBloomd(t)
	pc := client(t, primary)
	mod, filters := redisBloomArgs(t)
	run(t, pc, workload(0, filters), false)
	replica := redistest.New(t, &redistest.Options{Args: mod})
	proxy := startProxy(t, primary.Addr)
	if _, err := replica.Do("REPLICAOF", "127.0.0.1", proxy.port()); err != nil {
		t.Fatal(err)
	}
	sameState(t, primary, replica, "after the full sync")
	run(t, pc, workload(1, filters), false)
	if n, err := pc.Do(context.Background(), "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Errorf("WAIT 1 on bloomd: %d %v", n, err)
	}
	st := sameState(t, primary, replica, "after the stream")
	checkKinds(t, st, filters)
	proxy.Cut()
	run(t, pc, workload(2, filters), false)
	sameState(t, primary, replica, "after a partial resync")
	if got := info(primary, "sync_partial_ok"); got != "1" {
		t.Errorf("bloomd counts %s partial resyncs (sync_full %s)", got, info(primary, "sync_full"))
	}
	if _, err := pc.Do(context.Background(), "FLUSHALL").Result(); err != nil {
		t.Fatal(err)
	}
	if st := sameState(t, primary, replica, "after FLUSHALL"); len(st) != 0 {
		t.Errorf("keys left after FLUSHALL: %v", st)
	}
}

// TestFullSyncUnderAdds adds to a filter of 36 MB while a replica's full sync reads it, the
// transfer held half way by a proxy so that the adds land in bits read and bits not yet read:
// a bloomd replica (bloomd's format, read while adds go on, the adds that follow replayed as
// new up to where the primary says) and, with REDISBLOOM_SO, a Redis replica (an exact RDB
// file, copied at one instant) end equal to the primary, counts and bits.
func TestFullSyncUnderAdds(t *testing.T) {
	kinds := []string{"bloomd"}
	mod, filters := redisBloomArgs(t)
	if filters {
		kinds = append(kinds, "redis")
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			// rdbcompression no: the filter's bits travel as they are, so the hold comes half way.
			primary := startBloomd(t, "appendonly no", "rdbcompression no")
			pc := client(t, primary)
			ctx := context.Background()
			if err := pc.Do(ctx, "BF.RESERVE", "big", "0.01", "30000000", "EXPANSION", "2").Err(); err != nil {
				t.Fatal(err)
			}
			add := func(from, n int) {
				for i := from; i < from+n; i += 100 {
					args := []any{"BF.MADD", "big"}
					for j := i; j < i+100; j++ {
						args = append(args, fmt.Sprint("item-", j))
					}
					if err := pc.Do(ctx, args...).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			add(0, 5000)
			var replica *redistest.Server
			if kind == "redis" {
				replica = redistest.New(t, &redistest.Options{Args: mod})
			} else {
				replica = startBloomd(t, "appendonly no")
			}
			proxy := startProxy(t, primary.Addr)
			proxy.HoldAfter(8 << 20) // the first 8 MB of the snapshot pass, then it waits
			if _, err := replica.Do("REPLICAOF", "127.0.0.1", proxy.port()); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "the transfer held", func() bool { return proxy.Holding() })
			add(5000, 20000)
			proxy.Release()
			add(25000, 2000)
			st := sameState(t, primary, replica, "after a full sync under adds")
			if !strings.Contains(st["big"], "Number of items inserted 27") {
				t.Errorf("the primary's filter: %s", st["big"])
			}
		})
	}
}

// TestReplicaOfRedisUnsupported follows a Redis primary whose stream holds what bloomd does not
// hold: writes to database 1 and a list. With rdb-skip-unknown-types no (the default) the link
// stops before the first such command, INFO replication says why, and bloomd keeps what it
// applied; CONFIG SET rdb-skip-unknown-types yes lets it continue from there, skipping and
// counting them, and applying the rest.
func TestReplicaOfRedisUnsupported(t *testing.T) {
	primary, _ := startRedis(t)
	pc := client(t, primary)
	ctx := context.Background()
	replica := startBloomd(t)
	if _, err := replica.Do("REPLICAOF", "127.0.0.1", portOf(primary)); err != nil {
		t.Fatal(err)
	}
	pc.Set(ctx, "before", "1", 0)
	sameState(t, primary, replica, "before")

	pipe := pc.Pipeline()
	pipe.Do(ctx, "SELECT", 1)
	pipe.Do(ctx, "SET", "elsewhere", "x")
	pipe.Do(ctx, "SELECT", 0)
	pipe.Do(ctx, "SET", "after-db1", "y")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the link stops", func() bool {
		return strings.Contains(info(replica, "master_link_error"), "database 1")
	})
	if v, _ := replica.Do("GET", "before"); v != "1" {
		t.Errorf("the replica lost what it applied: GET before = %q", v)
	}
	if _, err := replica.Do("CONFIG", "SET", "rdb-skip-unknown-types", "yes"); err != nil {
		t.Fatal(err)
	}
	pc.Do(ctx, "LPUSH", "list", "a", "b")
	pc.Set(ctx, "last", "z", 0)
	eventually(t, 10*time.Second, "the replica goes on", func() bool {
		return info(replica, "slave_repl_offset") == info(primary, "master_repl_offset")
	})
	for k, want := range map[string]string{"after-db1": "y", "last": "z", "elsewhere": ""} {
		if v, _ := replica.Do("GET", k); v != want {
			t.Errorf("GET %s on the replica: %q, want %q", k, v, want)
		}
	}
	if got := info(replica, "replication_skipped"); got != "command_lpush=1,db_1=1" {
		t.Errorf("replication_skipped: %q", got)
	}
	if got := info(replica, "master_link_error"); got != "" {
		t.Errorf("master_link_error once the link is up: %q", got)
	}
}

// TestFailoverBetweenRedisAndBloomd moves the primary's role from Redis to bloomd and back with
// REPLICAOF, as Sentinel does: bloomd, a replica of a Redis primary, is promoted; a Redis replica
// of the same primary follows bloomd with a partial resync (bloomd keeps the primary's history as
// its secondary ID); writes go on on bloomd; then that Redis replica is promoted and bloomd
// follows it, again with a partial resync. No full sync after the first, and the data stays
// equal throughout.
func TestFailoverBetweenRedisAndBloomd(t *testing.T) {
	primary, filters := startRedis(t)
	mod, _ := redisBloomArgs(t)
	other := redistest.New(t, &redistest.Options{Args: mod})
	bloomd := startBloomd(t)
	for _, s := range []*redistest.Server{bloomd, other} {
		if _, err := s.Do("REPLICAOF", "127.0.0.1", portOf(primary)); err != nil {
			t.Fatal(err)
		}
	}
	run(t, client(t, primary), workload(0, filters), true)
	sameState(t, primary, bloomd, "bloomd follows Redis")
	sameState(t, primary, other, "the other replica follows Redis")

	// Redis's primary goes; bloomd takes its place; the other replica follows bloomd.
	primary.Kill()
	if _, err := bloomd.Do("REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Do("REPLICAOF", "127.0.0.1", portOf(bloomd)); err != nil {
		t.Fatal(err)
	}
	run(t, client(t, bloomd), workload(1, filters), false)
	sameState(t, bloomd, other, "Redis follows bloomd")
	if full, partial := info(bloomd, "sync_full"), info(bloomd, "sync_partial_ok"); full != "0" || partial != "1" {
		t.Errorf("the Redis replica's move to bloomd: sync_full %s, sync_partial_ok %s", full, partial)
	}

	// And back: the Redis replica is promoted, bloomd follows it.
	if _, err := other.Do("REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	if _, err := bloomd.Do("REPLICAOF", "127.0.0.1", portOf(other)); err != nil {
		t.Fatal(err)
	}
	run(t, client(t, other), workload(2, filters), true)
	sameState(t, other, bloomd, "bloomd follows Redis again")
	if full, partial := info(other, "sync_full"), info(other, "sync_partial_ok"); full != "0" || partial != "1" {
		t.Errorf("bloomd's move back to Redis: sync_full %s, sync_partial_ok %s", full, partial)
	}
}
