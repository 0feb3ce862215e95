package persist_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// valueState is what the clients of the value crash test were told, per client: bits
// acknowledged as set in its bitmap, its counters (HINCRBY, BITFIELD INCRBY) and appended
// string, and the hash fields it set; in flight counts a command whose reply never came, which
// may or may not have taken effect.
type valueState struct {
	mu      sync.Mutex
	bits    map[string][]int64 // key -> offsets set with SETBIT ... 1
	fields  map[int][]string   // client -> fields set with HSET
	counts  map[int]int64      // client -> HINCRBY and BITFIELD INCRBY acknowledged
	appends map[int]string     // client -> the string APPENDs acknowledged
	flight  map[int]string     // client -> the operation in flight when its connection broke
}

// streamValues changes client id's bitmap, hash and string, and sets bits of a bitmap all the
// clients share, until the connection breaks.
func streamValues(ctx context.Context, addr string, id int, st *valueState, rng *rand.Rand) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 5 * time.Second})
	defer c.Close()
	bitmap, hash, str := fmt.Sprintf("bits:%d", id), fmt.Sprintf("hash:%d", id), fmt.Sprintf("str:%d", id)
	for n := 0; ctx.Err() == nil; n++ {
		var err error
		op := rng.IntN(6)
		switch op {
		case 0, 1:
			key := bitmap
			if op == 1 {
				key = "bits:shared"
			}
			off := rng.Int64N(1 << 22) // bitmaps of up to 512 KiB
			err = c.SetBit(ctx, key, off, 1).Err()
			if err == nil {
				st.mu.Lock()
				st.bits[key] = append(st.bits[key], off)
				st.mu.Unlock()
			}
		case 2:
			f := fmt.Sprintf("f%d", n)
			err = c.HSet(ctx, hash, f, strings.Repeat("v", rng.IntN(100))).Err()
			if err == nil {
				st.mu.Lock()
				st.fields[id] = append(st.fields[id], f)
				st.mu.Unlock()
			}
		case 3:
			err = c.HIncrBy(ctx, hash, "n", 1).Err()
		case 4:
			err = c.Do(ctx, "BITFIELD", bitmap, "INCRBY", "u32", "#1000000", "1").Err()
		case 5:
			tok := fmt.Sprintf("<%d:%d>", id, n)
			err = c.Append(ctx, str, tok).Err()
			if err == nil {
				st.mu.Lock()
				st.appends[id] += tok
				st.mu.Unlock()
			} else {
				st.mu.Lock()
				st.flight[id] = tok
				st.mu.Unlock()
			}
		}
		if err != nil {
			if op == 3 || op == 4 {
				st.mu.Lock()
				st.flight[id] = "count"
				st.mu.Unlock()
			}
			return
		}
		if op == 3 || op == 4 {
			st.mu.Lock()
			st.counts[id]++
			st.mu.Unlock()
		}
	}
}

// verifyValues checks that every acknowledged change is in the restarted server.
func verifyValues(t *testing.T, addr string, st *valueState) (bits, fields int) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	st.mu.Lock()
	defer st.mu.Unlock()
	for key, offs := range st.bits {
		pipe := c.Pipeline()
		cmds := make([]*redis.IntCmd, len(offs))
		for i, off := range offs {
			cmds[i] = pipe.GetBit(ctx, key, off)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			if cmd.Val() != 1 {
				t.Fatalf("%s: bit %d, acknowledged as set, is %d after the restart", key, offs[i], cmd.Val())
			}
			bits++
		}
	}
	for id, fs := range st.fields {
		got, err := c.HGetAll(ctx, fmt.Sprintf("hash:%d", id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if _, ok := got[f]; !ok {
				t.Fatalf("client %d: field %s, acknowledged, is missing after the restart", id, f)
			}
			fields++
		}
	}
	for id := range st.counts {
		n, _ := c.HGet(ctx, fmt.Sprintf("hash:%d", id), "n").Int64()
		v, err := c.Do(ctx, "BITFIELD", fmt.Sprintf("bits:%d", id), "GET", "u32", "#1000000").Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		got, want := n+v[0], st.counts[id]
		inFlight := int64(0)
		if st.flight[id] == "count" {
			inFlight = 1
		}
		if got < want || got > want+inFlight {
			t.Fatalf("client %d: counters sum to %d; %d increments were acknowledged, %d in flight", id, got, want, inFlight)
		}
		st.counts[id] = got // what was in flight is settled now
	}
	for id, want := range st.appends {
		got, err := c.Get(ctx, fmt.Sprintf("str:%d", id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got != want && got != want+st.flight[id] {
			t.Fatalf("client %d: string of %d bytes after the restart; %d acknowledged (and %q in flight)", id, len(got), len(want), st.flight[id])
		}
		st.appends[id] = got
	}
	clear(st.flight)
	return bits, fields
}

// TestCrashValues kills bloomd (appendfsync always) at random moments while clients change
// bitmaps, hashes and strings in place, with log rewrites (snapshots taken while the values
// change) among them, and checks after each restart that every acknowledged change is there:
// every bit set, every field, every increment, every append, in order.
func TestCrashValues(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	budget := crashBudget(15 * time.Second)
	dir := t.TempDir()
	args := []string{"--appendonly", "yes", "--appendfsync", "always", "--auto-aof-rewrite-min-size", "100kb", "--auto-aof-rewrite-percentage", "50"}
	st := &valueState{bits: map[string][]int64{}, fields: map[int][]string{}, counts: map[int]int64{},
		appends: map[int]string{}, flight: map[int]string{}}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	bloomd(t) // built before the budget starts
	start := time.Now()
	rounds, snapshots := 0, 0
	for ; rounds < 40 && time.Since(start) < budget; rounds++ {
		p := startBloomd(t, dir, args...)
		verifyValues(t, p.addr, st)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for id := range 4 {
			wg.Add(1)
			r := rand.New(rand.NewPCG(rng.Uint64(), uint64(id)))
			go func() { defer wg.Done(); streamValues(ctx, p.addr, id, st, r) }()
		}
		if rng.IntN(2) == 0 {
			delay := time.Duration(rng.IntN(300)) * time.Millisecond
			go func() {
				time.Sleep(delay)
				c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
				c.Do(ctx, "BGREWRITEAOF")
				c.Close()
			}()
		}
		time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
		p.kill()
		cancel()
		wg.Wait()
		snapshots += bytes.Count(p.stderr.Bytes(), []byte("snapshot saved"))
		if t.Failed() {
			t.Logf("bloomd's log:\n%s", p.stderr)
			return
		}
	}
	p := startBloomd(t, dir, args...)
	bits, fields := verifyValues(t, p.addr, st)
	p.kill()
	t.Logf("%d rounds in %s, %d snapshots completed: %d acknowledged bits and %d fields present, every increment and append counted",
		rounds, time.Since(start).Round(time.Millisecond), snapshots, bits, fields)
	if rounds < 3 {
		t.Fatalf("only %d rounds ran", rounds)
	}
}
