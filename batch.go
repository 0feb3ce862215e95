package bloom

import (
	"math"
	"math/bits"
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

// hashKeys hashes the keys of one batch, taken from whichever of b and s is non-nil, starting at
// index from, into hs.
func hashKeys(sch Scheme, hs []hashPair, b [][]byte, s []string, from int) {
	if b != nil {
		b = b[from : from+len(hs)]
		for i := range hs {
			hs[i][0], hs[i][1] = sch.Hash(b[i])
		}
		return
	}
	s = s[from : from+len(hs)]
	for i := range hs {
		hs[i][0], hs[i][1] = sch.Hash(stringBytes(s[i]))
	}
}

// Each filter type has its own driver, many, which hashes batchSize keys at a time into an array
// on the stack and hands them to its addHashed or testHashed. (A shared driver would call those
// through an interface, and the array would escape to the heap.)

// Classic filter.

// AddMany adds every key of keys, as Add would one after the other, and appends to dst whether
// each was definitely new. A caller that reuses dst (passing dst[:0]) allocates nothing.
func (f *Filter) AddMany(dst []bool, keys [][]byte) []bool { return f.many(dst, keys, nil, true) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (f *Filter) TestMany(dst []bool, keys [][]byte) []bool { return f.many(dst, keys, nil, false) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (f *Filter) AddManyStrings(dst []bool, keys []string) []bool {
	return f.many(dst, nil, keys, true)
}

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (f *Filter) TestManyStrings(dst []bool, keys []string) []bool {
	return f.many(dst, nil, keys, false)
}

func (f *Filter) many(dst []bool, bs [][]byte, ss []string, add bool) []bool {
	n := max(len(bs), len(ss))
	dst = slices.Grow(dst, n)
	var hs [batchSize]hashPair
	for from := 0; from < n; from += batchSize {
		h := hs[:min(batchSize, n-from)]
		hashKeys(f.scheme, h, bs, ss, from)
		if add {
			dst = f.addHashed(dst, h)
		} else {
			dst = f.testHashed(dst, h)
		}
	}
	return dst
}

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

// The classic batch probes without a separate touch pass: its probe already issues k independent
// loads per key, and a touch pass (as the blocked filter has) measured 10% slower at n = 1e7.
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
func (f *Blocked) AddMany(dst []bool, keys [][]byte) []bool { return f.many(dst, keys, nil, true) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (f *Blocked) TestMany(dst []bool, keys [][]byte) []bool { return f.many(dst, keys, nil, false) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (f *Blocked) AddManyStrings(dst []bool, keys []string) []bool {
	return f.many(dst, nil, keys, true)
}

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (f *Blocked) TestManyStrings(dst []bool, keys []string) []bool {
	return f.many(dst, nil, keys, false)
}

func (f *Blocked) many(dst []bool, bs [][]byte, ss []string, add bool) []bool {
	n := max(len(bs), len(ss))
	dst = slices.Grow(dst, n)
	var hs [batchSize]hashPair
	for from := 0; from < n; from += batchSize {
		h := hs[:min(batchSize, n-from)]
		hashKeys(Guava64, h, bs, ss, from)
		if add {
			dst = f.addHashed(dst, h)
		} else {
			dst = f.testHashed(dst, h)
		}
	}
	return dst
}

// probe is test without early exit.
func (f *Blocked) probe(h1, h2 uint64) bool {
	if f.sectors == 2 {
		return f.test2(h1, h2)
	}
	blk := f.block(h1)
	var miss uint64
	for s := range f.sectors {
		word, mask := f.sector(h2, s)
		miss |= mask &^ atomic.LoadUint64(&blk[word&(blockWords-1)])
	}
	return miss == 0
}

func (f *Blocked) testHashed(dst []bool, hs []hashPair) []bool {
	f.touch(hs)
	for _, h := range hs {
		dst = append(dst, f.probe(h[0], h[1]))
	}
	return dst
}

func (f *Blocked) addHashed(dst []bool, hs []hashPair) []bool {
	f.touch(hs)
	for _, h := range hs {
		dst = append(dst, f.add(h[0], h[1]))
	}
	return dst
}

// touch loads one word of every key's block (the whole line comes with it) in a loop of a few
// instructions per key, so the CPU overlaps as many misses as it can track: 25% faster per key
// than probing directly, at n = 1e7 and 1e8.
func (f *Blocked) touch(hs []hashPair) {
	for _, h := range hs {
		hi, _ := bits.Mul64(h[0], f.blocks)
		atomic.LoadUint64(&f.bits[hi*blockWords])
	}
}

// Counting filter.

// AddMany adds every key of keys, as Add would one after the other, and appends to dst whether
// each was definitely new. A caller that reuses dst (passing dst[:0]) allocates nothing.
func (c *Counting) AddMany(dst []bool, keys [][]byte) []bool { return c.many(dst, keys, nil, true) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (c *Counting) TestMany(dst []bool, keys [][]byte) []bool { return c.many(dst, keys, nil, false) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (c *Counting) AddManyStrings(dst []bool, keys []string) []bool {
	return c.many(dst, nil, keys, true)
}

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (c *Counting) TestManyStrings(dst []bool, keys []string) []bool {
	return c.many(dst, nil, keys, false)
}

func (c *Counting) many(dst []bool, bs [][]byte, ss []string, add bool) []bool {
	n := max(len(bs), len(ss))
	dst = slices.Grow(dst, n)
	var hs [batchSize]hashPair
	for from := 0; from < n; from += batchSize {
		h := hs[:min(batchSize, n-from)]
		hashKeys(c.scheme, h, bs, ss, from)
		if add {
			dst = c.addHashed(dst, h)
		} else {
			dst = c.testHashed(dst, h)
		}
	}
	return dst
}

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
func (s *Scalable) AddMany(dst []bool, keys [][]byte) []bool { return s.many(dst, keys, nil, true) }

// TestMany appends to dst, for each key of keys, what Test would report.
func (s *Scalable) TestMany(dst []bool, keys [][]byte) []bool { return s.many(dst, keys, nil, false) }

// AddManyStrings is AddMany for the UTF-8 bytes of strings.
func (s *Scalable) AddManyStrings(dst []bool, keys []string) []bool {
	return s.many(dst, nil, keys, true)
}

// TestManyStrings is TestMany for the UTF-8 bytes of strings.
func (s *Scalable) TestManyStrings(dst []bool, keys []string) []bool {
	return s.many(dst, nil, keys, false)
}

func (s *Scalable) many(dst []bool, bs [][]byte, ss []string, add bool) []bool {
	n := max(len(bs), len(ss))
	dst = slices.Grow(dst, n)
	var hs [batchSize]hashPair
	for from := 0; from < n; from += batchSize {
		h := hs[:min(batchSize, n-from)]
		hashKeys(Guava64, h, bs, ss, from)
		if add {
			dst = s.addHashed(dst, h)
		} else {
			dst = s.testHashed(dst, h)
		}
	}
	return dst
}

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
