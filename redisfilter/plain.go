package redisfilter

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// The plain layout: a filter that is nothing but one Redis string of bits, whose parameters the
// programs using it agree on in code. It is what Java services keep when they copy the widespread
// Spring "BloomFilterHelper" and write its positions with RedisTemplate.setBit (see
// SpringHelperSize and SpringHelper); other programs that hash with one of bloom's schemes and
// write with SETBIT fit it too.

// BitOrder says which Redis bit offset (the offset of SETBIT, GETBIT and BITFIELD) holds bit b of
// a filter's bit array.
type BitOrder uint8

const (
	// SetBitOrder stores bit b at offset b: Redis's own numbering, in which offset 0 is the most
	// significant bit of the string's first byte. It is what code gets that passes its positions
	// straight to SETBIT (Spring's RedisTemplate.setBit, Jedis's setbit), and Redisson's layout.
	SetBitOrder BitOrder = 1

	// WordOrder stores bit b at offset b^7, so that the string's bytes are the little-endian
	// 64-bit words of a bloom.Filter (bit b in byte b>>3 under mask 1<<(b&7)): the order of this
	// package's native layout, and of RedisBloom's dumps.
	WordOrder BitOrder = 2
)

// String returns "setbit" or "word", the names ParseBitOrder takes.
func (o BitOrder) String() string {
	switch o {
	case SetBitOrder:
		return "setbit"
	case WordOrder:
		return "word"
	}
	return fmt.Sprintf("BitOrder(%d)", uint8(o))
}

// ParseBitOrder returns the bit order with the given name, "setbit" or "word".
func ParseBitOrder(name string) (BitOrder, error) {
	for _, o := range []BitOrder{SetBitOrder, WordOrder} {
		if o.String() == name {
			return o, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown bit order %q (want setbit or word)", ErrInvalid, name)
}

// PlainParams are the parameters of a plain-layout filter. They are stored nowhere: every program
// that uses the key must be built with the same ones, or the programs will silently disagree.
type PlainParams struct {
	// M is the modulus: positions are reduced into [0, M), with no rounding. At most
	// MaxPartBits, the bits of one Redis string.
	M uint64

	// K is the number of positions per key, 1 to bloom.MaxK.
	K int

	// Scheme is how a key becomes its K positions; the Spring helper's is bloom.Guava32. It must
	// be set (there is no default).
	Scheme bloom.Scheme

	// Order is the bit order in the Redis string; zero means SetBitOrder.
	Order BitOrder
}

// Validate reports whether p describes a filter: M in [1, MaxPartBits], K in [1, bloom.MaxK], a
// known scheme and bit order. Errors wrap ErrInvalid.
func (p PlainParams) Validate() error {
	switch {
	case p.M == 0 || p.M > MaxPartBits:
		return fmt.Errorf("%w: m=%d is not in [1, 2^32] (one Redis string holds at most 2^32 bits)", ErrInvalid, p.M)
	case p.K < 1 || p.K > bloom.MaxK:
		return fmt.Errorf("%w: k=%d is not in [1, %d]", ErrInvalid, p.K, bloom.MaxK)
	case !p.Scheme.Valid():
		return fmt.Errorf("%w: the hashing scheme must be set (the Spring helper's is %s)", ErrInvalid, bloom.Guava32)
	case p.Order != 0 && p.Order != SetBitOrder && p.Order != WordOrder:
		return fmt.Errorf("%w: unknown bit order %d", ErrInvalid, p.Order)
	}
	return nil
}

// String describes p as the bloom command's flags spell it: "m=9585058 k=7 scheme=guava32
// bit-order=setbit".
func (p PlainParams) String() string {
	o := p.Order
	if o == 0 {
		o = SetBitOrder
	}
	return fmt.Sprintf("m=%d k=%d scheme=%s bit-order=%s", p.M, p.K, p.Scheme, o)
}

// maxSpringN is the largest expected-insertions count the Spring helper takes: a Java int.
const maxSpringN = math.MaxInt32

// SpringHelperSize returns the size m and number of hash functions k that the Spring
// BloomFilterHelper copied into many Java services computes for n expected insertions at
// false-positive rate p, to the bit:
//
//	m = (int) (-n * Math.log(p) / (Math.log(2) * Math.log(2)))   // not rounded to 64-bit words
//	k = Math.max(1, (int) Math.round((double) m / n * Math.log(2)))
//
// Like the helper, it takes p = 0 as Double.MIN_VALUE, and like Java's (int) conversion it caps m
// at 2^31-1. Guava's own BloomFilter.create uses the same formulas but rounds m up to whole
// words, which changes every position (9,585,058 bits for n = 1e6, p = 0.01, against Guava's
// 9,585,088). It fails with ErrInvalid for n outside [1, 2^31-1] (the helper's int), p outside
// [0, 1), or a size of 0 bits, where the helper would divide by zero.
func SpringHelperSize(n uint64, p float64) (m uint64, k int, err error) {
	if n < 1 || n > maxSpringN {
		return 0, 0, fmt.Errorf("%w: the Spring helper takes 1 to %d expected insertions (a Java int), not %d", ErrInvalid, maxSpringN, n)
	}
	if !(p >= 0 && p < 1) {
		return 0, 0, fmt.Errorf("%w: false-positive rate %g is not in [0, 1)", ErrInvalid, p)
	}
	if p == 0 {
		p = math.SmallestNonzeroFloat64 // the helper's Double.MIN_VALUE
	}
	ln2 := math.Log(2)
	bits := -float64(n) * javaLog(p) / (ln2 * ln2)
	m = uint64(min(bits, maxSpringN)) // Java's (int) truncates and saturates
	if m == 0 {
		return 0, 0, fmt.Errorf("%w: %d insertions at p=%g give the Spring helper a filter of 0 bits", ErrInvalid, n, p)
	}
	// Java's Math.round rounds halves up; for these positive values so does math.Round. k is at
	// most 1075 (m/n is at most -ln(Double.MIN_VALUE)/ln²2), well within bloom.MaxK.
	return m, int(math.Max(1, math.Round(float64(m)/float64(n)*ln2))), nil
}

// javaLog is Java's Math.log for x > 0. Go's math.Log (measured on amd64) is wrong for subnormal
// x: it gives -709.09 for Double.MIN_VALUE, whose logarithm is -744.44. Those are scaled into the
// normal range first; TestJavaSpringHelper compares the sizes with Java's for p = 0 and a
// subnormal p.
func javaLog(x float64) float64 {
	if x < 0x1p-1022 {
		return math.Log(x*0x1p52) - 52*math.Ln2
	}
	return math.Log(x)
}

// SpringHelper returns the parameters of the Spring BloomFilterHelper's filter for n expected
// insertions at false-positive rate p: SpringHelperSize's m and k, bloom.Guava32 (the helper
// takes the first 8 bytes of Guava's murmur3_128 as h1 and h2, adds i·h2 for i = 1..k in 32-bit
// arithmetic and flips negative sums, as Guava's MURMUR128_MITZ_32 does) and SetBitOrder (the
// helper passes each position to SETBIT). The keys' bytes are the helper's funnel's; see the
// package examples for the common ones.
func SpringHelper(n uint64, p float64) (PlainParams, error) {
	m, k, err := SpringHelperSize(n, p)
	if err != nil {
		return PlainParams{}, err
	}
	return PlainParams{M: m, K: k, Scheme: bloom.Guava32, Order: SetBitOrder}, nil
}

// NewPlain returns a handle to the plain-layout filter at key: one Redis string of bits, read
// and written with the caller's parameters, with nothing stored beside it. A Java service that
// writes the same key with SETBIT at the same positions (the Spring helper, given SpringHelper's
// parameters and the same key bytes) and this handle see each other's keys.
//
// If key does not exist, NewPlain creates it, all zero, at its full length of ceil(M/8) bytes
// (a SETBIT of a zero at the last offset: only bits are ever written). If key exists, it must
// be a string of at most ceil(M/8) bytes; a longer one means its writers use a larger M, and is
// refused with ErrConfigMismatch, as every later call refuses it. A shorter string is accepted
// (its writers have not reached its last bits yet), so a writer with a smaller M cannot be told
// apart: agreeing on the parameters is the caller's part. A key of another type gives
// ErrWrongType. opt's Scheme and PartBits are ignored; its ScriptKeys and PipelineKeys apply.
//
// The key may be any name, braces included: it is the only key, so it needs no hash tag.
// Add and Test are one script call each (one round trip), AddMany and TestMany one pipeline per
// Options.PipelineKeys keys; each call also checks the string's type and length, atomically with
// its bits.
func NewPlain(ctx context.Context, c redis.UniversalClient, key string, p PlainParams, opt *Options) (*Filter, error) {
	f, err := newPlain(c, key, p, opt)
	if err != nil {
		return nil, err
	}
	if err := f.init(ctx, "new"); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenPlain is NewPlain for a key that must exist already: it fails with ErrNotFound, writing
// nothing, where NewPlain would create the key.
func OpenPlain(ctx context.Context, c redis.UniversalClient, key string, p PlainParams, opt *Options) (*Filter, error) {
	f, err := newPlain(c, key, p, opt)
	if err != nil {
		return nil, err
	}
	pt := &f.parts[0]
	cl := &call{script: plainScript, keys: []string{pt.meta, pt.data}, args: append(append([]any{}, pt.check...), "o", 0, f.k), want: pt.want}
	run(ctx, c, []*call{cl})
	v, err := cl.cmd.Result()
	if err != nil {
		return nil, callErr("open", key, cl, err)
	}
	if v != "1" {
		return nil, fmt.Errorf("%w: key %q does not exist", ErrNotFound, key)
	}
	return f, nil
}

func newPlain(c redis.UniversalClient, key string, p PlainParams, opt *Options) (*Filter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Order == 0 {
		p.Order = SetBitOrder
	}
	o.Scheme = p.Scheme
	f := &Filter{client: c, name: key, plain: true, order: p.Order, scheme: p.Scheme, m: p.M, k: p.K, partBits: MaxPartBits, opt: o}
	maxLen := (p.M + 7) / 8
	// The check arguments: the longest string the parameters allow, and the offset whose SETBIT
	// creates the string at that length.
	last := f.offset(p.M - 1)
	f.parts = []part{{meta: key, data: key, check: []any{maxLen, last}, want: p.String()}}
	return f, nil
}

// Params returns the parameters of a plain-layout filter (zero for the other layouts).
func (f *Filter) Params() PlainParams {
	if !f.plain {
		return PlainParams{}
	}
	return PlainParams{M: f.m, K: f.k, Scheme: f.scheme, Order: f.order}
}

// tooLongPrefix starts the error reply of a plain-layout script that finds the string longer
// than the handle's M allows; the rest is the string's length in bytes.
const tooLongPrefix = "BLOOMTOOLONG"

// plainHeader checks the string of a plain-layout filter: its type (STRLEN fails with WRONGTYPE
// on another type, before any write) and its length. Op 'i' creates a missing string at full
// length; op 'o' answers whether the key exists.
// KEYS[1], KEYS[2]: the key. ARGV[1]: the longest length allowed, in bytes; ARGV[2]: the offset
// of the filter's last bit; ARGV[3]: op; ARGV[4]: number of keys.
const plainHeader = `
local op, n = ARGV[3], tonumber(ARGV[4])
local len = redis.call('STRLEN', KEYS[2])
if len > tonumber(ARGV[1]) then return redis.error_reply('BLOOMTOOLONG ' .. len) end
if op == 'o' then return tostring(redis.call('EXISTS', KEYS[2])) end
if op == 'i' and len == 0 and redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SETBIT', KEYS[2], ARGV[2], 0) end
local a = 5
`

var plainScript = redis.NewScript(plainHeader + bitsBody)

// tooLong explains a plain-layout string longer than the handle's parameters allow.
func tooLong(op, name string, cl *call, err error) error {
	n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(err.Error(), tooLongPrefix)), 10, 64)
	return fmt.Errorf("%w: %s %q: the string holds %d bytes, more than the %d that this handle's %s allows; the programs writing it use a larger m",
		ErrConfigMismatch, op, name, n, cl.args[0], cl.want)
}
