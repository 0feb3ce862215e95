package bloom

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync/atomic"
)

// Counting is a counting Bloom filter: m 4-bit counters in place of bits, so keys can be removed.
// A key's k positions are those of a classic Filter with the same (m, k, scheme); Add increments
// its k counters, Remove decrements them, and Test reports whether all are nonzero. It answers
// exactly as the classic filter holding the keys added and not removed, at four times the memory.
//
// A counter that reaches 15 saturates: it is never incremented or decremented again, because
// after an overflow the true count is unknown and decrementing could reach zero while keys
// still hold it, which would be a false negative. The cost is that a saturated position stays
// set forever, so a filter whose keys are removed keeps a slightly higher false-positive rate
// than one that never held them. With the sizing of New a counter saturates with probability
// about 1e-15 per counter at capacity (Fan et al., "Summary cache", 2000), so in practice never.
//
// Remove of a key that is definitely absent (a counter is zero) returns ErrNotPresent and
// changes nothing. Removing a key that was never added but tests present (a false positive)
// cannot be detected and decrements other keys' counters, which can make them test absent:
// remove only keys that were added.
//
// A Counting filter is safe for concurrent use: each counter changes by a compare-and-swap on its
// 64-bit word, and a Remove that finds a counter emptied by a concurrent Remove undoes its
// decrements and reports ErrNotPresent. Add, Test and Remove cost one hash and k memory probes.
// ReadFrom and UnmarshalBinary replace the whole filter and must not run concurrently with other
// methods. The zero Counting is empty and only useful as the target of ReadFrom or UnmarshalBinary.
type Counting struct {
	words  []uint64 // 16 counters per word: counter c in word c>>4, bits 4·(c&15) .. 4·(c&15)+3
	m      uint64
	k      int
	scheme Scheme
	div    divisor
	count  uint64 // keys added minus keys removed, updated atomically
}

// counterMax is the value at which a counter saturates.
const counterMax = 15

// NewCounting returns an empty counting filter with the m and k Guava's rule gives for n keys at
// false-positive rate p (see GuavaSize), hashing with Guava64: m/2 bytes of counters.
func NewCounting(n uint64, p float64) (*Counting, error) {
	m, k, err := GuavaSize(n, p)
	if err != nil {
		return nil, err
	}
	return NewCountingWithParams(m, k, Guava64)
}

// NewCountingWithParams returns an empty counting filter of m counters with k hash functions under
// scheme s; m is rounded as NewWithParams rounds bits.
func NewCountingWithParams(m uint64, k int, s Scheme) (*Counting, error) {
	m, err := checkParams(m, k, s)
	if err != nil {
		return nil, err
	}
	words := (m + 15) / 16
	if err := checkAlloc(words * 8); err != nil {
		return nil, err
	}
	return &Counting{words: allocWords(words), m: m, k: k, scheme: s, div: newDivisor(m)}, nil
}

// Add increments the key's k counters and reports whether the key was definitely new (one of them
// was zero). Adding a key twice counts it twice: it then takes two Removes to remove it.
func (c *Counting) Add(key []byte) bool {
	h1, h2 := c.scheme.Hash(key)
	return c.add(h1, h2)
}

// Test reports whether key may be in the filter: false means it was definitely never added, or
// was removed as often as it was added.
func (c *Counting) Test(key []byte) bool {
	h1, h2 := c.scheme.Hash(key)
	return c.test(h1, h2)
}

// Remove decrements the key's k counters. If one of them is zero, the key is definitely not in
// the filter: Remove changes nothing and returns an error wrapping ErrNotPresent.
func (c *Counting) Remove(key []byte) error {
	h1, h2 := c.scheme.Hash(key)
	return c.remove(h1, h2)
}

// AddString adds the UTF-8 bytes of s.
func (c *Counting) AddString(s string) bool { return c.Add(stringBytes(s)) }

// TestString tests the UTF-8 bytes of s.
func (c *Counting) TestString(s string) bool { return c.Test(stringBytes(s)) }

// RemoveString removes the UTF-8 bytes of s.
func (c *Counting) RemoveString(s string) error { return c.Remove(stringBytes(s)) }

func (c *Counting) location(h1, h2 uint64, i int) uint64 {
	return location(c.scheme, &c.div, h1, h2, i)
}

// counter returns the value of counter i.
func (c *Counting) counter(i uint64) uint64 {
	return atomic.LoadUint64(&c.words[i>>4]) >> (i & 15 * 4) & counterMax
}

// increment adds one to counter i unless it is saturated, and returns its previous value.
func (c *Counting) increment(i uint64) uint64 {
	w, shift := &c.words[i>>4], i&15*4
	for {
		old := atomic.LoadUint64(w)
		v := old >> shift & counterMax
		if v == counterMax || atomic.CompareAndSwapUint64(w, old, old+1<<shift) {
			return v
		}
	}
}

// decrement subtracts one from counter i unless it is zero or saturated, and returns its previous
// value.
func (c *Counting) decrement(i uint64) uint64 {
	w, shift := &c.words[i>>4], i&15*4
	for {
		old := atomic.LoadUint64(w)
		v := old >> shift & counterMax
		if v == 0 || v == counterMax || atomic.CompareAndSwapUint64(w, old, old-1<<shift) {
			return v
		}
	}
}

func (c *Counting) add(h1, h2 uint64) bool {
	added := false
	for i := range c.k {
		if c.increment(c.location(h1, h2, i)) == 0 {
			added = true
		}
	}
	atomic.AddUint64(&c.count, 1)
	return added
}

func (c *Counting) test(h1, h2 uint64) bool {
	for i := range c.k {
		if c.counter(c.location(h1, h2, i)) == 0 {
			return false
		}
	}
	return true
}

func (c *Counting) remove(h1, h2 uint64) error {
	if !c.test(h1, h2) {
		return fmt.Errorf("%w: a counter of the key is zero", ErrNotPresent)
	}
	for i := range c.k {
		if c.decrement(c.location(h1, h2, i)) == 0 {
			// A concurrent Remove emptied this counter after the test: put back what was taken.
			for j := range i {
				if b := c.location(h1, h2, j); c.counter(b) != counterMax {
					c.increment(b)
				}
			}
			return fmt.Errorf("%w: a counter of the key was emptied by a concurrent Remove", ErrNotPresent)
		}
	}
	atomic.AddUint64(&c.count, ^uint64(0))
	return nil
}

// M returns the number of counters (the modulus of every position).
func (c *Counting) M() uint64 { return c.m }

// K returns the number of hash functions (counters per key).
func (c *Counting) K() int { return c.k }

// Scheme returns the filter's hashing scheme.
func (c *Counting) Scheme() Scheme { return c.scheme }

// Count returns the number of Adds minus the number of successful Removes.
func (c *Counting) Count() uint64 { return atomic.LoadUint64(&c.count) }

// ApproximateCount returns Count: a counting filter knows how many keys it holds.
func (c *Counting) ApproximateCount() uint64 { return c.Count() }

// NonzeroCount returns the number of nonzero counters, the bits the equivalent classic filter
// has set. It reads every counter: O(m).
func (c *Counting) NonzeroCount() uint64 {
	var n uint64
	for i := range c.words {
		w := atomic.LoadUint64(&c.words[i])
		// Fold each 4-bit counter onto its low bit, then count those.
		w |= w >> 2
		w |= w >> 1
		n += uint64(bits.OnesCount64(w & 0x1111111111111111))
	}
	return n
}

// Saturated returns the number of counters stuck at 15. It reads every counter: O(m).
func (c *Counting) Saturated() uint64 {
	var n uint64
	for i := range c.words {
		w := atomic.LoadUint64(&c.words[i])
		w &= w >> 2
		w &= w >> 1
		n += uint64(bits.OnesCount64(w & 0x1111111111111111))
	}
	return n
}

// EstimatedFPP returns the probability that Test reports a never-added key as present, given the
// counters now: (nonzero counters / m)^k. It reads every counter: O(m).
func (c *Counting) EstimatedFPP() float64 {
	return math.Pow(float64(c.NonzeroCount())/float64(c.m), float64(c.k))
}

// Clone returns an independent copy of c.
func (c *Counting) Clone() *Counting {
	d := *c
	d.words = bitArray(c.words).clone()
	d.count = c.Count()
	return &d
}

// Reset sets every counter to zero.
func (c *Counting) Reset() {
	bitArray(c.words).clear()
	atomic.StoreUint64(&c.count, 0)
}

// Equal reports whether c and d have the same parameters, counters and count.
func (c *Counting) Equal(d *Counting) bool {
	return c.scheme == d.scheme && c.m == d.m && c.k == d.k && c.Count() == d.Count() &&
		bitArray(c.words).equal(d.words)
}

// ByteLen returns the length in bytes of the counter array: m/2, rounded up to whole words.
func (c *Counting) ByteLen() int64 { return int64(len(c.words)) * 8 }

// Info describes c.
func (c *Counting) Info() Info {
	return Info{Kind: kindCounting.String(), Scheme: c.scheme, K: c.k, M: c.m, Bytes: c.ByteLen(),
		Count: c.Count(), FPP: c.EstimatedFPP()}
}

// The native record of a counting filter: kind 4, the scheme, k, m = the number of counters, the
// exact count, zero parameters, and as payload the counter words little-endian (counter c in
// byte c>>1, in its low nibble when c is even), ceil(m/16) words. Counters past m are zero.

// WriteTo writes c in the native format. It implements io.WriterTo and may run while other
// goroutines use c.
func (c *Counting) WriteTo(w io.Writer) (int64, error) {
	h := fileHeader{kind: kindCounting, scheme: c.scheme, k: uint32(c.k), m: c.m, count: c.Count(),
		payload: uint64(c.ByteLen())}
	n, err := w.Write(h.marshal())
	if err != nil {
		return int64(n), err
	}
	m, err := writeWords(w, c.words)
	return int64(n) + m, err
}

// ReadFrom replaces c with a counting filter read in the native format. It implements
// io.ReaderFrom and reads exactly one record; on error c is unchanged. Damaged input is refused
// with ErrCorrupt, sizes beyond this machine's memory with ErrTooLarge, before allocation.
func (c *Counting) ReadFrom(r io.Reader) (int64, error) {
	cr := &countingReader{r: r}
	h, err := readHeader(cr, kindCounting)
	if err != nil {
		return cr.n, err
	}
	d, err := readCountingBody(cr, h)
	if err != nil {
		return cr.n, err
	}
	*c = *d
	return cr.n, nil
}

// MarshalBinary returns c in the native format.
func (c *Counting) MarshalBinary() ([]byte, error) { return marshal(c, c.ByteLen()) }

// UnmarshalBinary replaces c with the counting filter encoded in data, which must hold exactly one
// native record; on error c is unchanged.
func (c *Counting) UnmarshalBinary(data []byte) error {
	d, err := unmarshal(data, kindCounting, readCountingBody)
	if err != nil {
		return err
	}
	*c = *d
	return nil
}

func readCountingBody(r io.Reader, h fileHeader) (*Counting, error) {
	if !h.scheme.Valid() {
		return nil, corruptf("unknown hashing scheme %d", h.scheme)
	}
	if h.k < 1 || h.k > MaxK {
		return nil, corruptf("k=%d is not in [1, %d]", h.k, MaxK)
	}
	if h.m == 0 || float64(h.m) > maxBits {
		return nil, corruptf("%d counters is not in [1, 2^56]", h.m)
	}
	if h.scheme != Redisson && h.m%64 != 0 {
		return nil, corruptf("%d counters is not a multiple of 64", h.m)
	}
	if h.params != ([paramsSize]byte{}) {
		return nil, corruptf("nonzero parameters for a counting filter")
	}
	if want := (h.m + 15) / 16 * 8; h.payload != want {
		return nil, corruptf("payload of %d bytes does not match %d counters (want %d bytes)", h.payload, h.m, want)
	}
	if err := checkAlloc(h.payload); err != nil {
		return nil, err
	}
	words, err := readWords(r, h.payload)
	if err != nil {
		return nil, err
	}
	if extra := h.m % 16; extra != 0 && words[len(words)-1]>>(extra*4) != 0 {
		return nil, corruptf("counters past the last of %d are not zero", h.m)
	}
	adviseHugePages(words)
	return &Counting{words: words, m: h.m, k: int(h.k), scheme: h.scheme, div: newDivisor(h.m),
		count: h.count}, nil
}
