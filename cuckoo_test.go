package bloom_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

// cuckooAdapter gives the harness the Add it expects: "added and definitely new", which is
// AddUnique's answer. A full filter is a test failure.
type cuckooAdapter struct {
	*bloom.Cuckoo
	t testing.TB
}

func (a cuckooAdapter) Add(key []byte) bool {
	ok, err := a.AddUnique(key)
	if err != nil {
		a.t.Errorf("AddUnique: %v", err)
	}
	return ok
}

// cuckooBucketSize picks the bucket size whose false-positive rate at full load, about
// 2·b/255, stays within p (at least 2, RedisBloom's default).
func cuckooBucketSize(p float64) uint16 { return uint16(max(2, min(255, int(p*255/2)))) }

func cuckooImpl(t testing.TB) conformance.Impl {
	return conformance.Impl{
		New: func(n uint64, p float64) (conformance.Filter, error) {
			c, err := bloom.NewCuckoo(n, &bloom.CuckooOptions{BucketSize: cuckooBucketSize(p), MaxFilters: 1000})
			return cuckooAdapter{c, t}, err
		},
		Marshal: func(f conformance.Filter) ([]byte, error) { return f.(cuckooAdapter).MarshalBinary() },
		Unmarshal: func(b []byte) (conformance.Filter, error) {
			var c bloom.Cuckoo
			return cuckooAdapter{&c, t}, c.UnmarshalBinary(b)
		},
		Checksummed: true,
		// The rate is set by the 8-bit fingerprint and the bucket size: p=0.1 gets buckets of
		// 12 slots (2·12/255 = 9.4% when full), p=0.02 of 2 (1.6%).
		Rates: []conformance.Rate{{N: 20_000, P: 0.1}, {N: 20_000, P: 0.02}, {N: 100_000, P: 0.02}},
	}
}

func TestCuckooConformance(t *testing.T) { conformance.Run(t, cuckooImpl(t)) }

// Removing never produces a false negative for a key added more times than removed, across
// growth, automatic compaction and CF.COMPACT: a random sequence of adds and removals of a
// small key set, checked against exact multiplicities after every step.
func TestCuckooRemoveNoFalseNegatives(t *testing.T) {
	for _, o := range []bloom.CuckooOptions{
		{MaxFilters: 1000}, {BucketSize: 1, MaxIterations: 50, Expansion: 2, MaxFilters: 100},
		{BucketSize: 4, MaxIterations: 5, MaxFilters: 1000},
	} {
		rng := rand.New(rand.NewPCG(7, uint64(o.BucketSize)))
		c, err := bloom.NewCuckoo(64, &o)
		if err != nil {
			t.Fatal(err)
		}
		keys := conformance.Keys(50, 300)
		mult := make([]int, len(keys))
		for step := range 8000 {
			i := rng.IntN(len(keys))
			switch r := rng.IntN(10); {
			case r < 6:
				if err := c.Add(keys[i]); err != nil {
					t.Fatalf("step %d: Add: %v", step, err)
				}
				mult[i]++
			case r < 9 && mult[i] > 0:
				if !c.Remove(keys[i]) {
					t.Fatalf("step %d: Remove of a key added %d times found nothing", step, mult[i])
				}
				mult[i]--
			case r == 9 && step%50 == 0:
				c.Compact()
			}
			if mult[i] > 0 && (!c.Test(keys[i]) || c.Count(keys[i]) < uint64(mult[i])) {
				t.Fatalf("step %d: key added %d more times than removed: Test %v, Count %d", step, mult[i], c.Test(keys[i]), c.Count(keys[i]))
			}
		}
		total := 0
		for i, m := range mult {
			total += m
			if m > 0 && c.Count(keys[i]) < uint64(m) {
				t.Fatalf("key %d: Count %d, added %d more times than removed", i, c.Count(keys[i]), m)
			}
		}
		if info := c.Info(); info.Items != uint64(total) {
			t.Fatalf("Info().Items = %d, want %d", info.Items, total)
		}
		t.Logf("%+v: %d filters at the end", o, c.NumFilters())
	}
}

func TestCuckooFullAndLimits(t *testing.T) {
	c, err := bloom.NewCuckoo(8, &bloom.CuckooOptions{NonScaling: true})
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, k := range conformance.Keys(60, 100) {
		if err := c.Add(k); errors.Is(err, bloom.ErrFull) {
			full++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if full == 0 || c.NumFilters() != 1 || c.Info().Items != uint64(100-full) {
		t.Fatalf("non-scaling filter: %d full, %+v", full, c.Info())
	}
	g, _ := bloom.NewCuckoo(4, &bloom.CuckooOptions{MaxFilters: 3})
	var gerr error
	for _, k := range conformance.Keys(61, 1000) {
		if gerr = g.Add(k); gerr != nil {
			break
		}
	}
	if !errors.Is(gerr, bloom.ErrFull) || g.NumFilters() != 3 {
		t.Fatalf("MaxFilters 3: err %v with %d filters", gerr, g.NumFilters())
	}
	refused := errors.New("no memory")
	h, _ := bloom.NewCuckoo(4, &bloom.CuckooOptions{Reserve: func(n uint64) error {
		if n > 0 && refused != nil {
			return nil
		}
		return refused
	}})
	h.SetReserve(func(uint64) error { return refused })
	var herr error
	for _, k := range conformance.Keys(62, 100) {
		if herr = h.Add(k); herr != nil {
			break
		}
	}
	if !errors.Is(herr, refused) || h.NumFilters() != 1 {
		t.Fatalf("refused growth: err %v with %d filters", herr, h.NumFilters())
	}
	for _, o := range []bloom.CuckooOptions{{BucketSize: 256}, {Expansion: 40000}, {MaxFilters: 70000}} {
		if _, err := bloom.NewCuckoo(100, &o); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("%+v: got %v, want ErrInvalidParameter", o, err)
		}
	}
	if _, err := bloom.NewCuckoo(1<<62, &bloom.CuckooOptions{BucketSize: 1}); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("2^62 buckets: got %v, want ErrTooLarge", err)
	}
}

// Concurrent adds, removals, tests and counts on one filter (run with -race): every key a
// goroutine added and has not removed tests present throughout.
func TestCuckooConcurrentRemove(t *testing.T) {
	c, _ := bloom.NewCuckoo(4096, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			keys := conformance.Keys(uint64(300+w), 2000)
			for i, k := range keys {
				if err := c.Add(k); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 && !c.Remove(k) {
					t.Errorf("writer %d: Remove of key %d found nothing", w, i)
					return
				}
				if i%3 != 0 && (!c.Test(k) || c.Count(k) == 0) {
					t.Errorf("writer %d: key %d absent after Add", w, i)
					return
				}
			}
			for i, k := range keys {
				if i%3 != 0 && !c.Test(k) {
					t.Errorf("writer %d: key %d lost", w, i)
					return
				}
			}
		})
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			_ = c.Info()
			_, _ = c.MarshalBinary()
		}
	}()
	wg.Wait()
}

func TestCuckooBatch(t *testing.T) {
	c, _ := bloom.NewCuckoo(1000, nil)
	keys := conformance.Keys(70, 500)
	if n, err := c.AddMany(keys[:300]); n != 300 || err != nil {
		t.Fatalf("AddMany: %d, %v", n, err)
	}
	res, err := c.AddUniqueMany(nil, keys[200:400])
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for i, r := range res {
		if r && i < 100 { // the first 100 were added already
			t.Fatalf("AddUniqueMany added key %d again", i)
		}
		if r {
			added++
		}
	}
	if added < 95 { // a new key that tests present (a false positive, about 1.6%) is not added
		t.Fatalf("AddUniqueMany added %d of 100 new keys", added)
	}
	got := c.TestMany(nil, keys[:400])
	for i, g := range got {
		if !g {
			t.Fatalf("TestMany: key %d absent", i)
		}
	}
	if n := c.RemoveMany(keys[:400]); n < 300+added {
		t.Fatalf("RemoveMany removed %d of %d", n, 300+added)
	}
}

func TestCuckooTestAllocs(t *testing.T) {
	c, _ := bloom.NewCuckoo(1000, nil)
	k := []byte("key")
	_ = c.Add(k)
	if a := testing.AllocsPerRun(100, func() { c.Test(k); c.Count(k) }); a != 0 {
		t.Errorf("Test and Count allocate %v times per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { _ = c.Add(k); c.Remove(k) }); a != 0 {
		t.Errorf("Add and Remove allocate %v times per call", a)
	}
}

// FuzzCuckooUnmarshal feeds the native decoder arbitrary bytes: it must refuse them with an
// error or return a filter that re-encodes to the same bytes, never panic or allocate wildly.
func FuzzCuckooUnmarshal(f *testing.F) {
	c, _ := bloom.NewCuckoo(16, &bloom.CuckooOptions{Expansion: 2})
	for _, k := range conformance.Keys(80, 40) {
		_ = c.Add(k)
	}
	good, _ := c.MarshalBinary()
	f.Add(good)
	f.Add(good[:70])
	f.Fuzz(func(t *testing.T, data []byte) {
		var d bloom.Cuckoo
		if err := d.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := d.MarshalBinary()
		if err != nil || string(again) != string(data) {
			t.Fatalf("decoded filter re-encodes differently (%v)", err)
		}
		d.Test([]byte("x"))
		_ = d.Add([]byte("x"))
		d.Remove([]byte("x"))
	})
}
