package redisfilter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLoad preloads from an iterator that reuses its buffer, in batches, reporting progress.
func TestLoad(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		f, err := New(ctx, c, uniqueName(t), 5000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := keys("in", 2500)
		var seen []LoadStats
		st, err := Load(ctx, f, seqOf(in), &LoadOptions{BatchSize: 1000, Progress: func(s LoadStats) { seen = append(seen, s) }})
		if err != nil {
			t.Fatal(err)
		}
		if st.Keys != 2500 || st.Batches != 3 || st.Added < 2450 || st.Added > 2500 {
			t.Fatalf("Load stats %+v; want 2500 keys in 3 batches, nearly all new", st)
		}
		if len(seen) != 3 || seen[0].Keys != 1000 || seen[1].Keys != 2000 || seen[2].Keys != 2500 {
			t.Fatalf("progress reports %+v; want after 1000, 2000 and 2500 keys", seen)
		}
		got, err := f.TestMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(formatBools(got), "0") {
			t.Fatal("keys loaded through a reused buffer are missing")
		}
		again, err := Load(ctx, f, seqOf(in), nil)
		if err != nil || again.Keys != 2500 || again.Added != 0 || again.Batches != 3 {
			t.Fatalf("loading again = %+v, %v; want 2500 keys, none new", again, err)
		}
	})
}

// TestLoadRate: Load never sends faster than its rate. The bound checked is a lower bound on the
// elapsed time, which scheduling can only lengthen.
func TestLoadRate(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		f, err := New(ctx, c, uniqueName(t), 5000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st, err := Load(ctx, f, seqOf(keys("r", 400)), &LoadOptions{BatchSize: 100, Rate: 1000})
		if err != nil {
			t.Fatal(err)
		}
		// The fourth batch may start only once 300 keys have had their 0.3 s.
		if el := time.Since(start); el < 300*time.Millisecond || st.Elapsed < 300*time.Millisecond {
			t.Fatalf("400 keys at 1000 keys/s took %v (stats %v); want at least 300ms", el, st.Elapsed)
		}
		// A context that ends while Load waits for its rate stops it.
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond) // batches due at 0, 0.2 s, 0.4 s, ...
		defer cancel()
		st, err = Load(dctx, f, seqOf(keys("slow", 100)), &LoadOptions{BatchSize: 10, Rate: 50})
		if !errors.Is(err, context.DeadlineExceeded) || st.Keys == 0 || st.Keys >= 100 {
			t.Fatalf("Load past its deadline = %+v, %v; want some batches, then context.DeadlineExceeded", st, err)
		}
	})
}

// TestLoadStopsAtError: the first failing batch ends Load with its error and the totals so far.
func TestLoadStopsAtError(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		name := uniqueName(t)
		if _, err := New(ctx, c, name, 5000, 0.01, nil); err != nil {
			t.Fatal(err)
		}
		stale := newNative(c, name, mustResolve(t), "classic", 640, 3, 10, 0.1, MaxPartBits)
		st, err := Load(ctx, stale, seqOf(keys("x", 50)), &LoadOptions{BatchSize: 10})
		if !errors.Is(err, ErrConfigMismatch) || st.Keys != 0 || st.Batches != 0 {
			t.Fatalf("Load into a mismatched filter = %+v, %v; want ErrConfigMismatch after nothing", st, err)
		}
		if _, err := Load(ctx, stale, seqOf(nil), &LoadOptions{BatchSize: -1}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("negative BatchSize: err = %v", err)
		}
		scal, err := NewScalable(ctx, c, uniqueName(t), 100, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := Load(ctx, scal, seqOf(keys("s", 1000)), nil); err != nil || st.Added < 990 {
			t.Fatalf("Load into a scalable filter = %+v, %v", st, err)
		}
	})
}

func mustResolve(t *testing.T) Options {
	o, err := (*Options)(nil).resolve()
	if err != nil {
		t.Fatal(err)
	}
	return o
}
