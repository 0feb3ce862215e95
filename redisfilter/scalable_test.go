package redisfilter

import (
	"errors"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// localChain is the in-process model of a scalable filter: the same links, built from the core
// library's filters, with the same rule for where a key goes.
type localChain struct {
	s      *ScalableFilter
	links  []*bloom.Filter
	counts []uint64
}

func (c *localChain) add(key []byte) bool {
	for i := len(c.links) - 1; i >= 0; i-- {
		if c.links[i].Test(key) {
			return false
		}
	}
	last := len(c.links) - 1
	if last < 0 || (c.counts[last] >= c.s.links[last].capacity && len(c.links) < len(c.s.links)) {
		l := c.s.links[len(c.links)]
		f, err := bloom.NewWithParams(l.m, l.k, c.s.scheme)
		if err != nil {
			panic(err)
		}
		c.links, c.counts = append(c.links, f), append(c.counts, 0)
		last++
	}
	c.links[last].Add(key)
	c.counts[last]++
	return true
}

func (c *localChain) test(key []byte) bool {
	for _, l := range c.links {
		if l.Test(key) {
			return true
		}
	}
	return false
}

// TestScalableMatchesModel grows a chain in Redis, through single adds and through batches that
// cross several growths, and checks every answer, the chain's length and its count against the
// in-process model and the core library's bloom.Scalable; then the false-positive rate against p.
func TestScalableMatchesModel(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s, err := NewScalable(ctx, c, uniqueName(t), 100, 0.01, &Options{ScriptKeys: 50})
		if err != nil {
			t.Fatal(err)
		}
		model := &localChain{s: s}
		core, err := bloom.NewScalable(100, 0.01, nil) // the core library's scalable filter
		if err != nil {
			t.Fatal(err)
		}
		in := keys("in", 2000)
		var got []bool
		for i := range 150 { // single adds: growth from the next link the handle sends
			ok, err := s.Add(ctx, in[i])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ok)
		}
		rest, err := s.AddMany(ctx, in[150:]) // 1850 keys: grows four more times in one call
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rest...)
		want := 0
		for i, key := range in {
			w := model.add(key)
			if got[i] != w {
				t.Fatalf("Add(%q) = %v; model %v", key, got[i], w)
			}
			if cw := core.Add(key); got[i] != cw {
				t.Fatalf("Add(%q) = %v; bloom.Scalable %v", key, got[i], cw)
			}
			if w {
				want++
			}
		}
		if links, err := s.Links(ctx); err != nil || links != len(model.links) || links != 5 {
			t.Fatalf("chain has %d links (%v); model %d, want 5 (100+200+400+800 < 2000)", links, err, len(model.links))
		}
		if n, err := s.Count(ctx); err != nil || n != uint64(want) || n != core.Count() {
			t.Fatalf("Count = %d, %v; want %d (bloom.Scalable: %d)", n, err, want, core.Count())
		}
		present, err := s.TestMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(formatBools(present), "0") {
			t.Fatal("false negatives in a grown chain")
		}
		out := keys("out", 20000)
		res, err := s.TestMany(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		fp := 0
		for i, key := range out {
			if res[i] != model.test(key) || res[i] != core.Test(key) {
				t.Fatalf("Test(%q) = %v; model %v, bloom.Scalable %v", key, res[i], model.test(key), core.Test(key))
			}
			if res[i] {
				fp++
			}
		}
		// The compound rate is below p = 1%: about 200 at most expected; 280 is 5 sigma above.
		if fp > 280 {
			t.Errorf("%d false positives in %d absent keys; the bound is p = 1%%", fp, len(out))
		}
	})
}

// TestScalableStaleHandle: a handle that has not seen the chain grow gets a short answer from
// the script, resends once with the new length, and answers correctly.
func TestScalableStaleHandle(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		name := uniqueName(t)
		a, err := NewScalable(ctx, c, name, 50, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := OpenScalable(ctx, c, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := keys("in", 500)
		if _, err := a.AddMany(ctx, in); err != nil {
			t.Fatal(err)
		}
		hook := &counter{}
		c.AddHook(hook)
		ok, err := b.Test(ctx, in[499])
		if err != nil || !ok {
			t.Fatalf("stale handle Test = %v, %v", ok, err)
		}
		if s, _, _, _ := hook.get(); s != 2 {
			t.Errorf("stale handle Test took %d round trips; want 2 (short answer, then resend)", s)
		}
		hook.reset()
		if ok, err := b.Add(ctx, []byte("fresh")); err != nil || !ok {
			t.Fatalf("Add = %v, %v", ok, err)
		}
		if s, _, _, _ := hook.get(); s != 1 {
			t.Errorf("up-to-date handle Add took %d round trips; want 1", s)
		}
		if _, err := NewScalable(ctx, c, name, 50, 0.001, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "p: stored 0.01, this handle 0.001") {
			t.Fatalf("NewScalable with another p: err = %v", err)
		}
		if _, err := OpenScalable(ctx, c, uniqueName(t), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("OpenScalable of a missing filter: err = %v", err)
		}
		if _, err := Open(ctx, c, name, nil); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("Open (classic) of a scalable filter: err = %v", err)
		}
	})
}

// TestScalableStopsGrowing: when the next link would exceed PartBits, the chain keeps its links
// and adds to the newest beyond its capacity, without false negatives.
func TestScalableStopsGrowing(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		s, err := NewScalable(ctx, c, uniqueName(t), 100, 0.01, &Options{PartBits: 8192})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.links) != 3 {
			t.Fatalf("%d links fit in 8192 bits each; want 3", len(s.links))
		}
		in := keys("in", 3000)
		if _, err := s.AddMany(ctx, in); err != nil {
			t.Fatal(err)
		}
		if links, err := s.Links(ctx); err != nil || links != 3 {
			t.Fatalf("chain has %d links, %v; want 3", links, err)
		}
		r, err := s.TestMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(formatBools(r), "0") {
			t.Fatal("false negatives in a chain that stopped growing")
		}
		if _, err := NewScalable(ctx, c, s.name, 100, 0.01, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "maxlinks: stored 3") {
			t.Fatalf("a handle with another link limit: err = %v", err)
		}
	})
}

// TestScalableForeignLinkKey: a key squatting where the chain would grow is refused before the
// add writes anything.
func TestScalableForeignLinkKey(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		s, err := NewScalable(ctx, c, uniqueName(t), 10, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, s.links[1].key, "f", "squatter").Err(); err != nil {
			t.Fatal(err)
		}
		before, _ := c.Get(ctx, s.links[0].key).Result()
		_, err = s.AddMany(ctx, keys("k", 50))
		if !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "key "+s.links[1].key+" exists beyond the chain's last link") {
			t.Fatalf("AddMany with a foreign key at the next link: err = %v", err)
		}
		if after, _ := c.Get(ctx, s.links[0].key).Result(); after != before {
			t.Fatal("the refused AddMany wrote bits")
		}
	})
}
