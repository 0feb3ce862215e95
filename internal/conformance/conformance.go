package conformance

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bloomd/bloom"
)

// Filter is the part of a filter the harness drives.
type Filter interface {
	Add(key []byte) bool
	Test(key []byte) bool
}

// Impl describes a filter type to the harness. New is required; every other hook is optional and
// its checks are skipped when it is nil.
type Impl struct {
	// New returns an empty filter sized to hold n keys at false-positive rate p.
	New func(n uint64, p float64) (Filter, error)

	// Marshal and Unmarshal encode and decode a filter. Checksummed says every changed or missing
	// byte must be refused with bloom.ErrCorrupt (false for formats without a checksum).
	Marshal     func(Filter) ([]byte, error)
	Unmarshal   func([]byte) (Filter, error)
	Checksummed bool

	// Union adds src's keys to dst; Intersect keeps dst's bits that src also has. Both must fail
	// with bloom.ErrIncompatible when the filters were built for different (n, p).
	Union     func(dst, src Filter) error
	Intersect func(dst, src Filter) error

	// MaxFPPFactor bounds the measured false-positive rate at capacity: it must not exceed
	// p·MaxFPPFactor plus four binomial standard deviations. Zero means 1.15: classic filters
	// sized by the standard formula land within a few percent of p, and the rest is sampling noise.
	MaxFPPFactor float64

	// Rates lists the (n, p) pairs the false-positive check runs; nil means DefaultRates.
	Rates []Rate
}

// Rate is a capacity and a target false-positive rate.
type Rate struct {
	N uint64
	P float64
}

// DefaultRates are the sizes every filter type is measured at.
var DefaultRates = []Rate{{20_000, 0.1}, {20_000, 0.01}, {20_000, 0.001}, {100_000, 0.01}}

// Keys returns n distinct pseudo-random keys of 4 to 40 bytes, the same for the same seed.
// Keys from different seeds are distinct from each other with overwhelming probability, and the
// first four bytes encode the seed so they are distinct for certain.
func Keys(seed uint64, n int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 4+rng.IntN(37))
		k[0], k[1], k[2], k[3] = byte(seed), byte(seed>>8), byte(i), byte(i>>8)
		for j := 4; j < len(k); j++ {
			k[j] = byte(rng.Uint32())
		}
		keys[i] = k
	}
	return keys
}

// Run runs every check that impl supports.
func Run(t *testing.T, impl Impl) {
	t.Run("NoFalseNegatives", func(t *testing.T) { noFalseNegatives(t, impl) })
	t.Run("FalsePositiveRate", func(t *testing.T) { falsePositiveRate(t, impl) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, impl) })
	if impl.Union != nil {
		t.Run("Union", func(t *testing.T) { union(t, impl) })
	}
	if impl.Intersect != nil {
		t.Run("Intersect", func(t *testing.T) { intersect(t, impl) })
	}
	if impl.Marshal != nil && impl.Unmarshal != nil {
		t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, impl) })
		if impl.Checksummed {
			t.Run("Corruption", func(t *testing.T) { corruption(t, impl) })
		}
	}
}

func mustNew(t *testing.T, impl Impl, n uint64, p float64) Filter {
	t.Helper()
	f, err := impl.New(n, p)
	if err != nil {
		t.Fatalf("New(%d, %g): %v", n, p, err)
	}
	return f
}

// noFalseNegatives also checks Add's answer: without concurrency, Add(x) reports "new" exactly
// when Test(x) was false just before.
func noFalseNegatives(t *testing.T, impl Impl) {
	for _, r := range []Rate{{1, 0.01}, {1000, 0.01}, {10_000, 0.001}} {
		f := mustNew(t, impl, r.N, r.P)
		keys := Keys(1, int(2*r.N)) // twice the capacity: scalable types grow, others saturate
		for i, k := range keys {
			before := f.Test(k)
			if added := f.Add(k); added == before {
				t.Fatalf("n=%d p=%g: key %d: Test before Add = %v, Add = %v (want Add == !Test)", r.N, r.P, i, before, added)
			}
			if !f.Test(k) {
				t.Fatalf("n=%d p=%g: key %d tests absent right after Add", r.N, r.P, i)
			}
			if f.Add(k) {
				t.Fatalf("n=%d p=%g: key %d: second Add reported the key as new", r.N, r.P, i)
			}
		}
		for i, k := range keys {
			if !f.Test(k) {
				t.Fatalf("n=%d p=%g: false negative for key %d of %d", r.N, r.P, i, len(keys))
			}
		}
	}
}

// FPP fills a filter made by impl for (n, p) with n keys and returns the fraction of trials
// never-added keys that test present.
func FPP(t testing.TB, impl Impl, n uint64, p float64, trials int) float64 {
	f, err := impl.New(n, p)
	if err != nil {
		t.Fatalf("New(%d, %g): %v", n, p, err)
	}
	for _, k := range Keys(2, int(n)) {
		f.Add(k)
	}
	fp := 0
	for _, k := range Keys(3, trials) {
		if f.Test(k) {
			fp++
		}
	}
	return float64(fp) / float64(trials)
}

func falsePositiveRate(t *testing.T, impl Impl) {
	factor := impl.MaxFPPFactor
	if factor == 0 {
		factor = 1.15
	}
	rates := impl.Rates
	if rates == nil {
		rates = DefaultRates
	}
	for _, r := range rates {
		trials := int(min(2_000_000, max(200_000, 400/r.P)))
		got := FPP(t, impl, r.N, r.P, trials)
		sigma := math.Sqrt(r.P * (1 - r.P) / float64(trials))
		limit := r.P*factor + 4*sigma
		t.Logf("n=%d p=%g: measured FPP %.5f over %d absent keys (limit %.5f)", r.N, r.P, got, trials, limit)
		if got > limit {
			t.Errorf("n=%d p=%g: measured FPP %.5f exceeds %.5f", r.N, r.P, got, limit)
		}
	}
}

func concurrent(t *testing.T, impl Impl) {
	const writers, perWriter = 4, 5000
	f := mustNew(t, impl, writers*perWriter, 0.01)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			keys := Keys(uint64(100+w), perWriter)
			for _, k := range keys {
				f.Add(k)
				if !f.Test(k) {
					t.Errorf("writer %d: key tests absent right after Add", w)
					return
				}
			}
		})
		wg.Go(func() { // a reader racing the writers
			for _, k := range Keys(uint64(100+w), perWriter) {
				f.Test(k)
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for i, k := range Keys(uint64(100+w), perWriter) {
			if !f.Test(k) {
				t.Fatalf("writer %d key %d lost after concurrent adds", w, i)
			}
		}
	}
	sameKeys(t, impl)
}

// sameKeys has several goroutines add the same keys at once, each in its own order. Some adder
// must report each key as new, unless the key already tested present before any of them reached
// it (a false positive of the keys added before it): such keys are about p times the keys at
// most, so more than 2p of them means Add answered "not new" for a key it was adding.
func sameKeys(t *testing.T, impl Impl) {
	const writers, n = 4, 20_000
	const p = 0.01
	f := mustNew(t, impl, n, p)
	keys := Keys(200, n)
	reported := make([]atomic.Bool, n)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for j := range n {
				i := j
				if w%2 == 1 { // half the writers go backwards, so they meet the others midway
					i = n - 1 - j
				}
				if f.Add(keys[i]) {
					reported[i].Store(true)
				}
			}
		})
	}
	wg.Wait()
	missed := 0
	for i := range reported {
		if !reported[i].Load() {
			missed++
		}
	}
	t.Logf("%d of %d keys added at once by %d goroutines were reported new by none", missed, n, writers)
	if missed > 2*p*n {
		t.Errorf("%d of %d keys added by %d goroutines at once were reported new by none of them (want at most %d)", missed, n, writers, int(2*p*n))
	}
}

func filled(t *testing.T, impl Impl, n uint64, p float64, keys [][]byte) Filter {
	f := mustNew(t, impl, n, p)
	for _, k := range keys {
		f.Add(k)
	}
	return f
}

func union(t *testing.T, impl Impl) {
	a, b := Keys(10, 3000), Keys(11, 3000)
	fa, fb := filled(t, impl, 10_000, 0.01, a), filled(t, impl, 10_000, 0.01, b)
	if err := impl.Union(fa, fb); err != nil {
		t.Fatalf("Union: %v", err)
	}
	for _, keys := range [][][]byte{a, b} {
		for i, k := range keys {
			if !fa.Test(k) {
				t.Fatalf("union lost key %d", i)
			}
		}
	}
	// The union equals the filter built from all keys, and is commutative and idempotent.
	if impl.Marshal != nil {
		all := filled(t, impl, 10_000, 0.01, append(append([][]byte{}, a...), b...))
		fb2, fa2 := filled(t, impl, 10_000, 0.01, b), filled(t, impl, 10_000, 0.01, a)
		if err := impl.Union(fb2, fa2); err != nil {
			t.Fatalf("Union: %v", err)
		}
		want := encode(t, impl, all)
		if !bytes.Equal(encode(t, impl, fa), want) && !sameAnswers(fa, all, Keys(12, 20_000)) {
			t.Errorf("a ∪ b answers differently from a filter built from a and b")
		}
		if !sameAnswers(fa, fb2, Keys(12, 20_000)) {
			t.Errorf("a ∪ b and b ∪ a answer differently")
		}
		before := encode(t, impl, fa)
		if err := impl.Union(fa, fb); err != nil {
			t.Fatalf("Union: %v", err)
		}
		if !bytes.Equal(before, encode(t, impl, fa)) && !sameAnswers(fa, all, Keys(12, 20_000)) {
			t.Errorf("union is not idempotent")
		}
	}
	other := mustNew(t, impl, 50_000, 0.001)
	if err := impl.Union(fa, other); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("Union of filters sized differently: got %v, want ErrIncompatible", err)
	}
}

func intersect(t *testing.T, impl Impl) {
	a, b, both := Keys(20, 2000), Keys(21, 2000), Keys(22, 1000)
	fa := filled(t, impl, 10_000, 0.01, append(append([][]byte{}, a...), both...))
	fb := filled(t, impl, 10_000, 0.01, append(append([][]byte{}, b...), both...))
	ref := filled(t, impl, 10_000, 0.01, append(append([][]byte{}, a...), both...))
	if err := impl.Intersect(fa, fb); err != nil {
		t.Fatalf("Intersect: %v", err)
	}
	for i, k := range both {
		if !fa.Test(k) {
			t.Fatalf("intersection lost key %d present in both", i)
		}
	}
	// Every key the intersection reports present is reported present by both inputs.
	for _, k := range Keys(23, 20_000) {
		if fa.Test(k) && !(ref.Test(k) && fb.Test(k)) {
			t.Fatalf("intersection reports a key neither input holds")
		}
	}
	onlyA := 0
	for _, k := range a {
		if fa.Test(k) {
			onlyA++
		}
	}
	if onlyA > len(a)/2 {
		t.Errorf("intersection still reports %d of %d keys only in the first filter", onlyA, len(a))
	}
	other := mustNew(t, impl, 50_000, 0.001)
	if err := impl.Intersect(fa, other); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("Intersect of filters sized differently: got %v, want ErrIncompatible", err)
	}
}

func encode(t *testing.T, impl Impl, f Filter) []byte {
	t.Helper()
	b, err := impl.Marshal(f)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return b
}

func sameAnswers(f, g Filter, keys [][]byte) bool {
	for _, k := range keys {
		if f.Test(k) != g.Test(k) {
			return false
		}
	}
	return true
}

func roundTrip(t *testing.T, impl Impl) {
	for _, r := range []Rate{{1, 0.5}, {1000, 0.01}, {5000, 0.0001}} {
		keys := Keys(30, int(r.N))
		f := filled(t, impl, r.N, r.P, keys)
		b := encode(t, impl, f)
		g, err := impl.Unmarshal(b)
		if err != nil {
			t.Fatalf("n=%d p=%g: Unmarshal of Marshal: %v", r.N, r.P, err)
		}
		for i, k := range keys {
			if !g.Test(k) {
				t.Fatalf("n=%d p=%g: decoded filter lost key %d", r.N, r.P, i)
			}
		}
		if !sameAnswers(f, g, Keys(31, 20_000)) {
			t.Fatalf("n=%d p=%g: decoded filter answers differently", r.N, r.P)
		}
		if b2 := encode(t, impl, g); !bytes.Equal(b, b2) {
			t.Fatalf("n=%d p=%g: re-encoding the decoded filter changed the bytes", r.N, r.P)
		}
	}
}

// corruption flips bytes and truncates an encoding at many places; every damaged input must be
// refused with ErrCorrupt, never accepted and never a panic.
func corruption(t *testing.T, impl Impl) {
	f := filled(t, impl, 500, 0.01, Keys(40, 500))
	good := encode(t, impl, f)
	positions := []int{}
	for i := 0; i < len(good); i += max(1, len(good)/200) {
		positions = append(positions, i)
	}
	positions = append(positions, len(good)-1)
	for _, i := range positions {
		bad := bytes.Clone(good)
		bad[i] ^= 0x5a
		if _, err := impl.Unmarshal(bad); !errors.Is(err, bloom.ErrCorrupt) {
			t.Fatalf("byte %d of %d changed: got %v, want ErrCorrupt", i, len(good), err)
		}
		if _, err := impl.Unmarshal(good[:i]); !errors.Is(err, bloom.ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: got %v, want ErrCorrupt", i, len(good), err)
		}
	}
	if _, err := impl.Unmarshal(append(bytes.Clone(good), 0)); err == nil {
		t.Fatalf("a trailing byte after the filter was accepted")
	}
}
