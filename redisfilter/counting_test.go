package redisfilter

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// counters reads a key's k counters straight from Redis.
func counters(t *testing.T, c redis.UniversalClient, f *CountingFilter, key []byte) []int64 {
	t.Helper()
	args := []any{}
	for _, j := range f.f.scheme.Locations(nil, key, f.f.k, f.f.m) {
		args = append(args, "GET", "u4", fmt.Sprintf("#%d", j))
	}
	v, err := c.BitField(ctxT(t), f.Keys()[1], args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCountingAddRemove(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		f, err := NewCounting(ctx, c, uniqueName(t), 1000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := keys("in", 600)
		added, err := f.AddMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(formatBools(added), "1"); n < 590 {
			t.Errorf("only %d of 600 distinct keys reported new", n)
		}
		for _, key := range in[:300] {
			if err := f.Remove(ctx, key); err != nil {
				t.Fatalf("Remove(%q): %v", key, err)
			}
		}
		kept, err := f.TestMany(ctx, in[300:])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(formatBools(kept), "0") {
			t.Fatal("removing some keys made other keys test absent (false negatives)")
		}
		gone, err := f.TestMany(ctx, in[:300])
		if err != nil {
			t.Fatal(err)
		}
		// Removed keys now answer like never-added ones: about 1% false positives at 300 keys
		// (fewer than the 1000 the filter is sized for). 15 is over 5 sigma above 3.
		if n := strings.Count(formatBools(gone), "1"); n > 15 {
			t.Errorf("%d of 300 removed keys still test present", n)
		}
		// A key that is definitely absent: Remove fails and changes nothing.
		absent := []byte("never added")
		if ok, _ := f.Test(ctx, absent); ok {
			t.Skip("the probe key is a false positive; pick another")
		}
		before, _ := c.Get(ctx, f.Keys()[1]).Result()
		if err := f.Remove(ctx, absent); !errors.Is(err, ErrNotPresent) {
			t.Fatalf("Remove(absent) err = %v; want ErrNotPresent", err)
		}
		if after, _ := c.Get(ctx, f.Keys()[1]).Result(); after != before {
			t.Fatal("a refused Remove changed the counters")
		}
	})
}

// TestCountingSaturation: counters stop at 15 and then never decrement, so a key added more than
// 15 times stays present however often it is removed, and Add twice / Remove once keeps it.
func TestCountingSaturation(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		f, err := NewCounting(ctx, c, uniqueName(t), 1000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		twice := []byte("twice")
		for range 2 {
			if _, err := f.Add(ctx, twice); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Remove(ctx, twice); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.Test(ctx, twice); err != nil || !ok {
			t.Fatalf("after 2 adds and 1 remove, Test = %v, %v; want present", ok, err)
		}
		if err := f.Remove(ctx, twice); err != nil {
			t.Fatal(err)
		}
		if err := f.Remove(ctx, twice); !errors.Is(err, ErrNotPresent) {
			t.Fatalf("third Remove of a key added twice: err = %v; want ErrNotPresent", err)
		}

		hot := []byte("hot")
		for i := range 20 {
			isNew, err := f.Add(ctx, hot)
			if err != nil {
				t.Fatal(err)
			}
			if isNew != (i == 0) {
				t.Fatalf("Add #%d of the same key reported new=%v", i+1, isNew)
			}
		}
		for _, v := range counters(t, c, f, hot) {
			if v != 15 {
				t.Fatalf("counters after 20 adds = %v; want all saturated at 15", counters(t, c, f, hot))
			}
		}
		for range 25 {
			if err := f.Remove(ctx, hot); err != nil {
				t.Fatalf("Remove of a saturated key: %v", err)
			}
		}
		for _, v := range counters(t, c, f, hot) {
			if v != 15 {
				t.Fatalf("saturated counters changed by Remove: %v", counters(t, c, f, hot))
			}
		}
	})
}

func TestCountingParams(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		name := uniqueName(t)
		f, err := NewCounting(ctx, c, name, 1000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewCounting(ctx, c, name, 2000, 0.01, nil); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("NewCounting with other n: err = %v; want ErrConfigMismatch", err)
		}
		if _, err := New(ctx, c, name, 1000, 0.01, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "kind: stored counting, this handle classic") {
			t.Fatalf("a classic handle on a counting filter: err = %v", err)
		}
		if _, err := Open(ctx, c, name, nil); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("Open (classic) of a counting filter: err = %v; want ErrConfigMismatch", err)
		}
		o, err := OpenCounting(ctx, c, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.M() != f.M() || o.K() != f.K() {
			t.Fatalf("OpenCounting: m=%d k=%d; want %d, %d", o.M(), o.K(), f.M(), f.K())
		}
		if _, err := NewCounting(ctx, c, uniqueName(t), 1e9, 0.01, nil); !errors.Is(err, ErrInvalid) {
			t.Fatalf("NewCounting beyond MaxCounters: err = %v; want ErrInvalid", err)
		}
		if err := f.Remove(ctx, []byte("x")); !errors.Is(err, ErrNotPresent) {
			t.Fatalf("Remove from an empty filter: err = %v", err)
		}
	})
}

// TestCountingMatchesCore runs one sequence of adds (some repeated) and removes (some of keys
// never added) on a Redis counting filter and on the core library's bloom.Counting with the same
// sizing: every answer agrees.
func TestCountingMatchesCore(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		f, err := NewCounting(ctx, c, uniqueName(t), 500, 0.05, nil)
		if err != nil {
			t.Fatal(err)
		}
		core, err := bloom.NewCounting(500, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if core.M() != f.M() || core.K() != f.K() {
			t.Fatalf("sizes differ: Redis m=%d k=%d, core m=%d k=%d", f.M(), f.K(), core.M(), core.K())
		}
		rng := rand.New(rand.NewPCG(7, 7)) // fixed seed
		for i := range 3000 {
			key := []byte(fmt.Sprintf("key-%d", rng.IntN(800)))
			switch rng.IntN(3) {
			case 0, 1:
				got, err := f.Add(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if want := core.Add(key); got != want {
					t.Fatalf("op %d: Add(%q) = %v; core %v", i, key, got, want)
				}
			case 2:
				err := f.Remove(ctx, key)
				cerr := core.Remove(key)
				if (err == nil) != (cerr == nil) || (err != nil && !errors.Is(err, ErrNotPresent)) {
					t.Fatalf("op %d: Remove(%q) = %v; core %v", i, key, err, cerr)
				}
			}
		}
		probe := keys("key", 1000)
		got, err := f.TestMany(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range probe {
			if got[i] != core.Test(key) {
				t.Fatalf("Test(%q) = %v; core %v", key, got[i], !got[i])
			}
		}
	})
}
