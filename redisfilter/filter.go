package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// MaxPartBits is the most bits one Redis key holds: a Redis string is at most 512 MB, so SETBIT
// offsets stop below 2^32. Native filters larger than this are split into parts.
const MaxPartBits = 1 << 32

// Options configure a filter handle. A nil *Options means the defaults.
type Options struct {
	// Scheme is the hashing scheme of a native filter; zero means bloom.Guava64. It also picks
	// the sizing rule: Guava's for Guava64 and Guava32, RedisBloom's (one non-scaling link) for
	// RedisBloom64, Redisson's (exact size) for Redisson. Redisson-layout filters (NewRedisson,
	// OpenRedisson) hash with bloom.Redisson when Scheme is zero, as Redisson does, and with
	// Scheme when it is set (for Java code that keeps Redisson's config hash and bitmap but
	// computes positions another way), always over Redisson's exact size. Plain-layout filters
	// ignore it: their PlainParams name the scheme.
	Scheme bloom.Scheme

	// PartBits is the most bits a native filter keeps in one Redis key; a larger filter is split
	// into ceil(m/PartBits) parts with distinct hash tags (see the package documentation). Zero
	// means MaxPartBits. It must be a multiple of 64. For a ScalableFilter it bounds each link
	// instead; counting filters ignore it. Open ignores it and uses the stored value.
	PartBits uint64

	// ScriptKeys is the number of keys AddMany and TestMany pass to one script call; zero means
	// 256. Larger values mean fewer, longer script runs, which block the server for longer.
	ScriptKeys int

	// PipelineKeys is the number of keys AddMany and TestMany send in one round trip (one
	// pipeline of script calls); zero means 65536. Larger batches take several round trips.
	PipelineKeys int
}

func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Scheme == 0 {
		r.Scheme = bloom.Guava64
	}
	if !r.Scheme.Valid() {
		return r, fmt.Errorf("%w: unknown hashing scheme %d", ErrInvalid, r.Scheme)
	}
	if r.PartBits == 0 {
		r.PartBits = MaxPartBits
	}
	if r.PartBits%64 != 0 || r.PartBits > MaxPartBits {
		return r, fmt.Errorf("%w: PartBits %d is not a multiple of 64 in [64, 2^32]", ErrInvalid, r.PartBits)
	}
	if r.ScriptKeys == 0 {
		r.ScriptKeys = 256
	}
	if r.PipelineKeys == 0 {
		r.PipelineKeys = 65536
	}
	if r.ScriptKeys < 0 || r.PipelineKeys < 0 {
		return r, fmt.Errorf("%w: negative ScriptKeys or PipelineKeys", ErrInvalid)
	}
	return r, nil
}

// Filter is a classic Bloom filter kept in Redis: its bits in one Redis string (or several, for a
// split filter), its parameters in a hash beside them. Every method makes one round trip (two if
// the server has lost the script and it must be sent again) and checks the stored parameters in
// the same atomic script call.
//
// A Filter is a handle: it holds the parameters and the client, not the bits. It is safe for
// concurrent use by multiple goroutines, and any number of handles in any number of processes
// may share one filter. Create one with New, NewRedisson, Open or OpenRedisson.
type Filter struct {
	client   redis.UniversalClient
	name     string
	redisson bool
	plain    bool     // one string of bits, nothing beside it (NewPlain)
	order    BitOrder // the plain layout's bit order
	counting bool     // 4-bit counters instead of bits (CountingFilter)
	scheme   bloom.Scheme
	m        uint64 // modulus: positions are reduced into [0, m)
	k        int
	n        uint64
	p        float64
	partBits uint64
	parts    []part
	opt      Options
}

// part is one Redis-side piece of a filter: a parameter hash and a data key in one hash slot.
type part struct {
	meta, data string
	check      []any  // the script's check arguments
	want       string // the parameter line the check arguments stand for
}

// New returns a handle to the native-layout filter called name, sized for n keys at false-positive
// rate p by the rule of opt.Scheme (Guava's by default), creating it if it does not exist. If it
// exists with other parameters, New fails with ErrConfigMismatch and says which differ.
//
// The filter's keys are "{name}:meta" (a hash holding the parameter line) and "{name}:bits"; a
// split filter has "{name:i}:meta" and "{name:i}:bits" for each part i. The name must not contain
// '{' or '}', so that each part's two keys share one hash slot.
func New(ctx context.Context, c redis.UniversalClient, name string, n uint64, p float64, opt *Options) (*Filter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	m, k, err := size(o.Scheme, n, p)
	if err != nil {
		return nil, err
	}
	if (m+o.PartBits-1)/o.PartBits > maxParts {
		return nil, fmt.Errorf("%w: %d bits in parts of %d make more than %d parts", ErrInvalid, m, o.PartBits, maxParts)
	}
	f := newNative(c, name, o, "classic", m, k, n, p, o.PartBits)
	if err := f.init(ctx, "new"); err != nil {
		return nil, err
	}
	return f, nil
}

// Open returns a handle to the existing native-layout filter called name, with the parameters
// stored beside it. It fails with ErrNotFound if there is none. opt's Scheme and PartBits are
// ignored.
func Open(ctx context.Context, c redis.UniversalClient, name string, opt *Options) (*Filter, error) {
	return openNative(ctx, c, name, opt, "classic")
}

func openNative(ctx context.Context, c redis.UniversalClient, name string, opt *Options, kind string) (*Filter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	line, err := readLine(ctx, c, name)
	if err != nil {
		return nil, err
	}
	return parseNative(c, name, line, kind, o)
}

// maxParts bounds the parts of a split filter read from Redis (2^48 bits at the largest part
// size), so a damaged parameter line cannot make a handle allocate without limit.
const maxParts = 1 << 16

// parseNative builds a handle from a stored parameter line, which must be one this package
// writes, byte for byte, for the parameters it states.
func parseNative(c redis.UniversalClient, name, line, kind string, o Options) (*Filter, error) {
	fields, err := expectKind(name, line, kind)
	if err != nil {
		return nil, err
	}
	var perr error
	get := func(key string) uint64 {
		v, ok := lookup(fields, key)
		x, err := strconv.ParseUint(v, 10, 64)
		if (!ok || err != nil) && perr == nil {
			perr = fmt.Errorf("%w: filter %q has an unreadable parameter %s in %q", ErrConfigMismatch, name, key, line)
		}
		return x
	}
	sv, _ := lookup(fields, "scheme")
	scheme, serr := bloom.ParseScheme(sv)
	m, k, n, parts := get("m"), get("k"), get("n"), get("parts")
	partBits := uint64(MaxPartBits)
	if parts > 1 {
		partBits = get("partbits")
	}
	pv, _ := lookup(fields, "p")
	p, ferr := strconv.ParseFloat(pv, 64)
	switch {
	case perr != nil:
		return nil, perr
	case serr != nil || ferr != nil || m == 0 || k == 0 || k > bloom.MaxK || parts == 0 || parts > maxParts ||
		partBits == 0 || partBits%64 != 0 || partBits > MaxPartBits || parts != (m+partBits-1)/partBits:
		return nil, fmt.Errorf("%w: filter %q has parameters this package cannot use: %q", ErrConfigMismatch, name, line)
	}
	o.Scheme = scheme
	f := newNative(c, name, o, kind, m, int(k), n, p, partBits)
	if f.parts[0].want != line {
		return nil, fmt.Errorf("%w: filter %q: %s", ErrConfigMismatch, name, describeMismatch(line, f.parts[0].want))
	}
	return f, nil
}

// readLine reads the parameter line of the native filter called name: "{name}:meta", or for a
// split filter "{name:0}:meta", both in one round trip.
func readLine(ctx context.Context, c redis.UniversalClient, name string) (string, error) {
	pipe := c.Pipeline()
	whole := pipe.HGet(ctx, "{"+name+"}:meta", "params")
	first := pipe.HGet(ctx, "{"+name+":0}:meta", "params")
	_, _ = pipe.Exec(ctx)
	for _, cmd := range []*redis.StringCmd{whole, first} {
		line, err := cmd.Result()
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, redis.Nil) {
			return "", opErr("open", name, err)
		}
	}
	return "", fmt.Errorf("%w: no filter %q ({%s}:meta does not exist)", ErrNotFound, name, name)
}

// expectKind checks a parameter line's format and kind.
func expectKind(name, line, kind string) ([]field, error) {
	format, fields := parseLine(line)
	if format != formatVersion {
		return nil, fmt.Errorf("%w: filter %q is stored in format %q; this package reads %q", ErrConfigMismatch, name, format, formatVersion)
	}
	if got, _ := lookup(fields, "kind"); got != kind {
		return nil, fmt.Errorf("%w: filter %q is a %s filter, not a %s filter", ErrConfigMismatch, name, got, kind)
	}
	return fields, nil
}

func newNative(c redis.UniversalClient, name string, o Options, kind string, m uint64, k int, n uint64, p float64, partBits uint64) *Filter {
	f := &Filter{client: c, name: name, counting: kind == "counting", scheme: o.Scheme, m: m, k: k, n: n, p: p, partBits: partBits, opt: o}
	data := "}:bits"
	if f.counting {
		data = "}:counters"
	}
	nparts := int((m + partBits - 1) / partBits)
	for i := range nparts {
		tag := name
		fields := []field{
			{"kind", kind}, {"scheme", f.scheme.String()}, {"m", u64(m)}, {"k", strconv.Itoa(k)},
			{"n", u64(n)}, {"p", formatRate(p)}, {"parts", strconv.Itoa(nparts)},
		}
		if nparts > 1 {
			tag = name + ":" + strconv.Itoa(i)
			fields = append(fields, field{"part", strconv.Itoa(i)}, field{"partbits", u64(partBits)})
		}
		line := paramLine(fields...)
		f.parts = append(f.parts, part{meta: "{" + tag + "}:meta", data: "{" + tag + data, check: []any{line}, want: line})
	}
	return f
}

// checkClient refuses a nil client, which would otherwise panic inside the first call.
func checkClient(c redis.UniversalClient) error {
	if c == nil {
		return fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	return nil
}

// checkName refuses names that would break the hash tags of a native filter's keys.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty filter name", ErrInvalid)
	}
	if strings.ContainsAny(name, "{}") {
		return fmt.Errorf("%w: filter name %q contains '{' or '}', which would change its keys' hash slots", ErrInvalid, name)
	}
	return nil
}

// size returns the modulus and k that scheme s's sizing rule gives n keys at rate p.
func size(s bloom.Scheme, n uint64, p float64) (uint64, int, error) {
	var (
		m   uint64
		k   int
		err error
	)
	switch s {
	case bloom.RedisBloom64:
		m, k, _, err = bloom.RedisBloomSize(n, p)
	case bloom.Redisson:
		m, k, err = redissonSize(n, p)
	default:
		m, k, err = bloom.GuavaSize(n, p)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return m, k, nil
}

// init creates the filter's parameters where they are missing and checks them where they exist,
// in one round trip for all parts.
func (f *Filter) init(ctx context.Context, op string) error {
	calls := make([]*call, len(f.parts))
	for i := range f.parts {
		pt := &f.parts[i]
		args := append(append([]any{}, pt.check...), "i", 0, f.k)
		calls[i] = &call{script: f.script(), keys: []string{pt.meta, pt.data}, args: args, want: pt.want}
	}
	run(ctx, f.client, calls)
	for _, cl := range calls {
		if err := cl.cmd.Err(); err != nil {
			return callErr(op, f.name, cl, err)
		}
	}
	return nil
}

func (f *Filter) script() *redis.Script {
	if f.counting {
		return countingScript
	}
	if f.redisson {
		return redissonScript
	}
	if f.plain {
		return plainScript
	}
	return nativeScript
}

// Name returns the filter's name.
func (f *Filter) Name() string { return f.name }

// M returns the filter's modulus: its number of bits.
func (f *Filter) M() uint64 { return f.m }

// K returns the number of bits per key.
func (f *Filter) K() int { return f.k }

// Scheme returns the hashing scheme.
func (f *Filter) Scheme() bloom.Scheme { return f.scheme }

// Parts returns the number of Redis keys the bits are split across (1 unless the filter is
// larger than PartBits).
func (f *Filter) Parts() int { return len(f.parts) }

// Keys returns the Redis keys of the filter: for each part, its parameter hash and its data key;
// for the plain layout, its one key.
func (f *Filter) Keys() []string {
	if f.plain {
		return []string{f.name}
	}
	var keys []string
	for _, pt := range f.parts {
		keys = append(keys, pt.meta, pt.data)
	}
	return keys
}

// Add adds key and reports whether it was new: true when at least one of its bits was clear, so
// the key was definitely not in the filter before (Guava's put). One round trip.
func (f *Filter) Add(ctx context.Context, key []byte) (bool, error) {
	r, err := f.do(ctx, "add", "a", [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// Test reports whether key may be in the filter: false means it was definitely never added (by a
// call that returned without error), true means it probably was. One round trip.
func (f *Filter) Test(ctx context.Context, key []byte) (bool, error) {
	r, err := f.do(ctx, "test", "t", [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// AddString adds the UTF-8 bytes of s (Guava's and Redisson's StringCodec encoding).
func (f *Filter) AddString(ctx context.Context, s string) (bool, error) { return f.Add(ctx, []byte(s)) }

// TestString tests the UTF-8 bytes of s (Guava's and Redisson's StringCodec encoding).
func (f *Filter) TestString(ctx context.Context, s string) (bool, error) {
	return f.Test(ctx, []byte(s))
}

// AddMany adds keys and reports for each whether it was new, in one pipelined round trip per
// PipelineKeys keys. On error some keys may have been added (adding again is harmless); no key
// is reported added that was not.
func (f *Filter) AddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return f.do(ctx, "add", "a", keys)
}

// TestMany tests keys, in one pipelined round trip per PipelineKeys keys.
func (f *Filter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return f.do(ctx, "test", "t", keys)
}

// do runs op over keys in pipelines of at most PipelineKeys keys.
func (f *Filter) do(ctx context.Context, opName, op string, keys [][]byte) ([]bool, error) {
	out := make([]bool, len(keys))
	for start := 0; start < len(keys); start += f.opt.PipelineKeys {
		end := min(start+f.opt.PipelineKeys, len(keys))
		calls := f.calls(op, keys[start:end], start, out)
		run(ctx, f.client, calls)
		for _, cl := range calls {
			v, err := cl.cmd.Result()
			if err != nil {
				return nil, callErr(opName, f.name, cl, err)
			}
			s, err := bitsReply(v, len(cl.idx))
			if err != nil {
				return nil, opErr(opName, f.name, err)
			}
			for j, i := range cl.idx {
				if op == "a" {
					out[i] = out[i] || s[j] == '1'
				} else {
					out[i] = out[i] && s[j] == '1'
				}
			}
		}
	}
	return out, nil
}

// calls builds the script calls for a batch of keys: ScriptKeys keys per call and, for a split
// filter, one call per part that holds some of their positions. Adds start from false and are
// ORed over parts (new if new anywhere); tests and removes start from true and are ANDed.
func (f *Filter) calls(op string, keys [][]byte, base int, out []bool) []*call {
	var calls []*call
	pos := make([]uint64, 0, f.k)
	for s := 0; s < len(keys); s += f.opt.ScriptKeys {
		e := min(s+f.opt.ScriptKeys, len(keys))
		if op != "a" {
			for i := s; i < e; i++ {
				out[base+i] = true
			}
		}
		if len(f.parts) == 1 {
			pt := &f.parts[0]
			cl := &call{script: f.script(), keys: []string{pt.meta, pt.data}, want: pt.want}
			cl.args = make([]any, 0, len(pt.check)+3+(e-s)*f.k)
			cl.args = append(cl.args, pt.check...)
			cl.args = append(cl.args, op, e-s, f.k)
			for i := s; i < e; i++ {
				pos = f.scheme.Locations(pos[:0], keys[i], f.k, f.m)
				for _, b := range pos {
					cl.args = append(cl.args, f.offset(b))
				}
				cl.idx = append(cl.idx, base+i)
			}
			calls = append(calls, cl)
			continue
		}
		// Split filter: each key's positions, grouped by part, each group preceded by its count.
		// Sorting the k positions puts each part's positions together, whatever the part count.
		group := map[uint64]*call{}
		var order []uint64
		for i := s; i < e; i++ {
			pos = f.scheme.Locations(pos[:0], keys[i], f.k, f.m)
			slices.Sort(pos)
			for lo := 0; lo < len(pos); {
				pi := pos[lo] / f.partBits
				hi := lo + 1
				for hi < len(pos) && pos[hi]/f.partBits == pi {
					hi++
				}
				cl := group[pi]
				if cl == nil {
					pt := &f.parts[pi]
					cl = &call{script: f.script(), keys: []string{pt.meta, pt.data}, want: pt.want}
					cl.args = append(append(cl.args, pt.check...), op, 0, 0) // number of keys (set below), stride 0
					group[pi] = cl
					order = append(order, pi)
				}
				cl.args = append(cl.args, hi-lo)
				for _, b := range pos[lo:hi] {
					cl.args = append(cl.args, f.offset(b%f.partBits))
				}
				cl.idx = append(cl.idx, base+i)
				lo = hi
			}
		}
		for _, pi := range order {
			cl := group[pi]
			cl.args[len(f.parts[0].check)+1] = len(cl.idx) // the number of keys, known only now
			calls = append(calls, cl)
		}
	}
	return calls
}

// offset is the SETBIT offset of bit b of a part. Redis numbers bits from the most significant
// bit of each byte; the native layout flips that within each byte so that the string's bytes are
// the little-endian words of a bloom.Filter (bit b in byte b>>3 under mask 1<<(b&7)), and GET
// returns exactly what bloom.Filter.WriteAt takes. Redisson's layout keeps SETBIT's order, the
// plain layout takes the caller's BitOrder, and counting filters address counter b (BITFIELD's #b).
func (f *Filter) offset(b uint64) uint64 {
	if f.redisson || f.counting || (f.plain && f.order == SetBitOrder) {
		return b
	}
	return b ^ 7
}

// Snapshot copies the filter into a new in-process bloom.Filter with the same scheme, modulus
// and k (made by bloom.NewExact, so a modulus that is not whole words is kept as it is), which
// answers every Test exactly as this filter does at the moment each part is read (a split
// filter's parts are read one by one, not atomically together). It reads the whole filter: up
// to 512 MB per part. A plain-layout string longer than the handle's M allows is refused with
// ErrConfigMismatch.
func (f *Filter) Snapshot(ctx context.Context) (*bloom.Filter, error) {
	dst, err := bloom.NewExact(f.m, f.k, f.scheme)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if f.plain {
		raw, err := f.client.Get(ctx, f.name).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, opErr("snapshot", f.name, err)
		}
		if err := DecodePlain(dst, raw, f.order); err != nil {
			return nil, fmt.Errorf("%w: snapshot %q: %w", ErrConfigMismatch, f.name, err)
		}
		return dst, nil
	}
	for i, pt := range f.parts {
		pipe := f.client.Pipeline()
		check := pipe.HMGet(ctx, pt.meta, "params", "size", "hashIterations", "expectedInsertions", "falseProbability")
		data := pipe.Get(ctx, pt.data)
		_, _ = pipe.Exec(ctx)
		vals, err := check.Result()
		if err != nil {
			return nil, opErr("snapshot", f.name, err)
		}
		var stored string
		if f.redisson {
			stored = "redisson size=" + str(vals[1]) + " hashIterations=" + str(vals[2]) +
				" expectedInsertions=" + str(vals[3]) + " falseProbability=" + str(vals[4])
			if vals[1] == nil && vals[2] == nil {
				stored = ""
			}
		} else {
			stored = str(vals[0])
		}
		raw, derr := data.Bytes()
		if derr != nil && !errors.Is(derr, redis.Nil) {
			return nil, opErr("snapshot", f.name, derr)
		}
		if stored == "" && len(raw) == 0 {
			continue // an empty part: nothing added yet
		}
		if stored != pt.want {
			return nil, fmt.Errorf("%w: snapshot %q (key %s): %s", ErrConfigMismatch, f.name, pt.meta, describeMismatch(stored, pt.want))
		}
		if f.redisson {
			for j, c := range raw {
				raw[j] = bits.Reverse8(c)
			}
		}
		off := int64(uint64(i) * f.partBits / 8)
		if off+int64(len(raw)) > dst.ByteLen() {
			return nil, fmt.Errorf("%w: snapshot %q: key %s holds %d bytes, beyond the filter's %d bits", ErrConfigMismatch, f.name, pt.data, len(raw), f.m)
		}
		if _, err := dst.WriteAt(raw, off); err != nil {
			return nil, fmt.Errorf("redisfilter: snapshot %q: %w", f.name, err)
		}
	}
	return dst, nil
}

// DecodePlain ORs into dst the bits of raw, the bytes of a plain-layout Redis string (GET's
// reply) stored in the given bit order, so that dst then answers every Test as the plain filter
// with dst's modulus, k and scheme does. raw may be shorter than the filter (its writers have not
// reached its last bits) but not longer than ceil(m/8) bytes, m being dst's modulus; a longer one
// is refused with an error, leaving dst unchanged. It reorders raw's bytes in place. dst must not
// be in use by other goroutines.
func DecodePlain(dst *bloom.Filter, raw []byte, order BitOrder) error {
	if dst == nil {
		return fmt.Errorf("%w: nil filter", ErrInvalid)
	}
	if order != SetBitOrder && order != WordOrder {
		return fmt.Errorf("%w: unknown bit order %d", ErrInvalid, order)
	}
	if max := (dst.M() + 7) / 8; uint64(len(raw)) > max {
		return fmt.Errorf("the string holds %d bytes, more than the %d that m=%d allows; its writers use a larger m", len(raw), max, dst.M())
	}
	if order == SetBitOrder {
		for j, c := range raw {
			raw[j] = bits.Reverse8(c)
		}
	}
	// OR the bytes in word by word: WriteAt would replace them, losing what dst already holds.
	for off := 0; off < len(raw); off += 8 {
		var word [8]byte
		dst.ReadAt(word[:], int64(off))
		for j := range min(8, len(raw)-off) {
			word[j] |= raw[off+j]
		}
		if _, err := dst.WriteAt(word[:], int64(off)); err != nil {
			return err
		}
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// ApproximateCount estimates the number of distinct keys added from the number of set bits
// (BITCOUNT of every part, one round trip), by Guava's approximateElementCount: round(-m/k ·
// ln(1 - set/m)). It does not check the stored parameters.
func (f *Filter) ApproximateCount(ctx context.Context) (uint64, error) {
	pipe := f.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(f.parts))
	for i, pt := range f.parts {
		cmds[i] = pipe.BitCount(ctx, pt.data, nil)
	}
	_, _ = pipe.Exec(ctx)
	var set uint64
	for _, c := range cmds {
		v, err := c.Result()
		if err != nil {
			return 0, opErr("count", f.name, err)
		}
		set += uint64(v)
	}
	x := float64(min(set, f.m))
	if set >= f.m {
		x = float64(f.m) - 0.5
	}
	return uint64(math.Round(-math.Log1p(-x/float64(f.m)) * float64(f.m) / float64(f.k))), nil
}

// Delete removes the filter's keys (every part's parameters and bits), one round trip.
func (f *Filter) Delete(ctx context.Context) error {
	pipe := f.client.Pipeline()
	for _, pt := range f.parts {
		pipe.Del(ctx, pt.meta, pt.data) // same hash slot, so one command per part works on Cluster
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return opErr("delete", f.name, err)
	}
	return nil
}
