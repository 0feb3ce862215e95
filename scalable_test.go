package bloom_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

func scalableImpl(opts *bloom.ScalableOptions) conformance.Impl {
	return conformance.Impl{
		New: func(n uint64, p float64) (conformance.Filter, error) { return bloom.NewScalable(n, p, opts) },
		Marshal: func(f conformance.Filter) ([]byte, error) {
			return f.(*bloom.Scalable).MarshalBinary()
		},
		Unmarshal: func(b []byte) (conformance.Filter, error) {
			var f bloom.Scalable
			return &f, f.UnmarshalBinary(b)
		},
		Checksummed: true,
		Union: func(dst, src conformance.Filter) error {
			return dst.(*bloom.Scalable).Union(src.(*bloom.Scalable))
		},
	}
}

func TestScalableConformance(t *testing.T) {
	t.Run("classic", func(t *testing.T) { conformance.Run(t, scalableImpl(nil)) })
	t.Run("blocked", func(t *testing.T) { conformance.Run(t, scalableImpl(&bloom.ScalableOptions{Blocked: true})) })
}

// The compound false-positive rate stays below p however far the chain grows: 100 times the
// initial capacity here.
func TestScalableCompoundFPP(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  *bloom.ScalableOptions
		n     uint64
		times int
	}{
		{"classic", nil, 1000, 100},
		{"blocked", &bloom.ScalableOptions{Blocked: true}, 1000, 100},
		{"growth 4 r 0.8", &bloom.ScalableOptions{Growth: 4, Tightening: 0.8}, 1000, 100},
		{"growth 1", &bloom.ScalableOptions{Growth: 1}, 2000, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			const p = 0.01
			s, err := bloom.NewScalable(c.n, p, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			keys := conformance.Keys(7, int(c.n)*c.times)
			added := 0
			for _, k := range keys {
				if s.Add(k) {
					added++
				}
			}
			if s.Count() != uint64(added) {
				t.Errorf("Count = %d, Add reported %d new keys", s.Count(), added)
			}
			// Keys that a link reported present (false positives) were not added: at most p of them.
			if skipped := len(keys) - added; float64(skipped) > p*float64(len(keys)) {
				t.Errorf("%d of %d distinct keys were skipped as present", skipped, len(keys))
			}
			for i, k := range keys {
				if !s.Test(k) {
					t.Fatalf("false negative for key %d", i)
				}
			}
			// The rate given the bits now, computed exactly from the links' fill (no sampling
			// noise), must be below p; so must the rate measured on absent keys, up to 3σ.
			const trials = 200_000
			fp := 0
			for _, found := range s.TestMany(nil, conformance.Keys(8, trials)) {
				if found {
					fp++
				}
			}
			got, est := float64(fp)/trials, s.EstimatedFPP()
			t.Logf("%d keys (%d× initial capacity), %d links, %.2f bits/key: measured FPP %.5f, estimated %.5f",
				len(keys), c.times, s.Links(), float64(s.ByteLen()*8)/float64(len(keys)), got, est)
			if est > p {
				t.Errorf("compound FPP given the bits %.5f exceeds p = %g", est, p)
			}
			if sigma := math.Sqrt(p * (1 - p) / trials); got > p+3*sigma {
				t.Errorf("measured compound FPP %.5f exceeds p = %g by more than 3σ", got, p)
			}
		})
	}
}

// Add does not add a key some link already reports present: after growth, keys of the first link
// are not added again, and the newest link's bits do not change.
func TestScalableAddSkipsPresentKeys(t *testing.T) {
	s, _ := bloom.NewScalable(100, 0.01, nil)
	first := conformance.Keys(1, 100)
	for _, k := range first {
		s.Add(k)
	}
	s.Add([]byte("one more")) // the first link is full: this creates the second
	if s.Links() != 2 {
		t.Fatalf("%d links after capacity+1 keys, want 2", s.Links())
	}
	before, count := mustMarshal(t, s), s.Count()
	for i, k := range first {
		if s.Add(k) {
			t.Fatalf("key %d of the first link was added again", i)
		}
	}
	if !bytes.Equal(before, mustMarshal(t, s)) || s.Count() != count {
		t.Error("re-adding present keys changed the filter")
	}
	if s.Capacity() != 300 {
		t.Errorf("Capacity = %d, want 100 + 200", s.Capacity())
	}
}

func TestScalableOptions(t *testing.T) {
	for _, o := range []*bloom.ScalableOptions{
		{Growth: -1}, {Growth: 1 << 20}, {Tightening: 1}, {Tightening: -0.5}, {Tightening: 1.5},
	} {
		if _, err := bloom.NewScalable(100, 0.01, o); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewScalable with %+v: %v, want ErrInvalidParameter", *o, err)
		}
	}
	for _, p := range []float64{0, 1, -1} {
		if _, err := bloom.NewScalable(100, p, nil); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewScalable(100, %g): %v", p, err)
		}
	}
	if _, err := bloom.NewScalable(1e16, 0.01, nil); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("NewScalable(1e16, 0.01): %v", err)
	}
	// n = 0 is taken as 1; the chain grows from there.
	s, err := bloom.NewScalable(0, 0.01, &bloom.ScalableOptions{Blocked: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		s.AddString(fmt.Sprint(i))
	}
	if s.Links() < 9 || s.Err() != nil {
		t.Errorf("%d links (err %v) after 1000 keys from capacity 1", s.Links(), s.Err())
	}
	info := s.Info()
	if info.Kind != "scalable" || info.Links != s.Links() || info.Sectors == 0 || info.Count != s.Count() {
		t.Errorf("Info = %+v", info)
	}
}

func TestScalableUnion(t *testing.T) {
	a, _ := bloom.NewScalable(100, 0.01, nil)
	b, _ := bloom.NewScalable(100, 0.01, nil)
	ka, kb := conformance.Keys(1, 50), conformance.Keys(2, 1000) // b grows to 4 links, a has 1
	for _, k := range ka {
		a.Add(k)
	}
	for _, k := range kb {
		b.Add(k)
	}
	if err := a.Union(b); err != nil {
		t.Fatal(err)
	}
	if a.Links() != b.Links() {
		t.Errorf("union has %d links, want %d", a.Links(), b.Links())
	}
	for _, keys := range [][][]byte{ka, kb} {
		for i, k := range keys {
			if !a.Test(k) {
				t.Fatalf("union lost key %d", i)
			}
		}
	}
	if c := a.Count(); c < 1000 || c > 1050 {
		t.Errorf("union count %d, want between 1000 and 1050", c)
	}
	// The union is independent of b afterwards.
	b.AddString("only in b")
	if a.TestString("only in b") && !b.TestString("only in b") {
		t.Error("union shares links with its source")
	}
	for _, o := range []*bloom.ScalableOptions{{Growth: 3}, {Tightening: 0.7}, {Blocked: true}} {
		c, _ := bloom.NewScalable(100, 0.01, o)
		if err := a.Union(c); !errors.Is(err, bloom.ErrIncompatible) {
			t.Errorf("union with %+v: %v, want ErrIncompatible", *o, err)
		}
	}
}

// Concurrent Adds while the chain grows lose nothing.
func TestScalableConcurrentGrowth(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		s, _ := bloom.NewScalable(50, 0.01, &bloom.ScalableOptions{Blocked: blocked})
		const workers, per = 4, 3000
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for _, k := range conformance.Keys(uint64(40+w), per) {
					s.Add(k)
					if !s.Test(k) {
						t.Errorf("key absent right after Add")
						return
					}
				}
			})
			wg.Go(func() {
				for _, k := range conformance.Keys(uint64(40+w), per) {
					s.Test(k)
				}
			})
		}
		wg.Wait()
		for w := range workers {
			for i, k := range conformance.Keys(uint64(40+w), per) {
				if !s.Test(k) {
					t.Fatalf("blocked=%v: worker %d key %d lost", blocked, w, i)
				}
			}
		}
		if c := s.Count(); c > workers*per || c < workers*per*97/100 {
			t.Errorf("Count = %d for %d distinct keys", c, workers*per)
		}
	}
}

// A chain of several links survives a round trip, and every damaged byte is refused.
func TestScalableEncoding(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		s, _ := bloom.NewScalable(20, 0.01, &bloom.ScalableOptions{Blocked: blocked, Growth: 3, Tightening: 0.6})
		keys := conformance.Keys(9, 500)
		for _, k := range keys {
			s.Add(k)
		}
		good := mustMarshal(t, s)
		var g bloom.Scalable
		if err := g.UnmarshalBinary(good); err != nil {
			t.Fatal(err)
		}
		if g.Links() != s.Links() || g.Count() != s.Count() || g.Capacity() != s.Capacity() || !bytes.Equal(mustMarshal(t, &g), good) {
			t.Fatalf("round trip changed the chain")
		}
		g.AddString("growing after decode")
		for i := 0; i < len(good); i += 7 {
			bad := bytes.Clone(good)
			bad[i] ^= 0x21
			if err := g.UnmarshalBinary(bad); !errors.Is(err, bloom.ErrCorrupt) {
				t.Fatalf("blocked=%v: byte %d of %d changed: %v", blocked, i, len(good), err)
			}
			if err := g.UnmarshalBinary(good[:i]); !errors.Is(err, bloom.ErrCorrupt) {
				t.Fatalf("blocked=%v: truncated to %d: %v", blocked, i, err)
			}
		}
	}
}

func TestScalableDecodeRefuses(t *testing.T) {
	s, _ := bloom.NewScalable(10, 0.01, nil)
	s.AddString("x")
	good := mustMarshal(t, s)
	hdr := good[:64]
	params := func(engine byte, growth uint32, n uint64, links uint32) []byte {
		p := make([]byte, 20)
		p[0] = engine
		p[4], p[5], p[6], p[7] = byte(growth), byte(growth>>8), byte(growth>>16), byte(growth>>24)
		for i := range 8 {
			p[8+i] = byte(n >> (8 * i))
		}
		p[16], p[17] = byte(links), byte(links>>8)
		return p
	}
	payload := uint64(len(good) - 68)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"engine", nativeHeader(3, 1, 7, 128, 1, payload, params(4, 2, 10, 1)), "links of kind counting"},
		{"growth", nativeHeader(3, 1, 7, 128, 1, payload, params(1, 0, 10, 1)), "growth factor 0"},
		{"capacity", nativeHeader(3, 1, 7, 128, 1, payload, params(1, 2, 0, 1)), "capacity is zero"},
		{"links", nativeHeader(3, 1, 7, 128, 1, payload, params(1, 2, 10, 0)), "0 links"},
		{"short payload", nativeHeader(3, 1, 7, 128, 1, 50, params(1, 2, 10, 1)), "cannot hold 1 links"},
		{"scheme", nativeHeader(3, 3, 7, 128, 1, payload, params(1, 2, 10, 1)), "hashing scheme"},
		{"count mismatch", append(nativeHeader(3, 1, uint32(hdr[12]), binary.LittleEndian.Uint64(hdr[16:]), 99, payload, hdr[40:60]), good[64:]...), "disagrees with the links"},
	} {
		var g bloom.Scalable
		err := g.UnmarshalBinary(c.data)
		if !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrCorrupt mentioning %q", c.name, err, c.want)
		}
	}
}

// Link i holds n·growth^i keys at rate p·(1−r)·r^i, each sized with the 3% margin the type
// documents: the first link at p·(1−r), every later one tighter by r.
func TestScalableLinkSizing(t *testing.T) {
	const n, p = 1000, 0.01
	for _, c := range []struct {
		name string
		opts *bloom.ScalableOptions
		g    uint64
		r    float64
	}{
		{"defaults", nil, 2, 0.5},
		{"growth 3 r 0.7", &bloom.ScalableOptions{Growth: 3, Tightening: 0.7}, 3, 0.7},
		{"blocked", &bloom.ScalableOptions{Blocked: true}, 2, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := bloom.NewScalable(n, p, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			blocked := c.opts != nil && c.opts.Blocked
			// linkSize is what a link of the given capacity and rate must be.
			linkSize := func(capacity uint64, rate float64) (uint64, int) {
				if blocked {
					m, k, _, err := bloom.BlockedSize(capacity, rate)
					if err != nil {
						t.Fatal(err)
					}
					return m, k
				}
				m, k, err := bloom.GuavaSize(capacity, rate*0.97)
				if err != nil {
					t.Fatal(err)
				}
				return m, k
			}
			var wantM, capacity uint64
			keys := conformance.Keys(3, 20_000)
			used := 0
			for i := range 4 {
				linkCap := n * uint64(math.Pow(float64(c.g), float64(i)))
				m, k := linkSize(linkCap, p*(1-c.r)*math.Pow(c.r, float64(i)))
				wantM += m
				capacity += linkCap
				if i == 0 && s.Info().K != k {
					t.Errorf("first link k = %d, want %d (sized for p·(1−r) = %g)", s.Info().K, k, p*(1-c.r))
				}
				if got := s.Info().M; s.Links() != i+1 || got != wantM || s.Capacity() != capacity {
					t.Fatalf("link %d: %d links, %d bits, capacity %d; want %d links, %d bits, capacity %d",
						i, s.Links(), got, s.Capacity(), i+1, wantM, capacity)
				}
				// Fill the newest link to its capacity and add one more key: the next link appears.
				for s.Count() <= capacity && used < len(keys) {
					s.Add(keys[used])
					used++
				}
			}
		})
	}
}

func TestScalableAddTestAllocateNothing(t *testing.T) {
	for _, opts := range []*bloom.ScalableOptions{nil, {Blocked: true}} {
		s, _ := bloom.NewScalable(100_000, 0.01, opts)
		key := []byte("some key of moderate length")
		for name, fn := range map[string]func(){
			"Add":        func() { s.Add(key) },
			"Test":       func() { s.Test(key) },
			"AddString":  func() { s.AddString("a string key") },
			"TestString": func() { s.TestString("a string key") },
		} {
			if a := testing.AllocsPerRun(100, fn); a != 0 {
				t.Errorf("blocked=%v: %s allocates %.1f times per call", opts != nil, name, a)
			}
		}
	}
}
