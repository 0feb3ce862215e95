package bloom_test

import (
	"errors"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
	"github.com/bloomd/bloom/internal/conformance"
)

// NewExact keeps m as given under every scheme, and its filter sets exactly the bits that
// Scheme.Locations computes over that m (and nothing at or beyond m), while NewWithParams keeps
// rounding Guava's and RedisBloom's sizes to whole words.
func TestNewExact(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		// 9585058 is what the Spring helper's sizing gives n = 1e6, p = 0.01.
		for _, m := range []uint64{1, 7, 65, 729, 9585058} {
			f, err := bloom.NewExact(m, 7, s)
			if err != nil {
				t.Fatal(err)
			}
			if f.M() != m || f.K() != 7 || f.Scheme() != s || f.ByteLen() != int64((m+63)/64*8) {
				t.Fatalf("%s m=%d: got m=%d k=%d %s, %d bytes", s, m, f.M(), f.K(), f.Scheme(), f.ByteLen())
			}
			want := map[uint64]bool{}
			keys := conformance.Keys(3, 300)
			for _, key := range keys[:150] {
				f.Add(key)
				for _, b := range s.Locations(nil, key, 7, m) {
					want[b] = true
				}
			}
			// Every bit Locations names is set, and no other (BitCount counts the whole array).
			for b := range want {
				var buf [1]byte
				f.ReadAt(buf[:], int64(b>>3))
				if buf[0]&(1<<(b&7)) == 0 {
					t.Fatalf("%s m=%d: bit %d from Locations is not set", s, m, b)
				}
			}
			if f.BitCount() != uint64(len(want)) {
				t.Fatalf("%s m=%d: %d bits set, Locations name %d", s, m, f.BitCount(), len(want))
			}
			for _, key := range keys[150:] {
				all := true
				for _, b := range s.Locations(nil, key, 7, m) {
					all = all && want[b]
				}
				if f.Test(key) != all {
					t.Fatalf("%s m=%d: Test disagrees with Locations for an absent key", s, m)
				}
			}
		}
		r, err := bloom.NewWithParams(729, 7, s)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]uint64{true: 729, false: 768}[s == bloom.Redisson]; r.M() != want {
			t.Errorf("%s: NewWithParams(729) has modulus %d, want %d", s, r.M(), want)
		}
	}
	for _, c := range []struct {
		m uint64
		k int
		s bloom.Scheme
	}{{0, 7, bloom.Guava32}, {1 << 57, 7, bloom.Guava32}, {100, 0, bloom.Guava32}, {100, bloom.MaxK + 1, bloom.Guava64}, {100, 7, 0}, {100, 7, 99}} {
		if _, err := bloom.NewExact(c.m, c.k, c.s); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewExact(%d, %d, %d): got %v, want ErrInvalidParameter", c.m, c.k, c.s, err)
		}
	}
}

// An exact filter survives the native format with its modulus, and package guava refuses to
// write it unless its modulus is whole words, since Guava would read it back with another one.
func TestExactEncoding(t *testing.T) {
	f, _ := bloom.NewExact(9585058, 7, bloom.Guava32)
	keys := conformance.Keys(5, 1000)
	for _, k := range keys {
		f.Add(k)
	}
	data, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g bloom.Filter
	if err := g.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if !g.Equal(f) || g.M() != 9585058 {
		t.Fatalf("round trip changed the filter: m=%d", g.M())
	}
	if _, err := guava.Marshal(f); !errors.Is(err, bloom.ErrIncompatible) {
		t.Errorf("guava.Marshal of a 9585058-bit filter: got %v, want ErrIncompatible", err)
	}
	w, _ := bloom.NewExact(64*100, 7, bloom.Guava32)
	w.Add(keys[0])
	data, err = guava.Marshal(w)
	if err != nil {
		t.Fatalf("guava.Marshal of a whole-word exact filter: %v", err)
	}
	back, err := guava.Unmarshal(data)
	if err != nil || !back.Equal(w) {
		t.Fatalf("guava round trip of a whole-word exact filter: %v", err)
	}
}
