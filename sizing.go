package bloom

import (
	"fmt"
	"math"
)

// ln2 and ln2Squared are the constants of the standard formulas. ln2Squared is computed the way
// Guava computes it (Math.log(2) * Math.log(2)), so that sizes agree with Guava to the bit.
var (
	ln2        = math.Log(2)
	ln2Squared = math.Log(2) * math.Log(2)
)

// MaxK is the largest number of hash functions any constructor accepts. Guava's stream stores k
// in one byte, so it cannot hold more than 255; RedisBloom's sizing reaches a few hundred only for
// error rates below 1e-100.
const MaxK = 4096

// OptimalBits returns the number of bits m that a classic filter needs to hold n items at a
// false-positive rate p, by Guava's rule: m = (long)(-n ln p / ln²2), with n = 0 taken as 1.
// The result is not rounded to whole 64-bit words; filters round it up (see GuavaSize).
func OptimalBits(n uint64, p float64) (uint64, error) {
	if err := checkRate(p); err != nil {
		return 0, err
	}
	if n == 0 {
		n = 1
	}
	bits := -float64(n) * math.Log(p) / ln2Squared
	if bits >= maxBits {
		return 0, fmt.Errorf("%w: %d items at p=%g need %.3g bits (limit %d)", ErrTooLarge, n, p, bits, uint64(maxBits))
	}
	return uint64(bits), nil
}

// OptimalK returns the number of hash functions that minimises the false-positive rate of a
// filter of m bits holding n items: max(1, round(m/n · ln 2)), with n = 0 taken as 1. This is
// Guava 31.1's formula, which uses m before it is rounded to whole words.
func OptimalK(n, m uint64) int {
	if n == 0 {
		n = 1
	}
	k := math.Round(float64(m) / float64(n) * ln2)
	return int(max(1, min(k, MaxK)))
}

// GuavaSize returns the modulus m (the bit count rounded up to whole 64-bit words) and the number
// of hash functions k that Guava 31.1's BloomFilter.create(funnel, n, p) chooses. It fails for
// p outside (0, 1), for a zero bit count (n = 1 with p ≥ 0.62) and for k > 255, as Guava does.
func GuavaSize(n uint64, p float64) (m uint64, k int, err error) {
	bits, err := OptimalBits(n, p)
	if err != nil {
		return 0, 0, err
	}
	if bits == 0 {
		return 0, 0, fmt.Errorf("%w: %d items at p=%g give a filter of 0 bits", ErrInvalidParameter, n, p)
	}
	k = OptimalK(n, bits)
	if k > 255 {
		return 0, 0, fmt.Errorf("%w: p=%g needs %d hash functions (Guava allows at most 255)", ErrInvalidParameter, p, k)
	}
	return roundToWords(bits), k, nil
}

// RedisBloomSize returns the sizing RedisBloom 2.6 gives one sub-filter of the given capacity and
// error rate (bloom_init with FORCE64|NOROUND): bits per entry bpe = -ln(p)/ln²2, the bit count
// trunc(capacity · bpe) rounded up to whole 64-bit words, and k = ceil(ln 2 · bpe).
func RedisBloomSize(capacity uint64, p float64) (m uint64, k int, bpe float64, err error) {
	if err := checkRate(p); err != nil {
		return 0, 0, 0, err
	}
	if capacity == 0 {
		return 0, 0, 0, fmt.Errorf("%w: capacity must be at least 1", ErrInvalidParameter)
	}
	// RedisBloom divides by the literal 0.480453013918201 and multiplies by 0.693147180559945;
	// using the same literals keeps k and m identical at the edges.
	bpe = math.Abs(-lnExact(p) / 0.480453013918201)
	bits := float64(capacity) * bpe
	if bits >= maxBits {
		return 0, 0, 0, fmt.Errorf("%w: capacity %d at p=%g needs %.3g bits (limit %d)", ErrTooLarge, capacity, p, bits, uint64(maxBits))
	}
	m = max(uint64(bits), 1)
	k = int(math.Ceil(0.693147180559945 * bpe))
	if k > MaxK {
		return 0, 0, 0, fmt.Errorf("%w: p=%g needs %d hash functions (limit %d)", ErrInvalidParameter, p, k, MaxK)
	}
	return roundToWords(m), k, bpe, nil
}

// FalsePositiveRate returns the expected false-positive rate of a filter of m bits with k hash
// functions after n distinct items: (1 - e^(-kn/m))^k.
func FalsePositiveRate(m uint64, k int, n uint64) float64 {
	if m == 0 {
		return 1
	}
	return math.Pow(-math.Expm1(-float64(k)*float64(n)/float64(m)), float64(k))
}

// Capacity returns the largest number of distinct items a filter of m bits with k hash
// functions can hold while its expected false-positive rate stays at or below p.
func Capacity(m uint64, k int, p float64) uint64 {
	if m == 0 || k <= 0 || !(p > 0) {
		return 0
	}
	if p >= 1 {
		return math.MaxUint64
	}
	// Solve (1 - e^(-kn/m))^k = p for n, then step down to the last integer that satisfies it.
	n := uint64(-float64(m) / float64(k) * math.Log1p(-math.Pow(p, 1/float64(k))))
	for n > 0 && FalsePositiveRate(m, k, n) > p {
		n--
	}
	for FalsePositiveRate(m, k, n+1) <= p {
		n++
	}
	return n
}

// maxBits bounds every size computation so that bit counts, byte counts and word counts all fit
// comfortably in int64 arithmetic: 2^56 bits is 8 PiB, far beyond any machine.
const maxBits = float64(1 << 56)

func checkRate(p float64) error {
	if !(p > 0 && p < 1) { // also rejects NaN
		return fmt.Errorf("%w: false-positive rate %g is not in (0, 1)", ErrInvalidParameter, p)
	}
	return nil
}

// roundToWords rounds a bit count up to a whole number of 64-bit words.
func roundToWords(bits uint64) uint64 { return (bits + 63) &^ 63 }
