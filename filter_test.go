package bloom_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

var classic = conformance.Impl{
	New: func(n uint64, p float64) (conformance.Filter, error) { return bloom.New(n, p) },
	Marshal: func(f conformance.Filter) ([]byte, error) {
		return f.(*bloom.Filter).MarshalBinary()
	},
	Unmarshal: func(b []byte) (conformance.Filter, error) {
		var f bloom.Filter
		return &f, f.UnmarshalBinary(b)
	},
	Checksummed: true,
	Union:       func(dst, src conformance.Filter) error { return dst.(*bloom.Filter).Union(src.(*bloom.Filter)) },
	Intersect: func(dst, src conformance.Filter) error {
		return dst.(*bloom.Filter).Intersect(src.(*bloom.Filter))
	},
}

func TestConformance(t *testing.T) { conformance.Run(t, classic) }

// Every scheme must satisfy the same laws; only the positions differ.
func TestConformanceSchemes(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		t.Run(s.String(), func(t *testing.T) {
			impl := classic
			impl.New = func(n uint64, p float64) (conformance.Filter, error) {
				m, k, err := bloom.GuavaSize(n, p)
				if err != nil {
					return nil, err
				}
				return bloom.NewWithParams(m, k, s)
			}
			impl.Rates = []conformance.Rate{{N: 20_000, P: 0.01}}
			conformance.Run(t, impl)
		})
	}
}

// Scheme.Location must give what the filter uses internally; the filter reduces with a
// multiplication instead of a division, so this pins the two against each other.
func TestLocationsMatchFilter(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		for _, m := range []uint64{1, 7, 64, 729, 9600, 1<<20 + 64, 958505856} {
			f, err := bloom.NewWithParams(m, 5, s)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range conformance.Keys(7, 200) {
				f.Add(key)
				for _, b := range s.Locations(nil, key, 5, f.M()) {
					if b >= f.M() {
						t.Fatalf("%s m=%d: location %d out of range", s, f.M(), b)
					}
					var buf [1]byte
					f.ReadAt(buf[:], int64(b>>3))
					if buf[0]&(1<<(b&7)) == 0 {
						t.Fatalf("%s m=%d: bit %d from Locations is not set by Add", s, f.M(), b)
					}
				}
				if i == 0 && f.BitCount() > 5 {
					t.Fatalf("%s m=%d: Add set %d bits, more than k", s, f.M(), f.BitCount())
				}
			}
		}
	}
}

func TestGuavaSize(t *testing.T) {
	// Values from Guava 31.1 (BloomFilter.optimalNumOfBits and optimalNumOfHashFunctions; bitSize
	// is rounded to whole longs), as listed in the project's Guava reference notes.
	for _, c := range []struct {
		n uint64
		p float64
		m uint64
		k int
	}{
		{1000, 0.01, 9600, 7},
		{100_000_000, 0.01, 958505856, 7},
		{10, 0.1, 64, 3},
		{0, 0.03, 64, 5}, // n = 0 is taken as 1
		{10_000, 0.001, 143808, 10},
		{1, 0.01, 64, 6},
	} {
		m, k, err := bloom.GuavaSize(c.n, c.p)
		if err != nil || m != c.m || k != c.k {
			t.Errorf("GuavaSize(%d, %g) = %d, %d, %v; want %d, %d", c.n, c.p, m, k, err, c.m, c.k)
		}
	}
	for _, c := range []struct {
		n    uint64
		p    float64
		want error
	}{
		{1, 0.7, bloom.ErrInvalidParameter},    // 0 bits: Guava throws "data length is zero!"
		{1, 1e-100, bloom.ErrInvalidParameter}, // k = 332 > 255
		{100, 0, bloom.ErrInvalidParameter},    // p out of range
		{100, 1, bloom.ErrInvalidParameter},    //
		{100, math.NaN(), bloom.ErrInvalidParameter},
		{1e18, 0.001, bloom.ErrTooLarge},
	} {
		if _, _, err := bloom.GuavaSize(c.n, c.p); !errors.Is(err, c.want) {
			t.Errorf("GuavaSize(%d, %g): err = %v, want %v", c.n, c.p, err, c.want)
		}
	}
}

func TestRedisBloomSize(t *testing.T) {
	// Sub-filter sizes observed with BF.DEBUG on RedisBloom 2.6.28 (the link error rate is already
	// tightened: a scaling filter created at 0.01 starts at 0.005).
	for _, c := range []struct {
		capacity uint64
		p        float64
		bytes    uint64
		k        int
	}{
		{100, 0.005, 144, 8},
		{100, 0.01, 120, 7},
		{10, 0.05, 8, 5},
		{1000, 0.0005, 1984, 11},
		{2000, 0.00025, 4320, 12},
		{4000, 0.000125, 9360, 13},
		{20_000_000, 0.005, 27_569_384, 8},
		{30, 0.025, 32, 6},
	} {
		m, k, _, err := bloom.RedisBloomSize(c.capacity, c.p)
		if err != nil || m != c.bytes*8 || k != c.k {
			t.Errorf("RedisBloomSize(%d, %g) = %d bits, k=%d, %v; want %d bits, k=%d", c.capacity, c.p, m, k, err, c.bytes*8, c.k)
		}
	}
}

func TestFalsePositiveRateAndCapacity(t *testing.T) {
	m, k, _ := bloom.GuavaSize(1_000_000, 0.01)
	if got := bloom.FalsePositiveRate(m, k, 1_000_000); math.Abs(got-0.01) > 0.0005 {
		t.Errorf("FalsePositiveRate at capacity = %g, want about 0.01", got)
	}
	c := bloom.Capacity(m, k, 0.01)
	if bloom.FalsePositiveRate(m, k, c) > 0.01 || bloom.FalsePositiveRate(m, k, c+1) <= 0.01 {
		t.Errorf("Capacity = %d is not the largest n with rate <= 0.01", c)
	}
	if c < 990_000 || c > 1_010_000 {
		t.Errorf("Capacity of a filter sized for 1e6 at 1%% = %d", c)
	}
	if bloom.FalsePositiveRate(m, k, 0) != 0 {
		t.Errorf("an empty filter has false positives")
	}
}

func TestAddTestAllocateNothing(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		f, _ := bloom.NewWithParams(1<<20, 7, s)
		key := []byte("some key of moderate length")
		for name, fn := range map[string]func(){
			"Add":        func() { f.Add(key) },
			"Test":       func() { f.Test(key) },
			"AddString":  func() { f.AddString("a string key") },
			"TestString": func() { f.TestString("a string key") },
			"AddUint64":  func() { f.AddUint64(42) },
			"TestInt64":  func() { f.TestInt64(-42) },
			"AddInt32":   func() { f.AddInt32(-50) },
			"TestInt32":  func() { f.TestInt32(7) },
		} {
			if a := testing.AllocsPerRun(100, fn); a != 0 {
				t.Errorf("%s %s allocates %.1f times per call", s, name, a)
			}
		}
	}
}

// The typed helpers must feed exactly Guava's funnel bytes.
func TestTypedKeysEncodeLikeGuava(t *testing.T) {
	f, _ := bloom.New(1000, 0.01)
	f.AddInt32(-50)
	if !f.Test([]byte{0xce, 0xff, 0xff, 0xff}) {
		t.Error("AddInt32(-50) did not add the bytes ce ff ff ff")
	}
	f.AddInt64(math.MinInt64)
	if !f.Test([]byte{0, 0, 0, 0, 0, 0, 0, 0x80}) {
		t.Error("AddInt64(MinInt64) did not add 8 little-endian bytes")
	}
	f.AddString("héllo")
	if !f.Test([]byte("h\xc3\xa9llo")) {
		t.Error("AddString did not add the UTF-8 bytes")
	}
}

func TestApproximateCountSaturated(t *testing.T) {
	f, _ := bloom.NewWithParams(64, 3, bloom.Guava64)
	for i := range 10_000 {
		f.AddUint64(uint64(i))
	}
	if f.BitCount() != 64 {
		t.Fatalf("expected a saturated filter, %d bits set", f.BitCount())
	}
	n := f.ApproximateCount()
	if n < 64 || n > 1000 {
		t.Errorf("ApproximateCount of a saturated 64-bit filter = %d, want a finite bound near m·ln(2m)/k", n)
	}
	if f.EstimatedFPP() != 1 {
		t.Errorf("EstimatedFPP of a saturated filter = %g, want 1", f.EstimatedFPP())
	}
}

func TestStatistics(t *testing.T) {
	f, _ := bloom.New(10_000, 0.01)
	if f.ApproximateCount() != 0 || f.EstimatedFPP() != 0 || f.FillRatio() != 0 {
		t.Fatal("empty filter has nonzero statistics")
	}
	for _, k := range conformance.Keys(50, 10_000) {
		f.Add(k)
	}
	if n := f.ApproximateCount(); n < 9_700 || n > 10_300 {
		t.Errorf("ApproximateCount after 10000 keys = %d", n)
	}
	if r := f.FillRatio(); r < 0.45 || r > 0.55 {
		t.Errorf("FillRatio at capacity = %g, want about one half", r)
	}
	if p := f.EstimatedFPP(); p < 0.007 || p > 0.013 {
		t.Errorf("EstimatedFPP at capacity = %g, want about 0.01", p)
	}
	c := f.Clone()
	f.Reset()
	if f.BitCount() != 0 || c.BitCount() == 0 {
		t.Error("Reset cleared the clone too, or did not clear the filter")
	}
}

func TestNewRefusesAbsurdSizes(t *testing.T) {
	for _, c := range []struct {
		m uint64
		k int
		s bloom.Scheme
	}{{0, 3, bloom.Guava64}, {64, 0, bloom.Guava64}, {64, bloom.MaxK + 1, bloom.Guava64}, {64, 3, 0}, {64, 3, 99}} {
		if _, err := bloom.NewWithParams(c.m, c.k, c.s); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewWithParams(%d, %d, %d): err = %v, want ErrInvalidParameter", c.m, c.k, c.s, err)
		}
	}
	// 1e15 items at 1% is about 1.2 PB: refused before allocation, not a fatal out-of-memory.
	if _, err := bloom.New(1e15, 0.01); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("New(1e15, 0.01): err = %v, want ErrTooLarge", err)
	}
}

// A filter of more than 2^32 bits must address its upper part: Guava's legacy strategy and several
// Go libraries truncate positions to 32 bits there.
func TestLargerThan2To32Bits(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 520 MB")
	}
	const m = 1<<32 + 1<<26 // 4.36e9 bits, 520 MB
	f, err := bloom.NewWithParams(m, 3, bloom.Guava64)
	if err != nil {
		t.Fatal(err)
	}
	keys := conformance.Keys(60, 20_000)
	for _, k := range keys {
		f.Add(k)
	}
	high := 0
	var highKey []byte
	var highBit uint64
	for _, k := range keys {
		if !f.Test(k) {
			t.Fatal("false negative in a filter of more than 2^32 bits")
		}
		for _, b := range bloom.Guava64.Locations(nil, k, 3, m) {
			if b < 1<<32 {
				continue
			}
			high++
			// The filter itself must have set the bit there, not one truncated to 32 bits.
			var w [1]byte
			if _, err := f.ReadAt(w[:], int64(b>>3)); err != nil || w[0]&(1<<(b&7)) == 0 {
				t.Fatalf("bit %d (above 2^32) of an added key is not set in the array (%v)", b, err)
			}
			highKey, highBit = k, b
		}
	}
	// Positions are uniform in [0, m): about 1.5% of them land above 2^32.
	if want := 60_000 * (m - 1<<32) / m; high < int(want)/2 {
		t.Errorf("%d of 60000 positions above 2^32, want about %d", high, want)
	}
	// Test must read the bit above 2^32 too: with it cleared, its key tests absent.
	var w [1]byte
	f.ReadAt(w[:], int64(highBit>>3))
	w[0] &^= 1 << (highBit & 7)
	if _, err := f.WriteAt(w[:], int64(highBit>>3)); err != nil {
		t.Fatal(err)
	}
	if f.Test(highKey) {
		t.Errorf("Test ignores bit %d above 2^32: the key still tests present with it cleared", highBit)
	}
	var buf [8]byte
	if _, err := f.ReadAt(buf[:], (m-64)/8); err != nil {
		t.Fatalf("ReadAt the last word: %v", err)
	}
	if got := f.ApproximateCount(); got < 19_500 || got > 20_500 {
		t.Errorf("ApproximateCount = %d, want about 20000", got)
	}
}

func TestReadAtWriteAt(t *testing.T) {
	f, _ := bloom.NewWithParams(256, 3, bloom.RedisBloom64)
	src := make([]byte, 32)
	for i := range src {
		src[i] = byte(i*37 + 1)
	}
	// Unaligned pieces, in a scrambled order, must rebuild the same bytes.
	for _, piece := range [][2]int{{5, 19}, {0, 5}, {19, 32}} {
		if _, err := f.WriteAt(src[piece[0]:piece[1]], int64(piece[0])); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 32)
	if n, err := f.ReadAt(got, 0); n != 32 || err != nil {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if string(got) != string(src) {
		t.Fatalf("bytes read back differ:\n%x\n%x", got, src)
	}
	if _, err := f.WriteAt(src, 1); err == nil {
		t.Error("WriteAt past the end succeeded")
	}
	if n, err := f.ReadAt(got, 10); n != 22 || err == nil {
		t.Errorf("ReadAt across the end = %d, %v; want 22, io.EOF", n, err)
	}
}

// TestReadAtEveryRange reads every range of a small filter's bytes, aligned to words or not,
// inside the array or across its end, and compares with the bytes written.
func TestReadAtEveryRange(t *testing.T) {
	f, _ := bloom.NewWithParams(320, 3, bloom.RedisBloom64) // 40 bytes: five words
	src := make([]byte, 40)
	for i := range src {
		src[i] = byte(i*53 + 7)
	}
	if _, err := f.WriteAt(src, 0); err != nil {
		t.Fatal(err)
	}
	for off := 0; off <= 41; off++ {
		for n := 0; n <= 42-off; n++ {
			got := make([]byte, n)
			k, err := f.ReadAt(got, int64(off))
			want := src[min(off, 40):min(off+n, 40)]
			if k != len(want) || string(got[:k]) != string(want) {
				t.Fatalf("ReadAt(%d bytes, %d) = %d bytes %x; want %x", n, off, k, got[:k], want)
			}
			if (err == nil) != (off+n <= 40 && off < 40) {
				t.Fatalf("ReadAt(%d bytes, %d): error %v", n, off, err)
			}
		}
	}
}

func TestConcurrentUnionAndAdd(t *testing.T) {
	a, _ := bloom.New(10_000, 0.01)
	b, _ := bloom.New(10_000, 0.01)
	keys := conformance.Keys(70, 5000)
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, k := range keys {
			a.Add(k)
		}
	})
	wg.Go(func() {
		for range 20 {
			if err := b.Union(a); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if err := b.Union(a); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if !b.Test(k) {
			t.Fatalf("key %d missing after union", i)
		}
	}
}

func TestParseScheme(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		if got, err := bloom.ParseScheme(s.String()); got != s || err != nil {
			t.Errorf("ParseScheme(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := bloom.ParseScheme("md5"); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("ParseScheme(md5): %v", err)
	}
	if fmt.Sprint(bloom.Scheme(9)) != "scheme(9)" {
		t.Error("unknown scheme has no printable name")
	}
}
