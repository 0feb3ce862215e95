package bloom

import (
	"math"
	"slices"
	"sync/atomic"
)

// Batch operations. A filter far larger than the CPU cache costs a cache miss (and, without huge
// pages, a TLB miss) per memory access, and a single Add or Test waits for its own misses before
// the next key is even hashed. AddMany and TestMany hash a batch of keys first and then touch
// memory for all of them in a loop without data-dependent branches, so the CPU keeps many misses
// in flight at once: the cost per key approaches the machine's throughput of independent random
// loads instead of its latency. AddMany first probes every key of the batch with plain loads
// (which overlap), then sets the bits of the keys that need them, whose lines are by then cached.

// batchSize is how many keys are hashed before memory is touched: enough to keep the CPU's
// dozen or so outstanding misses busy, few enough that their lines stay in the L1 cache
// between the probe and the add (64 keys × up to k lines).
const batchSize = 64

type hashPair = [2]uint64

// batcher is implemented by every filter type.
type batcher interface {
	hashScheme() Scheme
	addHashed(dst []bool, hs []hashPair) []bool
	testHashed(dst []bool, hs []hashPair) []bool
}

func hashBatch[K []byte | string](s Scheme, hs []hashPair, keys []K) {
	switch ks := any(keys).(type) {
	case [][]byte:
		for i, k := range ks {
			hs[i][0], hs[i][1] = s.Hash(k)
		}
	case []string:
		for i, k := range ks {
			hs[i][0], hs[i][1] = s.Hash(stringBytes(k))
		}
	}
}

func addMany[K []byte | string](f batcher, dst []bool, keys []K) []bool {
	dst = slices.Grow(dst, len(keys))
	var hs [batchSize]hashPair
	s := f.hashScheme()
	for len(keys) > 0 {
		n := min(len(keys), batchSize)
		hashBatch(s, hs[:n], keys[:n])
		dst = f.addHashed(dst, hs[:n])
		keys = keys[n:]
	}
	return dst
}

func testMany[K []byte | string](f batcher, dst []bool, keys []K) []bool {
	dst = slices.Grow(dst, len(keys))
	var hs [batchSize]hashPair
	s := f.hashScheme()
	for len(keys) > 0 {
		n := min(len(keys), batchSize)
		hashBatch(s, hs[:n], keys[:n])
		dst = f.testHashed(dst, hs[:n])
		keys = keys[n:]
	}
	return dst
}

// Classic filter.

// AddMany adds every key of keys, as Add would one after the other, and appends to dst whether
// each was definitely new. A caller that reuses dst (passing dst[:0]) allocates nothing.
func (f *Filter) AddMany(dst []bool, keys [][]byte) []bool { return addMany(f, dst, keys) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (f *Filter) TestMany(dst []bool, keys [][]byte) []bool { return testMany(f, dst, keys) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (f *Filter) AddManyStrings(dst []bool, keys []string) []bool { return addMany(f, dst, keys) }

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (f *Filter) TestManyStrings(dst []bool, keys []string) []bool { return testMany(f, dst, keys) }

func (f *Filter) hashScheme() Scheme { return f.scheme }

// probe is test without early exit: it loads all k words, so that the loads of consecutive keys
// overlap instead of waiting behind a mispredicted branch.
func (f *Filter) probe(h1, h2 uint64) bool {
	var miss uint64
	if f.scheme == Guava64 {
		x := h1
		for range f.k {
			b := f.div.mod63(x & math.MaxInt64)
			miss |= ^atomic.LoadUint64(&f.bits[b>>6]) >> (b & 63)
			x += h2
		}
		return miss&1 == 0
	}
	for i := range f.k {
		b := f.location(h1, h2, i)
		miss |= ^atomic.LoadUint64(&f.bits[b>>6]) >> (b & 63)
	}
	return miss&1 == 0
}

func (f *Filter) testHashed(dst []bool, hs []hashPair) []bool {
	for _, h := range hs {
		dst = append(dst, f.probe(h[0], h[1]))
	}
	return dst
}

func (f *Filter) addHashed(dst []bool, hs []hashPair) []bool {
	var present [batchSize]bool
	for i, h := range hs {
		present[i] = f.probe(h[0], h[1])
	}
	for i, h := range hs {
		dst = append(dst, !present[i] && f.add(h[0], h[1]))
	}
	return dst
}

// Blocked filter.

// AddMany adds every key of keys, as Add would one after the other, and appends to dst whether
// each was definitely new. A caller that reuses dst (passing dst[:0]) allocates nothing.
func (f *Blocked) AddMany(dst []bool, keys [][]byte) []bool { return addMany(f, dst, keys) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (f *Blocked) TestMany(dst []bool, keys [][]byte) []bool { return testMany(f, dst, keys) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (f *Blocked) AddManyStrings(dst []bool, keys []string) []bool { return addMany(f, dst, keys) }

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (f *Blocked) TestManyStrings(dst []bool, keys []string) []bool { return testMany(f, dst, keys) }

func (f *Blocked) hashScheme() Scheme { return Guava64 }

// probe is test without early exit.
func (f *Blocked) probe(h1, h2 uint64) bool {
	i := f.block(h1)
	blk := (*[blockWords]uint64)(f.bits[i : i+blockWords])
	var miss uint64
	for s := range f.sectors {
		word, mask := f.sector(h2, s)
		miss |= mask &^ atomic.LoadUint64(&blk[word&(blockWords-1)])
	}
	return miss == 0
}

func (f *Blocked) testHashed(dst []bool, hs []hashPair) []bool {
	for _, h := range hs {
		dst = append(dst, f.probe(h[0], h[1]))
	}
	return dst
}

func (f *Blocked) addHashed(dst []bool, hs []hashPair) []bool {
	var present [batchSize]bool
	for i, h := range hs {
		present[i] = f.probe(h[0], h[1])
	}
	for i, h := range hs {
		dst = append(dst, !present[i] && f.add(h[0], h[1]))
	}
	return dst
}

// Counting filter.

// AddMany adds every key of keys, as Add would one after the other, and appends to dst whether
// each was definitely new. A caller that reuses dst (passing dst[:0]) allocates nothing.
func (c *Counting) AddMany(dst []bool, keys [][]byte) []bool { return addMany(c, dst, keys) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (c *Counting) TestMany(dst []bool, keys [][]byte) []bool { return testMany(c, dst, keys) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (c *Counting) AddManyStrings(dst []bool, keys []string) []bool { return addMany(c, dst, keys) }

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (c *Counting) TestManyStrings(dst []bool, keys []string) []bool {
	return testMany(c, dst, keys)
}

func (c *Counting) hashScheme() Scheme { return c.scheme }

// probe is test without early exit.
func (c *Counting) probe(h1, h2 uint64) bool {
	var zero uint64
	for i := range c.k {
		v := c.counter(c.location(h1, h2, i))
		zero |= (v+counterMax)>>4 ^ 1 // 1 when v is 0
	}
	return zero == 0
}

func (c *Counting) testHashed(dst []bool, hs []hashPair) []bool {
	for _, h := range hs {
		dst = append(dst, c.probe(h[0], h[1]))
	}
	return dst
}

func (c *Counting) addHashed(dst []bool, hs []hashPair) []bool {
	for _, h := range hs {
		c.probe(h[0], h[1]) // bring the counters' lines in before the compare-and-swaps
	}
	for _, h := range hs {
		dst = append(dst, c.add(h[0], h[1]))
	}
	return dst
}

// Scalable filter.

// AddMany adds every key of keys, as Add would one after the other, and appends to dst whether
// each was definitely new. A caller that reuses dst (passing dst[:0]) allocates nothing.
func (s *Scalable) AddMany(dst []bool, keys [][]byte) []bool { return addMany(s, dst, keys) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (s *Scalable) TestMany(dst []bool, keys [][]byte) []bool { return testMany(s, dst, keys) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (s *Scalable) AddManyStrings(dst []bool, keys []string) []bool { return addMany(s, dst, keys) }

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (s *Scalable) TestManyStrings(dst []bool, keys []string) []bool {
	return testMany(s, dst, keys)
}

func (s *Scalable) hashScheme() Scheme { return Guava64 }

// testHashed probes the links one after the other for the whole batch, so each pass is a loop
// of independent loads.
func (s *Scalable) testHashed(dst []bool, hs []hashPair) []bool {
	start := len(dst)
	for range hs {
		dst = append(dst, false)
	}
	found := dst[start:]
	links := *s.links.Load()
	for j := len(links) - 1; j >= 0; j-- {
		f := links[j].f
		for i, h := range hs {
			found[i] = f.probe(h[0], h[1]) || found[i]
		}
	}
	return dst
}

func (s *Scalable) addHashed(dst []bool, hs []hashPair) []bool {
	links := *s.links.Load()
	newest := links[len(links)-1].f
	for _, h := range hs {
		newest.probe(h[0], h[1]) // bring in the lines the adds will write
	}
	for _, h := range hs {
		dst = append(dst, s.add(h[0], h[1]))
	}
	return dst
}
