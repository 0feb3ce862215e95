package bloom

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
)

// Batch operations. A filter far larger than the CPU cache costs a cache miss (and, without huge
// pages, a TLB miss) per memory access, and a single Add or Test waits for its own misses before
// the next key is even hashed. AddMany and TestMany hash keys ahead of touching memory, so the
// CPU keeps many misses in flight at once and the cost per key approaches the machine's
// throughput of independent random loads instead of its latency:
//
//   - small filters (mostly cached): hash batchSize keys, then probe them all in a loop without
//     data-dependent branches;
//   - blocked filters over 4 MiB, classic and counting ones over 32 MiB: software pipelining. The
//     keys are hashed in small groups; the words of the next group are prefetched (PREFETCHT0
//     on amd64, which retires at once; plain loads elsewhere) while the current group, whose
//     words were prefetched a group earlier, is probed or added.
//
// Results are exactly those of Add or Test called key by key, in order.

// batchSize is how many keys are hashed before memory is touched: enough to keep the CPU's
// dozen or so outstanding misses busy, few enough that their lines stay in the L1 cache
// between the probe and the add (64 keys × up to k lines).
const batchSize = 64

// prefetchGroup is how many keys ahead the blocked filter's batches prefetch: about one memory
// latency's worth of work (measured best among 8 to 128 at n = 1e8).
const prefetchGroup = 16

// blockedPrefetchWords is the array size (4 MiB, about the L2 cache) up to which blocked batches
// do not prefetch: at n = 1e6 (1.3 MB) the pipeline cost 1.3 ns per key and gained nothing.
var blockedPrefetchWords = 4 << 20 / 8

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
	if f.k > maxFastK || len(f.bits) <= classicPrefetchWords {
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
	// Large filters: prefetch the k words of the next group of keys while probing this one.
	var bufs [2][classicGroup]hashPair
	cur := bufs[0][:min(classicGroup, n)]
	hashKeys(f.scheme, cur, bs, ss, 0)
	f.prefetch(cur)
	for from, i := 0, 0; from < n; i ^= 1 {
		nextFrom := from + len(cur)
		next := bufs[i^1][:min(classicGroup, n-nextFrom)]
		if len(next) > 0 {
			hashKeys(f.scheme, next, bs, ss, nextFrom)
			f.prefetch(next)
		}
		if add {
			for _, h := range cur {
				dst = append(dst, f.add(h[0], h[1]))
			}
		} else {
			for _, h := range cur {
				dst = append(dst, f.probe(h[0], h[1]))
			}
		}
		from, cur = nextFrom, next
	}
	return dst
}

// classicGroup is how many keys ahead a large classic (or counting) filter's batches prefetch;
// with k words per key a few keys are already a memory latency's worth of misses. Measured at
// n = 1e8: 173 ns per key without prefetching, 167 with groups of 1, 114 of 2, 104 of 4, 109 of
// 8, 111 of 16.
const classicGroup = 4

// classicPrefetchWords is the array size (32 MiB) from which classic and counting batches
// prefetch; smaller arrays are mostly cached and the plain probe loop is faster. (A variable so
// that a test can run the prefetching path on small filters.)
var classicPrefetchWords = 32 << 20 / 8

// prefetch asks for the k words of each key of a group.
func (f *Filter) prefetch(hs []hashPair) {
	var idx [classicGroup * maxFastK]uint64
	n := 0
	for _, h := range hs {
		for i := range f.k {
			idx[n] = f.location(h[0], h[1], i) >> 6
			n++
		}
	}
	prefetchWords(f.bits, idx[:n])
}

// probe is test without early exit: it loads all k words, so that the loads of consecutive keys
// overlap instead of waiting behind a mispredicted branch.
func (f *Filter) probe(h1, h2 uint64) bool {
	var miss uint64
	if f.fast63 {
		x := h1
		for range f.k {
			b := f.div.mod63(x & math.MaxInt64)
			miss |= bitMask[b&63] &^ atomic.LoadUint64(&f.bits[b>>6])
			x += h2
		}
		return miss == 0
	}
	for i := range f.k {
		b := f.location(h1, h2, i)
		miss |= bitMask[b&63] &^ atomic.LoadUint64(&f.bits[b>>6])
	}
	return miss == 0
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
	for _, h := range hs {
		dst = append(dst, f.add(h[0], h[1]))
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

// many hashes the keys in groups of prefetchGroup and software-pipelines them: it prefetches
// the blocks of the next group, then tests or adds the current one, whose blocks were prefetched
// a group earlier. A prefetch retires at once, unlike a load, so the misses of one group are
// served while the CPU hashes and probes another (30 to 22 ns per key at n = 1e8).
func (f *Blocked) many(dst []bool, bs [][]byte, ss []string, add bool) []bool {
	n := max(len(bs), len(ss))
	dst = slices.Grow(dst, n)
	if len(f.bits) <= blockedPrefetchWords {
		var hs [batchSize]hashPair
		for from := 0; from < n; from += batchSize {
			group := hs[:min(batchSize, n-from)]
			hashKeys(Guava64, group, bs, ss, from)
			for _, h := range group {
				if add {
					dst = append(dst, f.add(h[0], h[1]))
				} else {
					dst = append(dst, f.probe(h[0], h[1]))
				}
			}
		}
		return dst
	}
	var bufs [2][prefetchGroup]hashPair
	cur := bufs[0][:min(prefetchGroup, n)]
	hashKeys(Guava64, cur, bs, ss, 0)
	f.prefetch(cur)
	for from, i := 0, 0; from < n; i ^= 1 {
		nextFrom := from + len(cur)
		next := bufs[i^1][:min(prefetchGroup, n-nextFrom)]
		if len(next) > 0 {
			hashKeys(Guava64, next, bs, ss, nextFrom)
			f.prefetch(next)
		}
		if add {
			for _, h := range cur {
				dst = append(dst, f.add(h[0], h[1]))
			}
		} else {
			for _, h := range cur {
				dst = append(dst, f.probe(h[0], h[1]))
			}
		}
		from, cur = nextFrom, next
	}
	return dst
}

// prefetch asks for the blocks of a group of hashed keys.
func (f *Blocked) prefetch(hs []hashPair) {
	var idx [prefetchGroup]uint64
	for i, h := range hs {
		hi, _ := bits.Mul64(h[0], f.blocks)
		idx[i] = hi * blockWords
	}
	prefetchWords(f.bits, idx[:len(hs)])
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
	if c.k > maxFastK || len(c.words) <= classicPrefetchWords {
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
	// Large filters: prefetch the counters of the next group of keys, as Filter.many does.
	var bufs [2][classicGroup]hashPair
	cur := bufs[0][:min(classicGroup, n)]
	hashKeys(c.scheme, cur, bs, ss, 0)
	c.prefetch(cur)
	for from, i := 0, 0; from < n; i ^= 1 {
		nextFrom := from + len(cur)
		next := bufs[i^1][:min(classicGroup, n-nextFrom)]
		if len(next) > 0 {
			hashKeys(c.scheme, next, bs, ss, nextFrom)
			c.prefetch(next)
		}
		if add {
			for _, h := range cur {
				dst = append(dst, c.add(h[0], h[1]))
			}
		} else {
			for _, h := range cur {
				dst = append(dst, c.probe(h[0], h[1]))
			}
		}
		from, cur = nextFrom, next
	}
	return dst
}

// prefetch asks for the counter words of each key of a group.
func (c *Counting) prefetch(hs []hashPair) {
	var idx [classicGroup * maxFastK]uint64
	n := 0
	for _, h := range hs {
		for i := range c.k {
			idx[n] = c.location(h[0], h[1], i) >> 4
			n++
		}
	}
	prefetchWords(c.words, idx[:n])
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

// testHashed tests the links one after the other for the whole batch, skipping keys already
// found. It uses each link's test, which stops at the first clear bit: a chain probes several
// links per absent key, and probing every bit of each (as probe does) cost 151 ns per key
// against 113 for single Tests at n = 1e6.
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
			if !found[i] {
				found[i] = f.test(h[0], h[1])
			}
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
