package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// The Redisson-compatible layout: what Redisson's RBloomFilter (with StringCodec) stores, and how
// it sizes, so that a Java service and a Go service share one filter. Facts from Redisson's
// RedissonBloomFilter are pinned by testdata/redisson.

// redissonMaxSize is Redisson's limit on a filter's size (getMaxSize, Integer.MAX_VALUE·2).
const redissonMaxSize = 4294967294

// NewRedisson returns a handle to the Redisson RBloomFilter called name, as Redisson's
// getBloomFilter(name, StringCodec.INSTANCE).tryInit(n, p) would make it: size and k by
// Redisson's rule (Guava's formulas, size not rounded), the HighwayHash scheme (bloom.Redisson,
// unless opt.Scheme names another),
// the bitmap at key name and the config hash at "{name}:config" (or "name:config" when name
// already contains '{'), its fields written as Redisson's StringCodec writes them. A Java service
// using Redisson with StringCodec and this handle answer alike for the same strings.
//
// If the config exists with other values, NewRedisson fails with ErrConfigMismatch; values that
// differ only in spelling (a falseProbability written by an older JDK) are accepted and kept.
// Redisson filters are never split: their size is at most 4294967294 bits.
func NewRedisson(ctx context.Context, c redis.UniversalClient, name string, n uint64, p float64, opt *Options) (*Filter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty filter name", ErrInvalid)
	}
	m, k, err := redissonSize(n, p)
	if err != nil {
		return nil, err
	}
	f := newRedisson(c, name, o, redissonScheme(opt), m, k, n, p, u64(n), javaDouble(p))
	err = f.init(ctx, "new")
	if errors.Is(err, ErrConfigMismatch) {
		// Redisson compares only size and hashIterations; accept a config that states the same
		// numbers in other words, and keep its exact strings for the per-call check.
		if g, gerr := OpenRedisson(ctx, c, name, opt); gerr == nil && g.m == m && g.k == k && g.n == n && g.p == p {
			return g, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenRedisson returns a handle to the existing Redisson RBloomFilter called name, with the size
// and number of hash functions in its config hash. It fails with ErrNotFound if there is no
// config hash.
func OpenRedisson(ctx context.Context, c redis.UniversalClient, name string, opt *Options) (*Filter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty filter name", ErrInvalid)
	}
	cfg := redissonConfigKey(name)
	vals, err := c.HMGet(ctx, cfg, "size", "hashIterations", "expectedInsertions", "falseProbability").Result()
	if err != nil {
		return nil, opErr("open", name, err)
	}
	str := make([]string, 4)
	present := false
	for i, v := range vals {
		if s, ok := v.(string); ok {
			str[i], present = s, true
		}
	}
	if !present {
		return nil, fmt.Errorf("%w: no Redisson filter %q (%s does not exist)", ErrNotFound, name, cfg)
	}
	m, merr := strconv.ParseUint(str[0], 10, 64)
	k, kerr := strconv.Atoi(str[1])
	n, nerr := strconv.ParseUint(str[2], 10, 64)
	p, perr := strconv.ParseFloat(str[3], 64)
	if merr != nil || kerr != nil || nerr != nil || perr != nil || m == 0 || m > redissonMaxSize || k < 1 || k > bloom.MaxK {
		return nil, fmt.Errorf("%w: Redisson filter %q has a config this package cannot use: size=%q hashIterations=%q expectedInsertions=%q falseProbability=%q",
			ErrConfigMismatch, name, str[0], str[1], str[2], str[3])
	}
	return newRedisson(c, name, o, redissonScheme(opt), m, k, n, p, str[2], str[3]), nil
}

// redissonScheme is the hashing scheme of a Redisson-layout handle: opt.Scheme if set, else
// Redisson's own.
func redissonScheme(opt *Options) bloom.Scheme {
	if opt != nil && opt.Scheme != 0 {
		return opt.Scheme
	}
	return bloom.Redisson
}

func newRedisson(c redis.UniversalClient, name string, o Options, s bloom.Scheme, m uint64, k int, n uint64, p float64, nStr, pStr string) *Filter {
	o.Scheme = s
	f := &Filter{client: c, name: name, redisson: true, scheme: s, m: m, k: k, n: n, p: p, partBits: MaxPartBits, opt: o}
	size, iters := u64(m), strconv.Itoa(k)
	want := "redisson size=" + size + " hashIterations=" + iters + " expectedInsertions=" + nStr + " falseProbability=" + pStr
	f.parts = []part{{meta: redissonConfigKey(name), data: name, check: []any{size, iters, nStr, pStr}, want: want}}
	return f
}

// redissonConfigKey is Redisson's suffixName(name, "config").
func redissonConfigKey(name string) string {
	if strings.Contains(name, "{") {
		return name + ":config"
	}
	return "{" + name + "}:config"
}

// redissonSize is Redisson's tryInit sizing: Guava's formulas without rounding m to words, n = 0
// refused, and at most 4294967294 bits.
func redissonSize(n uint64, p float64) (uint64, int, error) {
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: Redisson filters need at least 1 expected insertion", ErrInvalid)
	}
	m, err := bloom.OptimalBits(n, p)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if m == 0 || m > redissonMaxSize {
		return 0, 0, fmt.Errorf("%w: %d items at p=%g give %d bits; Redisson allows 1 to %d", ErrInvalid, n, p, m, uint64(redissonMaxSize))
	}
	return m, bloom.OptimalK(n, m), nil
}

// javaDouble formats f as Java's Double.toString does, which is how Redisson's StringCodec stores
// falseProbability: the shortest digits that identify the double, in plain notation with at
// least one fractional digit for 1e-3 <= |f| < 1e7 ("0.03", "100.0"), and otherwise in
// scientific notation with a mantissa in [1, 10), at least one fractional digit and an unsigned
// or negative exponent without padding ("1.0E-4", "1.2345E10").
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(f)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // "1e-04", "1.2345e+10"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
