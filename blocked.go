package bloom

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/twmb/murmur3"
)

// Blocked is a cache-line blocked Bloom filter: all of a key's bits lie in one 64-byte block (one
// cache line), in a few 64-bit words of it, so Add and Test cost one hash and one memory access
// where a classic filter pays k. The price is memory: blocks fill unevenly, so reaching a rate p
// takes more bits per key than a classic filter (at p = 0.01, 10.35 instead of 9.6);
// BlockedSize compensates exactly. The table of bits per key against p, with the rates measured
// at capacity, is in blocked_sizing.go (TestFPPTable measures them; BENCHMARKS.md has them all).
//
// The 512 bits of a block are 8 words. A key picks its block, then sets b bits in each of z of
// the block's words ("sectors", Lang et al., "Performance-optimal filtering", VLDB 2019): the
// block's words are split into z groups of 8/z and the key takes one word from each, so k = z·b.
// Fewer sectors mean fewer atomic instructions per Add (one per word that still needs bits);
// more sectors spread the bits and need less memory at small p. BlockedSize chooses.
//
// The layout, which files depend on and which golden vectors in the tests pin, is:
//
//	(h1, h2) = murmur3 x64_128(key, seed 0)         the hash of the Guava64 scheme
//	block    = ⌊h1 · blocks / 2^64⌋                 words 8·block .. 8·block+7
//	for sector s = 0 .. z-1, with w = log2(8/z) and x = h2 · C[s] mod 2^64:
//	  word   = s·(8/z) + (x >> (64-w))              the top w bits of x
//	  bit i  = (x >> (64-w-6(i+1))) & 63, i < b     the next b 6-bit fields, from the top
//	C = {1, 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9,
//	     0xd6e8feb86659fd93, 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3}
//
// Multiplying by odd constants gives each sector its own well-mixed word from h2 (the top bits of
// a product depend on every bit of h2) at the cost of one multiplication; bits may repeat within
// a word, which the sizing model accounts for.
//
// A Blocked filter is safe for concurrent use by multiple goroutines without locks, like Filter:
// Add ORs each word that still misses bits with one atomic instruction, Test reads with atomic
// loads. ReadFrom and UnmarshalBinary replace the whole filter and must not run concurrently with
// other methods. The zero Blocked is empty and only useful as the target of ReadFrom or
// UnmarshalBinary.
type Blocked struct {
	bits    bitArray
	blocks  uint64
	k       int
	sectors int
	b       int  // bits per sector word: k / sectors
	w       uint // log2 of words per sector
	two3    bool // two sectors of 3 bits (p = 0.01 down to 0.005), which Add and Test handle inline
}

const (
	blockWords    = 8
	blockBits     = 512
	maxSectorBits = 10 // b 6-bit fields and up to 3 word bits fit in one 64-bit word
)

// sectorMul1 is sectorMul[1] as a constant, for the code that builds the second sector's mask
// without reading the table.
const sectorMul1 = 0x9e3779b97f4a7c15

// sectorMul gives each sector its own hash word; changing it changes every blocked file.
var sectorMul = [blockWords]uint64{
	1, sectorMul1, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9,
	0xd6e8feb86659fd93, 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3,
}

// NewBlocked returns an empty blocked filter for n keys at false-positive rate p, sized by
// BlockedSize so that its expected rate at n keys is at most p.
func NewBlocked(n uint64, p float64) (*Blocked, error) {
	m, k, sectors, err := BlockedSize(n, p)
	if err != nil {
		return nil, err
	}
	return NewBlockedWithParams(m, k, sectors)
}

// NewBlockedWithParams returns an empty blocked filter of m bits (rounded up to whole 512-bit
// blocks) that sets k bits per key in the given number of sectors (1, 2, 4 or 8 words of each
// block; k must be a multiple of sectors, with at most 10 bits per sector).
func NewBlockedWithParams(m uint64, k, sectors int) (*Blocked, error) {
	if err := checkSectors(k, sectors); err != nil {
		return nil, err
	}
	if m == 0 || float64(m) > maxBits {
		return nil, fmt.Errorf("%w: size of %d bits is not in [1, 2^56]", ErrInvalidParameter, m)
	}
	blocks := (m + blockBits - 1) / blockBits
	a, err := newBitArray(blocks * blockWords)
	if err != nil {
		return nil, err
	}
	return newBlocked(a, k, sectors), nil
}

func newBlocked(a bitArray, k, sectors int) *Blocked {
	return &Blocked{bits: a, blocks: uint64(len(a)) / blockWords, k: k, sectors: sectors,
		b: k / sectors, w: uint(bits.TrailingZeros(uint(blockWords / sectors))), two3: sectors == 2 && k == 6}
}

func checkSectors(k, sectors int) error {
	switch sectors {
	case 1, 2, 4, 8:
	default:
		return fmt.Errorf("%w: %d sectors (want 1, 2, 4 or 8)", ErrInvalidParameter, sectors)
	}
	if k < sectors || k%sectors != 0 || k/sectors > maxSectorBits {
		return fmt.Errorf("%w: k=%d must be a multiple of the %d sectors, with at most %d bits per sector", ErrInvalidParameter, k, sectors, maxSectorBits)
	}
	return nil
}

// Add adds key and reports whether it was new: true when at least one of the key's bits was
// clear when Add read it, so the key was definitely not in the filter when the call began.
// Goroutines adding the same new key at once may each report true.
func (f *Blocked) Add(key []byte) bool {
	h1, h2 := murmur3.Sum128(key) // Guava64.Hash, without its switch
	if !f.two3 {
		return f.add(h1, h2)
	}
	// add for two sectors of three bits, written out here (Go does not inline it).
	blk := f.block(h1)
	w0, w1, m0, m1 := masks23(h2)
	p0, p1 := &blk[w0&7], &blk[w1&7]
	m0 &^= atomic.LoadUint64(p0)
	m1 &^= atomic.LoadUint64(p1)
	if m0|m1 == 0 {
		return false
	}
	atomic.OrUint64(p0, m0)
	atomic.OrUint64(p1, m1)
	return true
}

// Test reports whether key may be in the filter: false means it was definitely never added.
func (f *Blocked) Test(key []byte) bool {
	h1, h2 := murmur3.Sum128(key) // Guava64.Hash, without its switch
	if !f.two3 {
		return f.test(h1, h2)
	}
	// test2 for three bits per sector, written out here (Go does not inline it).
	blk := f.block(h1)
	w0, w1, m0, m1 := masks23(h2)
	return m0&^atomic.LoadUint64(&blk[w0&7])|m1&^atomic.LoadUint64(&blk[w1&7]) == 0
}

// AddString adds the UTF-8 bytes of s.
func (f *Blocked) AddString(s string) bool { return f.Add(stringBytes(s)) }

// TestString tests the UTF-8 bytes of s.
func (f *Blocked) TestString(s string) bool { return f.Test(stringBytes(s)) }

// block returns the 8 words of the block of a key whose first hash is h1.
func (f *Blocked) block(h1 uint64) *[blockWords]uint64 {
	hi, _ := bits.Mul64(h1, f.blocks)
	i := hi * blockWords
	return (*[blockWords]uint64)(f.bits[i : i+blockWords])
}

// sector returns the word (0..7 within the block) and the bit mask of sector s of a key whose
// second hash is h2.
func (f *Blocked) sector(h2 uint64, s int) (word int, mask uint64) {
	x := h2 * sectorMul[s&(blockWords-1)]
	word = s<<f.w + int(x>>(64-f.w))
	x <<= f.w
	for range f.b {
		mask |= 1 << (x >> 58)
		x <<= 6
	}
	return word, mask
}

// sectors2 is sector for s = 0 and s = 1 of a two-sector filter (what BlockedSize picks from
// p = 0.05 down to about 1e-4), with the shifts constant and the two masks built side by side.
func sectors2(h2 uint64, b int) (w0, w1 int, m0, m1 uint64) {
	x0, x1 := h2, h2*sectorMul[1]
	w0, w1 = int(x0>>62), 4+int(x1>>62)
	if b == 3 { // p = 0.01 down to 0.005: unrolled, the fields read in place
		m0 = 1<<(x0>>56&63) | 1<<(x0>>50&63) | 1<<(x0>>44&63)
		m1 = 1<<(x1>>56&63) | 1<<(x1>>50&63) | 1<<(x1>>44&63)
		return w0, w1, m0, m1
	}
	x0 <<= 2
	x1 <<= 2
	for range b {
		m0 |= 1 << (x0 >> 58)
		m1 |= 1 << (x1 >> 58)
		x0 <<= 6
		x1 <<= 6
	}
	return w0, w1, m0, m1
}

// masks23 returns the two words and masks of a key in a two-sector filter with 3 bits per word:
// sectors2 for b = 3, small enough to be inlined into Add and Test, so that the common filter's
// single-key calls make one call, to the hash, where they made four (through test, test2 and
// sectors2). Test at n = 1e6 went from 19.9 to 18.2 ns with this (interleaved A/B with bench/ab.sh:
// bench/results/blocked-inline-ab-1e6-1e7-old.txt against -new.txt).
// TestBlockedGoldenLayout pins this path and TestBatchMatchesSingle holds it to the batch path.
func masks23(h2 uint64) (w0, w1 int, m0, m1 uint64) {
	x1 := h2 * sectorMul1
	m0 = 1<<(h2>>56&63) | 1<<(h2>>50&63) | 1<<(h2>>44&63)
	m1 = 1<<(x1>>56&63) | 1<<(x1>>50&63) | 1<<(x1>>44&63)
	return int(h2 >> 62), 4 + int(x1>>62), m0, m1
}

// add ORs the key's masks into its words and reports whether any bit was clear. As Filter.add,
// it reads first (the line is fetched once, by the first load) and, unless every bit is set
// already, ORs into every sector word the bits it misses, zero included, with no branch on the
// loaded values: the atomic ORs, full barriers on x86, are paid only by keys that are new.
func (f *Blocked) add(h1, h2 uint64) bool {
	blk := f.block(h1)
	if f.sectors == 2 {
		w0, w1, m0, m1 := sectors2(h2, f.b)
		p0, p1 := &blk[w0&3], &blk[4+w1&3]
		m0 &^= atomic.LoadUint64(p0)
		m1 &^= atomic.LoadUint64(p1)
		if m0|m1 == 0 {
			return false
		}
		atomic.OrUint64(p0, m0)
		atomic.OrUint64(p1, m1)
		return true
	}
	return f.addBlock(blk, h2)
}

// addBlock is add for filters of 1, 4 or 8 sectors, given the key's block.
func (f *Blocked) addBlock(blk *[blockWords]uint64, h2 uint64) bool {
	var word [blockWords]int
	var missing [blockWords]uint64
	var any uint64
	sectors := f.sectors
	for s := range sectors {
		w, mask := f.sector(h2, s)
		w &= blockWords - 1
		word[s] = w
		missing[s] = mask &^ atomic.LoadUint64(&blk[w])
		any |= missing[s]
	}
	if any == 0 {
		return false
	}
	for s := range sectors {
		atomic.OrUint64(&blk[word[s]], missing[s])
	}
	return true
}

func (f *Blocked) test(h1, h2 uint64) bool {
	if f.sectors == 2 {
		return f.test2(h1, h2)
	}
	return f.testSectors(h1, h2)
}

// test2 is test for two sectors: both words share a cache line, so it reads both and does not
// branch on the first.
func (f *Blocked) test2(h1, h2 uint64) bool {
	blk := f.block(h1)
	w0, w1, m0, m1 := sectors2(h2, f.b)
	return m0&^atomic.LoadUint64(&blk[w0&3])|m1&^atomic.LoadUint64(&blk[4+w1&3]) == 0
}

func (f *Blocked) testSectors(h1, h2 uint64) bool {
	blk := f.block(h1)
	for s := range f.sectors {
		word, mask := f.sector(h2, s)
		if atomic.LoadUint64(&blk[word&(blockWords-1)])&mask != mask {
			return false
		}
	}
	return true
}

// M returns the number of bits: 512 per block.
func (f *Blocked) M() uint64 { return f.blocks * blockBits }

// K returns the number of bits set per key (some may coincide).
func (f *Blocked) K() int { return f.k }

// Sectors returns the number of 64-bit words of its block each key sets bits in.
func (f *Blocked) Sectors() int { return f.sectors }

// BitCount returns the number of set bits. It reads the whole array: O(m/64).
func (f *Blocked) BitCount() uint64 { return f.bits.count() }

// FillRatio returns the fraction of bits that are set.
func (f *Blocked) FillRatio() float64 { return float64(f.BitCount()) / float64(f.M()) }

// EstimatedFPP returns the probability that Test reports a never-added key as present, given the
// bits set now. It is exact for uniformly hashed keys: the average over blocks of the product over
// sectors of the mean of (set bits of the word / 64)^b. It reads the whole array: O(m/64).
func (f *Blocked) EstimatedFPP() float64 {
	span := blockWords / f.sectors
	var sum float64
	for i := uint64(0); i < uint64(len(f.bits)); i += blockWords {
		p := 1.0
		for s := range f.sectors {
			var ws float64
			for j := range span {
				c := bits.OnesCount64(atomic.LoadUint64(&f.bits[i+uint64(s*span+j)]))
				ws += math.Pow(float64(c)/64, float64(f.b))
			}
			p *= ws / float64(span)
		}
		sum += p
	}
	return sum / float64(f.blocks)
}

// ApproximateCount estimates the number of distinct keys added from the number of set bits.
// Each word receives b bit throws from a Poisson number of keys with mean n·z/words, so the
// expected fill is 1 - exp(-n·z/words · (1 - (63/64)^b)); the estimate inverts that. A saturated
// filter is estimated at m - 1/2 set bits, a finite lower bound. It reads the whole array: O(m/64).
func (f *Blocked) ApproximateCount() uint64 {
	set, m := f.BitCount(), f.M()
	x := float64(set)
	if set >= m {
		x = float64(m) - 0.5
	}
	words := float64(len(f.bits))
	perTouch := -math.Expm1(float64(f.b) * math.Log1p(-1.0/64))
	return uint64(math.Round(-math.Log1p(-x/float64(m)) * words / (float64(f.sectors) * perTouch)))
}

// Compatible reports whether f and g can be combined: same size, k and sectors.
func (f *Blocked) Compatible(g *Blocked) error {
	if f.blocks != g.blocks || f.k != g.k || f.sectors != g.sectors {
		return fmt.Errorf("%w: blocked m=%d k=%d sectors=%d and m=%d k=%d sectors=%d", ErrIncompatible,
			f.M(), f.k, f.sectors, g.M(), g.k, g.sectors)
	}
	return nil
}

// Union adds every key of g to f (a bitwise OR). It fails with ErrIncompatible unless
// Compatible(g) is nil, and is safe while other goroutines use either filter.
func (f *Blocked) Union(g *Blocked) error {
	if err := f.Compatible(g); err != nil {
		return err
	}
	f.bits.or(g.bits)
	return nil
}

// Intersect keeps in f only the bits also set in g (a bitwise AND): every key added to both
// still tests present. It fails with ErrIncompatible unless Compatible(g) is nil.
func (f *Blocked) Intersect(g *Blocked) error {
	if err := f.Compatible(g); err != nil {
		return err
	}
	f.bits.and(g.bits)
	return nil
}

// Clone returns an independent copy of f.
func (f *Blocked) Clone() *Blocked {
	c := *f
	c.bits = f.bits.clone()
	return &c
}

// Reset clears every bit.
func (f *Blocked) Reset() { f.bits.clear() }

// Equal reports whether f and g have the same parameters and bits.
func (f *Blocked) Equal(g *Blocked) bool {
	return f.Compatible(g) == nil && f.bits.equal(g.bits)
}

// ByteLen returns the length in bytes of the filter's bit array: 64 per block.
func (f *Blocked) ByteLen() int64 { return f.bits.byteLen() }

// Info describes f.
func (f *Blocked) Info() Info {
	return Info{Kind: kindBlocked.String(), Scheme: Guava64, K: f.k, M: f.M(), Sectors: f.sectors,
		Bytes: f.ByteLen(), Count: f.ApproximateCount(), FPP: f.EstimatedFPP()}
}

// The native record of a blocked filter: kind 2, scheme Guava64 (the hash), k, m = 512·blocks,
// the estimated count, and in the kind-specific parameters the number of sectors (byte 0; the
// other 19 bytes are zero). The payload is the words, little-endian, as for the classic kind.

// WriteTo writes f in the native format. It implements io.WriterTo and may run while other
// goroutines add to f.
func (f *Blocked) WriteTo(w io.Writer) (int64, error) {
	h := f.header()
	n, err := w.Write(h.marshal())
	if err != nil {
		return int64(n), err
	}
	c, err := writeWords(w, f.bits)
	return int64(n) + c, err
}

func (f *Blocked) header() fileHeader {
	h := fileHeader{kind: kindBlocked, scheme: Guava64, k: uint32(f.k), m: f.M(),
		count: f.ApproximateCount(), payload: uint64(f.bits.byteLen())}
	h.params[0] = byte(f.sectors)
	return h
}

// ReadFrom replaces f with a blocked filter read in the native format. It implements
// io.ReaderFrom and reads exactly one record; on error f is unchanged. Damaged input is refused
// with ErrCorrupt, sizes beyond this machine's memory with ErrTooLarge, before allocation.
func (f *Blocked) ReadFrom(r io.Reader) (int64, error) {
	cr := &countingReader{r: r}
	h, err := readHeader(cr, kindBlocked)
	if err != nil {
		return cr.n, err
	}
	g, err := readBlockedBody(cr, h)
	if err != nil {
		return cr.n, err
	}
	*f = *g
	return cr.n, nil
}

// MarshalBinary returns f in the native format.
func (f *Blocked) MarshalBinary() ([]byte, error) { return marshal(f, f.ByteLen()) }

// UnmarshalBinary replaces f with the blocked filter encoded in data, which must hold exactly
// one native record; on error f is unchanged.
func (f *Blocked) UnmarshalBinary(data []byte) error {
	g, err := unmarshal(data, kindBlocked, readBlockedBody)
	if err != nil {
		return err
	}
	*f = *g
	return nil
}

func (h *fileHeader) checkBlocked() error {
	if h.scheme != Guava64 {
		return corruptf("blocked filter with hashing scheme %s (blocked filters hash with guava64)", h.scheme)
	}
	sectors := int(h.params[0])
	if h.k > MaxK {
		return corruptf("k=%d is not in [1, %d]", h.k, MaxK)
	}
	if err := checkSectors(int(h.k), sectors); err != nil {
		return corruptf("k=%d with %d sectors is not a blocked layout", h.k, sectors)
	}
	for i, b := range h.params[1:] {
		if b != 0 {
			return corruptf("reserved parameter byte %d is %d, not 0", i+1, b)
		}
	}
	if h.m == 0 || h.m%blockBits != 0 || float64(h.m) > maxBits {
		return corruptf("size of %d bits is not a positive multiple of 512 up to 2^56", h.m)
	}
	if h.payload != h.m/8 {
		return corruptf("payload of %d bytes does not match %d bits (want %d bytes)", h.payload, h.m, h.m/8)
	}
	return checkAlloc(h.payload)
}

func readBlockedBody(r io.Reader, h fileHeader) (*Blocked, error) {
	if err := h.checkBlocked(); err != nil {
		return nil, err
	}
	a, err := readWords(r, h.payload)
	if err != nil {
		return nil, err
	}
	adviseHugePages(a)
	return newBlocked(a, int(h.k), int(h.params[0])), nil
}
