package redisfilter

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// Sizes worked by hand from the Spring helper's formulas (m = -n·ln p / ln²2 truncated, k =
// round(m/n·ln 2)); TestJavaSpringHelper checks many more against the Java code itself.
func TestSpringHelperSize(t *testing.T) {
	m, k, err := SpringHelperSize(1_000_000, 0.01)
	if err != nil || m != 9585058 || k != 7 {
		t.Fatalf("SpringHelperSize(1e6, 0.01) = %d, %d, %v; want 9585058, 7", m, k, err)
	}
	// Java's (int) conversion saturates.
	m, _, err = SpringHelperSize(math.MaxInt32, 1e-10)
	if err != nil || m != math.MaxInt32 {
		t.Errorf("SpringHelperSize(2^31-1, 1e-10) = %d, %v; want m = 2^31-1", m, err)
	}
	// p = 0 is Double.MIN_VALUE: -ln(4.9e-324) = 744.44..., / ln²2 = 1549.4.
	m, _, err = SpringHelperSize(1, 0)
	if err != nil || m != 1549 {
		t.Errorf("SpringHelperSize(1, 0) = %d, %v; want 1549", m, err)
	}
	for _, c := range []struct {
		n uint64
		p float64
	}{{0, 0.01}, {math.MaxInt32 + 1, 0.01}, {100, -0.1}, {100, 1}, {100, math.NaN()}, {1, 0.9}} {
		if _, _, err := SpringHelperSize(c.n, c.p); !errors.Is(err, ErrInvalid) {
			t.Errorf("SpringHelperSize(%d, %g): got %v, want ErrInvalid", c.n, c.p, err)
		}
	}
	p, err := SpringHelper(1_000_000, 0.01)
	if err != nil || p != (PlainParams{M: 9585058, K: 7, Scheme: bloom.Guava32, Order: SetBitOrder}) {
		t.Errorf("SpringHelper(1e6, 0.01) = %+v, %v", p, err)
	}
	if got := p.String(); got != "m=9585058 k=7 scheme=guava32 bit-order=setbit" {
		t.Errorf("String() = %q", got)
	}
}

// plainExpected returns the Redis string a plain filter of parameters p holds after adding keys:
// the bits of a bloom.NewExact filter, in p's bit order, cut to ceil(m/8) bytes.
func plainExpected(t *testing.T, p PlainParams, keys [][]byte) (*bloom.Filter, []byte) {
	t.Helper()
	local, err := bloom.NewExact(p.M, p.K, p.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		local.Add(k)
	}
	raw := make([]byte, (p.M+7)/8)
	local.ReadAt(raw, 0)
	if p.Order == SetBitOrder {
		for i, c := range raw {
			raw[i] = bits.Reverse8(c)
		}
	}
	return local, raw
}

// A plain filter's string holds exactly the bits of an exact in-process filter, in the bit order
// asked for, and answers every Add and Test as that filter does; its snapshot equals it. Only the
// one key exists.
func TestPlainMatchesCore(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		for _, p := range []PlainParams{
			{M: 9585058, K: 7, Scheme: bloom.Guava32, Order: SetBitOrder},
			{M: 1001, K: 5, Scheme: bloom.Guava32, Order: WordOrder},
			{M: 70001, K: 4, Scheme: bloom.Guava64, Order: SetBitOrder},
			{M: 333, K: 3, Scheme: bloom.RedisBloom64, Order: SetBitOrder},
			{M: 5000, K: 6, Scheme: bloom.Redisson, Order: WordOrder},
		} {
			key := uniqueName(t) + "{tag}" // braces are allowed: the key is the only one
			f, err := NewPlain(ctx, c, key, p, &Options{ScriptKeys: 37})
			if err != nil {
				t.Fatal(err)
			}
			in := keys("k", 700)
			local, want := plainExpected(t, p, in)
			fresh, _ := bloom.NewExact(p.M, p.K, p.Scheme)
			added, err := f.AddMany(ctx, in[:600])
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range in[:600] {
				if w := fresh.Add(k); added[i] != w {
					t.Fatalf("%s: AddMany reported %v for key %d, the in-process filter %v", p, added[i], i, w)
				}
			}
			for i, k := range in[600:] {
				got, err := f.Add(ctx, k)
				if w := fresh.Add(k); err != nil || got != w {
					t.Fatalf("%s: Add(key %d) = %v, %v; in-process %v", p, 600+i, got, err, w)
				}
			}
			raw, err := c.Get(ctx, key).Bytes()
			if err != nil || string(raw) != string(want) {
				t.Fatalf("%s: the string differs from the exact filter's bits in %s order (%d bytes, want %d)", p, p.Order, len(raw), len(want))
			}
			probe := keys("probe", 3000)
			got, err := f.TestMany(ctx, probe)
			if err != nil {
				t.Fatal(err)
			}
			fp := 0
			for i, k := range probe {
				if got[i] != local.Test(k) {
					t.Fatalf("%s: Test(%q) = %v, in-process %v", p, k, got[i], !got[i])
				}
				if got[i] {
					fp++
				}
			}
			if ok, err := f.Test(ctx, in[3]); err != nil || !ok {
				t.Fatalf("%s: Test of an added key = %v, %v", p, ok, err)
			}
			snap, err := f.Snapshot(ctx)
			if err != nil || !snap.Equal(local) || snap.M() != p.M {
				t.Fatalf("%s: Snapshot differs from the in-process filter (%v)", p, err)
			}
			if f.Params() != p || len(f.Keys()) != 1 || f.Keys()[0] != key {
				t.Errorf("%s: Params() = %v, Keys() = %v", p, f.Params(), f.Keys())
			}
			for _, other := range []string{key + ":meta", "{" + key + "}:meta", "{" + key + "}:config", "{" + key + "}:bits"} {
				if n, err := c.Exists(ctx, other).Result(); err != nil || n != 0 {
					t.Errorf("%s: %s exists beside the filter (%d, %v)", p, other, n, err)
				}
			}
			if err := f.Delete(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// NewPlain creates a missing key at its full length, and nothing else; OpenPlain refuses it;
// a string longer than m allows is refused by every call, which then writes nothing.
func TestPlainCreateAndRefuse(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		p := PlainParams{M: 1001, K: 5, Scheme: bloom.Guava32}
		key := uniqueName(t)
		if _, err := OpenPlain(ctx, c, key, p, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("OpenPlain of a missing key: %v, want ErrNotFound", err)
		}
		if n, _ := c.Exists(ctx, key).Result(); n != 0 {
			t.Fatal("OpenPlain created the key")
		}
		f, err := NewPlain(ctx, c, key, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err := c.Get(ctx, key).Bytes(); err != nil || len(raw) != 126 || strings.Trim(string(raw), "\x00") != "" {
			t.Fatalf("NewPlain made %d bytes (%v), want 126 zero bytes", len(raw), err)
		}
		if f.Params().Order != SetBitOrder {
			t.Errorf("zero Order is %v, want setbit", f.Params().Order)
		}
		if _, err := OpenPlain(ctx, c, key, p, nil); err != nil {
			t.Fatalf("OpenPlain of an existing key: %v", err)
		}
		if _, err := f.Add(ctx, []byte("a")); err != nil {
			t.Fatal(err)
		}
		// The Java side grows m: a bit beyond the handle's last byte.
		if err := c.SetBit(ctx, key, 1008, 1).Err(); err != nil {
			t.Fatal(err)
		}
		before, _ := c.Get(ctx, key).Result()
		for name, op := range map[string]func() error{
			"Add":     func() error { _, err := f.Add(ctx, []byte("b")); return err },
			"AddMany": func() error { _, err := f.AddMany(ctx, keys("x", 10)); return err },
			"Test":    func() error { _, err := f.Test(ctx, []byte("a")); return err },
			"NewPlain": func() error {
				_, err := NewPlain(ctx, c, key, p, nil)
				return err
			},
			"OpenPlain": func() error { _, err := OpenPlain(ctx, c, key, p, nil); return err },
			"Snapshot":  func() error { _, err := f.Snapshot(ctx); return err },
		} {
			err := op()
			if !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "127 bytes, more than the 126") {
				t.Errorf("%s on a 127-byte string with m=1001: %v, want ErrConfigMismatch naming both lengths", name, err)
			}
		}
		if after, _ := c.Get(ctx, key).Result(); after != before {
			t.Error("a refused call changed the string")
		}
		// A shorter string is accepted and extended by adds; another type is ErrWrongType.
		short := uniqueName(t)
		c.SetBit(ctx, short, 3, 1)
		g, err := NewPlain(ctx, c, short, p, nil)
		if err != nil {
			t.Fatalf("NewPlain over a 1-byte string: %v", err)
		}
		if raw, _ := c.Get(ctx, short).Bytes(); len(raw) != 1 {
			t.Errorf("NewPlain rewrote an existing string (now %d bytes)", len(raw))
		}
		if _, err := g.AddMany(ctx, keys("y", 100)); err != nil {
			t.Fatal(err)
		}
		hash := uniqueName(t)
		c.HSet(ctx, hash, "f", "x")
		if _, err := NewPlain(ctx, c, hash, p, nil); !errors.Is(err, ErrWrongType) {
			t.Errorf("NewPlain over a hash: %v, want ErrWrongType", err)
		}
		h, _ := newPlain(c, hash, p, nil)
		if _, err := h.Add(ctx, []byte("a")); !errors.Is(err, ErrWrongType) {
			t.Errorf("Add on a hash: %v, want ErrWrongType", err)
		}
		if typ, _ := c.Type(ctx, hash).Result(); typ != "hash" {
			t.Errorf("the hash became a %s", typ)
		}
	})
}

func TestPlainValidates(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		for _, p := range []PlainParams{
			{M: 0, K: 7, Scheme: bloom.Guava32},
			{M: MaxPartBits + 1, K: 7, Scheme: bloom.Guava32},
			{M: 100, K: 0, Scheme: bloom.Guava32},
			{M: 100, K: bloom.MaxK + 1, Scheme: bloom.Guava32},
			{M: 100, K: 7},
			{M: 100, K: 7, Scheme: bloom.Guava32, Order: 3},
		} {
			if _, err := NewPlain(ctx, c, "x", p, nil); !errors.Is(err, ErrInvalid) {
				t.Errorf("NewPlain(%+v): %v, want ErrInvalid", p, err)
			}
		}
		if _, err := NewPlain(ctx, c, "", PlainParams{M: 100, K: 7, Scheme: bloom.Guava32}, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("empty key: %v", err)
		}
		for _, name := range []string{"setbit", "word"} {
			if o, err := ParseBitOrder(name); err != nil || o.String() != name {
				t.Errorf("ParseBitOrder(%q) = %v, %v", name, o, err)
			}
		}
		if _, err := ParseBitOrder("lsb"); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseBitOrder(lsb): %v", err)
		}
	})
}

// Add and Test are one script call each; AddMany and TestMany one pipeline.
func TestPlainRoundTrips(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		mon := newMonitor(t, c)
		hook := &counter{}
		c.AddHook(hook)
		ctx := ctxT(t)
		p, _ := SpringHelper(10000, 0.01)
		f, err := NewPlain(ctx, c, uniqueName(t), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		batch := keys("batch", 1000)
		for _, tc := range []struct {
			what                      string
			single, pipelines, evalsh int
			op                        func() error
		}{
			{"Add", 1, 0, 1, func() error { _, err := f.Add(ctx, []byte("a")); return err }},
			{"Test", 1, 0, 1, func() error { _, err := f.Test(ctx, []byte("a")); return err }},
			{"AddMany", 0, 1, 4, func() error { _, err := f.AddMany(ctx, batch); return err }},
			{"TestMany", 0, 1, 4, func() error { _, err := f.TestMany(ctx, batch); return err }},
		} {
			sha0, _ := mon.calls(t)
			hook.reset()
			if err := tc.op(); err != nil {
				t.Fatal(err)
			}
			single, pipelines, _, names := hook.get()
			sha1, _ := mon.calls(t)
			if single != tc.single || pipelines != tc.pipelines || sha1-sha0 != tc.evalsh {
				t.Errorf("%s: %d single commands, %d pipelines (%v), %d EVALSHA; want %d, %d, %d",
					tc.what, single, pipelines, names, sha1-sha0, tc.single, tc.pipelines, tc.evalsh)
			}
		}
	})
}

// A handle whose modulus is not whole words, under a Guava scheme, snapshots to a filter with
// that same modulus, which answers every Test as the handle does: the native layout (a stored m
// that Guava's sizing would not give) and the Redisson layout hashing with a Guava scheme.
func TestSnapshotKeepsExactModulus(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		check := func(what string, f *Filter) {
			t.Helper()
			if f.M()%64 == 0 {
				t.Fatalf("%s: m=%d is whole words; the test needs another", what, f.M())
			}
			if _, err := f.AddMany(ctx, keys("in", 300)); err != nil {
				t.Fatal(err)
			}
			snap, err := f.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if snap.M() != f.M() || snap.K() != f.K() || snap.Scheme() != f.Scheme() {
				t.Fatalf("%s: snapshot m=%d k=%d %s, handle m=%d k=%d %s", what, snap.M(), snap.K(), snap.Scheme(), f.M(), f.K(), f.Scheme())
			}
			probe := append(keys("in", 300), keys("out", 5000)...)
			got, err := f.TestMany(ctx, probe)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range probe {
				if snap.Test(k) != got[i] {
					t.Fatalf("%s: snapshot answers %v for %q, the handle %v", what, !got[i], k, got[i])
				}
			}
		}
		for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32} {
			name := uniqueName(t)
			line := paramLine(field{"kind", "classic"}, field{"scheme", s.String()}, field{"m", "1000"}, field{"k", "5"},
				field{"n", "100"}, field{"p", "0.01"}, field{"parts", "1"})
			if err := c.HSet(ctx, "{"+name+"}:meta", "params", line).Err(); err != nil {
				t.Fatal(err)
			}
			f, err := Open(ctx, c, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			check("native "+s.String(), f)
			r, err := NewRedisson(ctx, c, uniqueName(t), 100, 0.01, &Options{Scheme: s})
			if err != nil {
				t.Fatal(err)
			}
			if r.Scheme() != s {
				t.Fatalf("NewRedisson with Options.Scheme %s hashes with %s", s, r.Scheme())
			}
			// Its bits are the exact filter's, in SETBIT order, as with Redisson's own hash.
			_, want := plainExpected(t, PlainParams{M: r.M(), K: r.K(), Scheme: s, Order: SetBitOrder}, keys("in", 300))
			check("redisson "+s.String(), r)
			if raw, _ := c.Get(ctx, r.Name()).Bytes(); string(raw) != string(want) {
				t.Errorf("redisson layout with %s: the bitmap is not the exact filter's bits in SETBIT order", s)
			}
			o, err := OpenRedisson(ctx, c, r.Name(), &Options{Scheme: s})
			if err != nil || o.Scheme() != s {
				t.Fatalf("OpenRedisson with Options.Scheme %s: %v, %v", s, o, err)
			}
			if d, _ := OpenRedisson(ctx, c, r.Name(), nil); d.Scheme() != bloom.Redisson {
				t.Errorf("OpenRedisson without a scheme hashes with %s", d.Scheme())
			}
		}
	})
}
