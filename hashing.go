package bloom

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/bloomd/bloom/internal/hash"
	"github.com/minio/highwayhash"
	"github.com/twmb/murmur3"
)

// A Scheme says how a key becomes the k bit positions of a filter: which hash runs over the key's
// bytes, and how k positions are derived from its output by double hashing. Every filter records
// its scheme, and a filter only answers like another program's filter when both the scheme and
// the size (m, k) agree. Schemes are stored in files, so their values never change.
type Scheme uint8

const (
	// Guava64 is Guava's MURMUR128_MITZ_64 strategy, Guava's default since release 17:
	// (h1, h2) = murmur3 x64_128(key, seed 0), position i = ((h1 + i·h2) & MaxInt64) mod m.
	Guava64 Scheme = 1

	// Guava32 is Guava's legacy MURMUR128_MITZ_32 strategy, for files written before Guava 17:
	// only the low 64 bits of murmur3 are used, split in two 32-bit halves, and positions never
	// reach 2^31, so filters beyond 2^31 bits leave their upper part unused (Guava issue 1119).
	Guava32 Scheme = 2

	// RedisBloom64 is the scheme of RedisBloom's BF.* filters (FORCE64): a = MurmurHash64A(key,
	// 0xc6a4a7935bd1e995), b = MurmurHash64A(key, a), position i = (a + i·b) mod m.
	RedisBloom64 Scheme = 3

	// Redisson is the scheme of Redisson's RBloomFilter with StringCodec: (h1, h2) = HighwayHash-128
	// with Redisson's fixed key, and the multiplier sequence alternates: h1, h1+h2, 2h1+h2, ...
	// Redisson's modulus is its exact size, not rounded to words.
	Redisson Scheme = 4
)

// String returns the scheme's name as used in files, flags and error messages.
func (s Scheme) String() string {
	switch s {
	case Guava64:
		return "guava64"
	case Guava32:
		return "guava32"
	case RedisBloom64:
		return "redisbloom64"
	case Redisson:
		return "redisson"
	}
	return fmt.Sprintf("scheme(%d)", uint8(s))
}

// ParseScheme returns the scheme with the given name (as String returns it).
func ParseScheme(name string) (Scheme, error) {
	for s := Guava64; s <= Redisson; s++ {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown hashing scheme %q (want guava64, guava32, redisbloom64 or redisson)", ErrInvalidParameter, name)
}

// Valid reports whether s is one of the schemes defined by this package.
func (s Scheme) Valid() bool { return s >= Guava64 && s <= Redisson }

// Hash returns the two 64-bit values the scheme derives a key's positions from.
// Hashing is the only per-key cost that does not depend on k, so filters call it once per key.
func (s Scheme) Hash(key []byte) (h1, h2 uint64) {
	switch s {
	case RedisBloom64:
		return hash.RedisBloom64(key)
	case Redisson:
		sum := highwayhash.Sum128(key, redissonKey[:])
		return leUint64(sum[0:8]), leUint64(sum[8:16])
	default: // Guava64, Guava32
		return murmur3.Sum128(key)
	}
}

// Location returns position i (0-based) of a key with hash values (h1, h2) in a filter whose
// positions are reduced modulo m. It is exact for every scheme, including Guava's sign-bit
// masking and Guava32's 32-bit wrapping arithmetic.
func (s Scheme) Location(h1, h2 uint64, i int, m uint64) uint64 {
	switch s {
	case Guava32:
		lo, hi := int32(h1), int32(h1>>32)
		c := lo + int32(i+1)*hi // i starts at 1 in Guava; wrapping int32 arithmetic
		if c < 0 {
			c = ^c
		}
		return uint64(c) % m
	case RedisBloom64:
		return (h1 + uint64(i)*h2) % m
	case Redisson:
		i1, i2 := uint64(i/2+1), uint64((i+1)/2)
		return ((i1*h1 + i2*h2) & math.MaxInt64) % m
	default:
		return ((h1 + uint64(i)*h2) & math.MaxInt64) % m
	}
}

// Locations appends to dst the k bit positions of key in a filter of modulus m under scheme s.
// Programs that keep the bits elsewhere (a Redis bitmap, say) use it to compute positions locally.
func (s Scheme) Locations(dst []uint64, key []byte, k int, m uint64) []uint64 {
	h1, h2 := s.Hash(key)
	for i := range k {
		dst = append(dst, s.Location(h1, h2, i, m))
	}
	return dst
}

// redissonKey is the HighwayHash key Redisson hardcodes (misc/Hash.java): the longs
// {0x9e3779b97f4a7c15, 0xf39cc0605cedc834, 0x1082276bf3a27251, 0xf86c6a11d0c18e95}, little-endian.
var redissonKey = [32]byte{
	0x15, 0x7c, 0x4a, 0x7f, 0xb9, 0x79, 0x37, 0x9e,
	0x34, 0xc8, 0xed, 0x5c, 0x60, 0xc0, 0x9c, 0xf3,
	0x51, 0x72, 0xa2, 0xf3, 0x6b, 0x27, 0x82, 0x10,
	0x95, 0x8e, 0xc1, 0xd0, 0x11, 0x6a, 0x6c, 0xf8,
}

func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// divisor reduces values modulo a fixed d without a hardware division, which costs more than
// everything else in a probe. For x < 2^63 it computes q = floor(x·magic / 2^(63+s)) with
// s = ceil(log2 d) and magic = ceil(2^(63+s) / d) < 2^64; the rounding error of magic is below
// 2^-s ≤ 1/d, so q is exact (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994, applied to 63-bit dividends so the magic fits in one word).
// Values with the top bit set are split as x = 2^63 + r first.
type divisor struct {
	d, magic uint64
	shift    uint8  // s - 1
	top      uint64 // 2^63 mod d
}

func newDivisor(d uint64) divisor {
	if d <= 1 {
		return divisor{d: 1}
	}
	s := uint(bits.Len64(d - 1)) // ceil(log2 d), >= 1
	// magic = ceil(2^(63+s) / d). 2^(63+s) = 2^(s-1)·2^64, and 2^(s-1) < d, so the 128-by-64
	// division cannot overflow and its quotient fits in 64 bits.
	q, r := bits.Div64(uint64(1)<<(s-1), 0, d)
	if r != 0 {
		q++
	}
	return divisor{d: d, magic: q, shift: uint8(s - 1), top: (1 << 63) % d}
}

// mod63 returns x mod d for x < 2^63.
func (v *divisor) mod63(x uint64) uint64 {
	hi, _ := bits.Mul64(x, v.magic)
	return x - (hi>>v.shift)*v.d
}

// mod returns x mod d for any x.
func (v *divisor) mod(x uint64) uint64 {
	if v.d == 1 {
		return 0
	}
	// x = (x mod 2^63) + 2^63·(x>>63). Without a branch on the top bit, a coin toss for hashed
	// positions that the predictor loses half the time.
	r := v.mod63(x&math.MaxInt64) + (x>>63)*v.top
	if r >= v.d {
		r -= v.d
	}
	return r
}
