package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"
)

// Filter is a classic Bloom filter: m bits, k positions per key, all in one lock-free bit array.
// It is bit-for-bit compatible with Guava's BloomFilter when created by New (or NewWithParams
// with Guava64 or Guava32), and with one RedisBloom sub-filter under RedisBloom64. NewExact
// makes filters whose modulus is any m, for layouts that do not round to words.
//
// A Filter is safe for concurrent use by multiple goroutines without locks: Add ORs its bits in
// with atomic instructions and Test reads them with atomic loads, so concurrent Adds never lose
// bits and a Test that runs after an Add returns (in the happens-before sense) sees the key.
// Add and Test cost one hash of the key and k memory probes, and allocate nothing.
// The methods that replace the whole content (ReadFrom, UnmarshalBinary) are not safe to call
// while other goroutines use the filter. The zero Filter is empty and only useful as the target
// of ReadFrom or UnmarshalBinary.
type Filter struct {
	bits   bitArray
	m      uint64 // modulus: positions are reduced into [0, m)
	k      int
	scheme Scheme
	div    divisor // reduces modulo m without a hardware division
	fast63 bool    // Guava64 with m > 1: positions by addition and div.mod63 (which needs m > 1)
}

// newFilter returns a filter over bits with modulus m, k hash functions and scheme s, which the
// caller has validated.
func newFilter(bits bitArray, m uint64, k int, s Scheme) *Filter {
	return &Filter{bits: bits, m: m, k: k, scheme: s, div: newDivisor(m), fast63: s == Guava64 && m > 1}
}

// New returns an empty filter sized by Guava's rule for n expected items at false-positive rate p,
// hashing with Guava64: the filter Guava's BloomFilter.create(funnel, n, p) makes. See GuavaSize
// for the formulas and the cases it refuses.
func New(n uint64, p float64) (*Filter, error) {
	m, k, err := GuavaSize(n, p)
	if err != nil {
		return nil, err
	}
	return NewWithParams(m, k, Guava64)
}

// NewWithParams returns an empty filter of m bits with k hash functions under scheme s.
// Guava and RedisBloom filters always span whole 64-bit words and reduce positions modulo the
// rounded size, so for those schemes m is rounded up to a multiple of 64; under Redisson, whose
// modulus is its exact size, m is kept as given (storage is still whole words).
func NewWithParams(m uint64, k int, s Scheme) (*Filter, error) {
	m, err := checkParams(m, k, s)
	if err != nil {
		return nil, err
	}
	bits, err := newBitArray((m + 63) / 64)
	if err != nil {
		return nil, err
	}
	return newFilter(bits, m, k, s), nil
}

// NewExact returns an empty filter of k hash functions under scheme s whose positions are
// reduced modulo exactly m, for every scheme: no rounding to whole words. It is for filters that
// other programs size without rounding, such as a Guava32 filter of 9,585,058 bits kept in a
// Redis string by Java code that computes Guava's positions itself (see package redisfilter's
// NewPlain); storage is still ceil(m/64) words, whose bits at m and above Add never sets.
// Under a Guava or RedisBloom scheme such a filter answers like Guava's or RedisBloom's own only
// when m is a multiple of 64, which is what NewWithParams gives: a Guava stream cannot hold any
// other m, and package guava refuses to write one. It fails with ErrInvalidParameter for an
// unknown scheme, m outside [1, 2^56] or k outside [1, MaxK].
func NewExact(m uint64, k int, s Scheme) (*Filter, error) {
	if err := checkExact(m, k, s); err != nil {
		return nil, err
	}
	bits, err := newBitArray((m + 63) / 64)
	if err != nil {
		return nil, err
	}
	return newFilter(bits, m, k, s), nil
}

// NewFromWords returns a filter of m bits with k hash functions under scheme s that adopts words
// as its bit array (bit b in words[b>>6] under mask 1<<(b&63)); codecs use it to build a filter
// from a decoded array without copying it. The caller must not use words afterwards. m is rounded
// as in NewWithParams, and words must hold exactly ceil(m/64) words.
func NewFromWords(words []uint64, m uint64, k int, s Scheme) (*Filter, error) {
	m, err := checkParams(m, k, s)
	if err != nil {
		return nil, err
	}
	if uint64(len(words)) != (m+63)/64 {
		return nil, fmt.Errorf("%w: %d words given for %d bits (want %d)", ErrInvalidParameter, len(words), m, (m+63)/64)
	}
	return newFilter(words, m, k, s), nil
}

// checkParams validates (m, k, s) and returns the modulus: m rounded up to whole words, except
// under Redisson, whose modulus is its exact size.
func checkParams(m uint64, k int, s Scheme) (uint64, error) {
	if err := checkExact(m, k, s); err != nil {
		return 0, err
	}
	if s != Redisson {
		m = roundToWords(m)
	}
	return m, nil
}

// checkExact validates (m, k, s) for a filter whose modulus is exactly m.
func checkExact(m uint64, k int, s Scheme) error {
	if !s.Valid() {
		return fmt.Errorf("%w: unknown hashing scheme %d", ErrInvalidParameter, s)
	}
	if m == 0 || float64(m) > maxBits {
		return fmt.Errorf("%w: size of %d bits is not in [1, 2^56]", ErrInvalidParameter, m)
	}
	if k < 1 || k > MaxK {
		return fmt.Errorf("%w: %d hash functions is not in [1, %d]", ErrInvalidParameter, k, MaxK)
	}
	return nil
}

// maxFastK is the largest k for which Add gathers the key's positions and missing bits on the
// stack before setting them; larger k (p below about 1e-9) take a one-pass loop.
const maxFastK = 32

// Add adds key and reports whether it was new: true when at least one of the key's bits was clear
// when Add read it, so the key was definitely not in the filter when the call began (Guava's put,
// for a single writer; goroutines adding the same new key at once may each report true, as they
// may under Guava). False means the key was probably added before (or is a false positive).
func (f *Filter) Add(key []byte) bool {
	h1, h2 := f.scheme.Hash(key)
	return f.add(h1, h2)
}

// Test reports whether key may be in the filter: false means it was definitely never added,
// true means it was probably added (false positives occur at the filter's rate, never false
// negatives).
func (f *Filter) Test(key []byte) bool {
	h1, h2 := f.scheme.Hash(key)
	return f.test(h1, h2)
}

// AddString adds the UTF-8 bytes of s, as Guava's Funnels.stringFunnel(UTF_8) feeds them.
func (f *Filter) AddString(s string) bool { return f.Add(stringBytes(s)) }

// TestString tests the UTF-8 bytes of s, as Guava's Funnels.stringFunnel(UTF_8) feeds them.
func (f *Filter) TestString(s string) bool { return f.Test(stringBytes(s)) }

// AddUint64 adds v as 8 little-endian bytes, as Guava's Funnels.longFunnel() feeds a long.
func (f *Filter) AddUint64(v uint64) bool { b := le64(v); return f.Add(b[:]) }

// TestUint64 tests v as 8 little-endian bytes, as Guava's Funnels.longFunnel() feeds a long.
func (f *Filter) TestUint64(v uint64) bool { b := le64(v); return f.Test(b[:]) }

// AddInt64 adds v as 8 little-endian two's-complement bytes (Guava's Funnels.longFunnel()).
func (f *Filter) AddInt64(v int64) bool { return f.AddUint64(uint64(v)) }

// TestInt64 tests v as 8 little-endian two's-complement bytes (Guava's Funnels.longFunnel()).
func (f *Filter) TestInt64(v int64) bool { return f.TestUint64(uint64(v)) }

// AddInt32 adds v as 4 little-endian two's-complement bytes (Guava's Funnels.integerFunnel()).
func (f *Filter) AddInt32(v int32) bool { b := le32(v); return f.Add(b[:]) }

// TestInt32 tests v as 4 little-endian two's-complement bytes (Guava's Funnels.integerFunnel()).
func (f *Filter) TestInt32(v int32) bool { b := le32(v); return f.Test(b[:]) }

// add sets the positions of a key hashed to (h1, h2) and reports whether any of them was clear.
//
// It reads every position first, with plain loads the CPU overlaps, and keeps for each the bit
// still missing (zero when it is set). A key whose bits are all set returns there, writing
// nothing. Otherwise it ORs each missing bit in with one atomic instruction per position, a zero
// mask included, so that no branch depends on the loaded bits: whether a bit of a new key is set
// is a coin toss the predictor loses, and each lost guess stalls the next key's loads. Measured
// at n = 1e6 against the version that branched on each bit and used the atomic OR's old value:
// 70.7 -> 51.6 ns per Add (BENCHMARKS.md, bench/ab.sh).
//
// The result is true when a bit was clear when add read it: the key was not in the filter when
// the call began. That is Guava's put() result for a single writer. With concurrent writers of the
// same key, several may report true (as several may under Guava, each flipping some of the bits).
func (f *Filter) add(h1, h2 uint64) bool {
	if f.k > maxFastK {
		added := false
		for i := range f.k {
			added = f.bits.set(f.location(h1, h2, i)) || added
		}
		return added
	}
	var p probe
	if !f.gather(h1, h2, &p) {
		return false
	}
	f.setMissing(&p)
	return true
}

// A probe holds, between gather and setMissing, the word of each of a key's positions and the bit
// of it still clear (zero when set).
type probe struct {
	word, missing [maxFastK]uint64
}

// gather reads the k positions of (h1, h2) into p (f.k <= maxFastK) and reports whether any bit
// was clear. Unless positions come by addition (fast63), it computes every position before the
// first load: the loads then issue back to back and their cache misses overlap, where
// interleaving them with the calls to location leaves too many instructions between them for the
// CPU to look ahead. Measured on a RedisBloom filter of 10M items (11.4 MiB, k = 7, beyond
// the cache and the 4 KiB TLB's reach): 570 -> 265 CPU-ns per add of a new key.
func (f *Filter) gather(h1, h2 uint64, p *probe) bool {
	var any uint64
	if f.fast63 {
		x := h1 // Guava64's positions by addition, without location's switch and multiplication
		for i := range f.k {
			b := f.div.mod63(x & math.MaxInt64)
			x += h2
			p.word[i] = b >> 6
			p.missing[i] = bitMask[b&63] &^ atomic.LoadUint64(&f.bits[b>>6])
			any |= p.missing[i]
		}
		return any != 0
	}
	f.locate(h1, h2, p.word[:f.k])
	return f.gatherAt(p.word[:f.k], p)
}

// locate writes the len(pos) first positions of (h1, h2) to pos, all of them before any is used.
func (f *Filter) locate(h1, h2 uint64, pos []uint64) {
	if f.scheme == RedisBloom64 {
		for i := range pos {
			pos[i] = f.div.mod(h1 + uint64(i)*h2) // location, inlined
		}
		return
	}
	for i := range pos {
		pos[i] = f.location(h1, h2, i)
	}
}

// gatherAt is gather for a key whose k positions are pos (which may be p.word itself).
func (f *Filter) gatherAt(pos []uint64, p *probe) bool {
	var any uint64
	for i, b := range pos {
		p.word[i] = b >> 6
		p.missing[i] = bitMask[b&63] &^ atomic.LoadUint64(&f.bits[b>>6])
		any |= p.missing[i]
	}
	return any != 0
}

// setMissing ORs in the bits gather found clear, one atomic instruction per position (a zero mask
// included: no branch on the loaded bits).
func (f *Filter) setMissing(p *probe) {
	for i := range f.k {
		atomic.OrUint64(&f.bits[p.word[i]], p.missing[i])
	}
}

// addIf is add that, once it has found a bit of the key clear, sets the bits only if admit
// returns true. present reports that every bit was set (admit was not called); added that admit
// agreed and the bits were set.
func (f *Filter) addIf(h1, h2 uint64, admit func() bool) (added, present bool) {
	if f.k > maxFastK {
		if f.test(h1, h2) {
			return false, true
		}
		if !admit() {
			return false, false
		}
		for i := range f.k {
			f.bits.set(f.location(h1, h2, i))
		}
		return true, false
	}
	var p probe
	return f.setIf(&p, f.gather(h1, h2, &p), admit)
}

// setIf ends addIf for a key gathered into p: when a bit was clear, it sets the key's bits if
// admit returns true.
func (f *Filter) setIf(p *probe, clear bool, admit func() bool) (added, present bool) {
	if !clear {
		return false, true
	}
	if !admit() {
		return false, false
	}
	f.setMissing(p)
	return true, false
}

// branchlessWords is the array size (2 MiB, the L2 cache of one core here) up to which test
// probes all k positions without exiting early: absent keys then cost no mispredicted branch and
// the loads, cache hits, overlap. Beyond it, stopping at the first clear bit saves loads that
// miss the cache, and wins. Measured with the bench module's BenchmarkFilters, before and after
// (cpu-ns per key): n = 1e6, 1.2 MB: absent keys 34.5 -> 27.8, present keys 24.5 -> 26.5;
// n = 1e7, 12 MB: no gain for either, so early exit stays there.
const branchlessWords = 2 << 20 / 8

// bitMask[i] is 1<<i: a table lookup instead of a variable shift, which costs more micro-ops on
// x86 without BMI2.
var bitMask = func() (m [64]uint64) {
	for i := range m {
		m[i] = 1 << i
	}
	return m
}()

func (f *Filter) test(h1, h2 uint64) bool {
	if f.fast63 {
		x := h1
		if len(f.bits) <= branchlessWords {
			var miss uint64
			for range f.k {
				b := f.div.mod63(x & math.MaxInt64)
				miss |= bitMask[b&63] &^ atomic.LoadUint64(&f.bits[b>>6])
				x += h2
			}
			return miss == 0
		}
		for range f.k {
			if !f.bits.get(f.div.mod63(x & math.MaxInt64)) {
				return false
			}
			x += h2
		}
		return true
	}
	for i := range f.k {
		if !f.bits.get(f.location(h1, h2, i)) {
			return false
		}
	}
	return true
}

// location is Scheme.Location with the modulus reduced by f.div instead of a division.
func (f *Filter) location(h1, h2 uint64, i int) uint64 { return location(f.scheme, &f.div, h1, h2, i) }

// location is Scheme.Location for scheme s with the modulus reduced by div.
func location(s Scheme, div *divisor, h1, h2 uint64, i int) uint64 {
	switch s {
	case Guava32:
		lo, hi := int32(h1), int32(h1>>32)
		c := lo + int32(i+1)*hi
		if c < 0 {
			c = ^c
		}
		return div.mod(uint64(c))
	case RedisBloom64:
		return div.mod(h1 + uint64(i)*h2)
	case Redisson:
		i1, i2 := uint64(i/2+1), uint64((i+1)/2)
		return div.mod((i1*h1 + i2*h2) & math.MaxInt64)
	default: // mod, not mod63: an exact filter (NewExact) may have m = 1
		return div.mod((h1 + uint64(i)*h2) & math.MaxInt64)
	}
}

// M returns the number of addressable bits (the modulus of every position).
func (f *Filter) M() uint64 { return f.m }

// K returns the number of hash functions (positions per key).
func (f *Filter) K() int { return f.k }

// Scheme returns the filter's hashing scheme.
func (f *Filter) Scheme() Scheme { return f.scheme }

// BitCount returns the number of set bits. It reads the whole array: O(m/64).
func (f *Filter) BitCount() uint64 { return f.bits.count() }

// FillRatio returns the fraction of bits that are set.
func (f *Filter) FillRatio() float64 { return float64(f.BitCount()) / float64(f.m) }

// EstimatedFPP returns the probability that Test reports a never-added key as present, given the
// bits set now: (set bits / m)^k, Guava's expectedFpp. It reads the whole array: O(m/64).
func (f *Filter) EstimatedFPP() float64 { return math.Pow(f.FillRatio(), float64(f.k)) }

// ApproximateCount estimates the number of distinct items added from the number of set bits,
// by Guava's approximateElementCount: round(-m/k · ln(1 - set/m)). A saturated filter (every bit
// set) has lost the information; the estimate is then taken at m - 1/2 set bits, a finite lower
// bound, where Guava throws an ArithmeticException. It reads the whole array: O(m/64).
func (f *Filter) ApproximateCount() uint64 {
	return approximateCount(f.BitCount(), f.m, f.k)
}

func approximateCount(set, m uint64, k int) uint64 {
	x := float64(set)
	if set >= m {
		x = float64(m) - 0.5
	}
	return uint64(math.Round(-math.Log1p(-x/float64(m)) * float64(m) / float64(k)))
}

// Compatible reports whether f and g can be combined: same scheme, same k, same modulus.
func (f *Filter) Compatible(g *Filter) error {
	if f.scheme != g.scheme || f.k != g.k || f.m != g.m {
		return fmt.Errorf("%w: %s m=%d k=%d and %s m=%d k=%d", ErrIncompatible, f.scheme, f.m, f.k, g.scheme, g.m, g.k)
	}
	return nil
}

// Union adds every key of g to f (a bitwise OR), so that f then answers true for every key
// either filter answers true for. It fails with ErrIncompatible unless Compatible(g) is nil.
// It is safe while other goroutines use either filter.
func (f *Filter) Union(g *Filter) error {
	if err := f.Compatible(g); err != nil {
		return err
	}
	f.bits.or(g.bits)
	return nil
}

// Intersect keeps in f only the bits also set in g (a bitwise AND). Every key added to both
// filters still tests present; the false-positive rate is at most that of the smaller input.
// It fails with ErrIncompatible unless Compatible(g) is nil.
func (f *Filter) Intersect(g *Filter) error {
	if err := f.Compatible(g); err != nil {
		return err
	}
	f.bits.and(g.bits)
	return nil
}

// Clone returns an independent copy of f.
func (f *Filter) Clone() *Filter {
	c := *f
	c.bits = f.bits.clone()
	return &c
}

// Reset clears every bit, leaving an empty filter of the same size.
func (f *Filter) Reset() { f.bits.clear() }

// Equal reports whether f and g have the same scheme, size and bits.
func (f *Filter) Equal(g *Filter) bool {
	if f.Compatible(g) != nil || len(f.bits) != len(g.bits) {
		return false
	}
	for i := range f.bits {
		if atomic.LoadUint64(&f.bits[i]) != atomic.LoadUint64(&g.bits[i]) {
			return false
		}
	}
	return true
}

// Info describes f.
func (f *Filter) Info() Info {
	return Info{Kind: kindClassic.String(), Scheme: f.scheme, K: f.k, M: f.m, Bytes: f.ByteLen(),
		Count: f.ApproximateCount(), FPP: f.EstimatedFPP()}
}

// ByteLen returns the length in bytes of the filter's bit array: 8 per 64-bit word.
func (f *Filter) ByteLen() int64 { return f.bits.byteLen() }

// ReadAt copies the bit array's bytes from offset off into p. The bytes are the little-endian
// encoding of the 64-bit words (bit b in byte b>>3 under mask 1<<(b&7)), which is RedisBloom's
// BF.SCANDUMP layout. It implements io.ReaderAt, and reads each word atomically.
func (f *Filter) ReadAt(p []byte, off int64) (int, error) { return f.bits.readAt(p, off) }

// WriteAt overwrites the bit array's bytes at offset off with p, in ReadAt's layout. It implements
// io.WriterAt; writes must fit inside ByteLen. Each word is replaced atomically.
func (f *Filter) WriteAt(p []byte, off int64) (int, error) { return f.bits.writeAt(p, off) }

// stringBytes views the bytes of s without copying; the callee only reads them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func le64(v uint64) (b [8]byte) { binary.LittleEndian.PutUint64(b[:], v); return b }

func le32(v int32) (b [4]byte) { binary.LittleEndian.PutUint32(b[:], uint32(v)); return b }
