package bloom_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/bloomd/bloom"
)

// AddHashedIf must do what TestHashed then AddHashed do, and change nothing when admit refuses,
// for every scheme and for k beyond the stack-gathered path.
func TestAddHashedIf(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		for _, k := range []int{1, 7, 40} {
			f, _ := bloom.NewWithParams(1<<14, k, s)
			ref, _ := bloom.NewWithParams(1<<14, k, s)
			for i := range 2000 {
				h1, h2 := s.Hash([]byte(strconv.Itoa(i % 1500)))
				before, _ := f.MarshalBinary()
				calls := 0
				added, present := f.AddHashedIf(h1, h2, func() bool { calls++; return false })
				after, _ := f.MarshalBinary()
				wantPresent := ref.TestHashed(h1, h2)
				if added || present != wantPresent || calls != map[bool]int{true: 0, false: 1}[wantPresent] || !slices.Equal(before, after) {
					t.Fatalf("%v k=%d key %d refused: added %v present %v, %d admit calls, changed %v; want present %v",
						s, k, i, added, present, calls, !slices.Equal(before, after), wantPresent)
				}
				added, present = f.AddHashedIf(h1, h2, func() bool { return true })
				wantAdded := ref.AddHashed(h1, h2)
				if added != wantAdded || present != !wantAdded {
					t.Fatalf("%v k=%d key %d: added %v present %v; want added %v", s, k, i, added, present, wantAdded)
				}
				f.PrefetchHashed(h1, h2)
			}
			a, _ := f.MarshalBinary()
			b, _ := ref.MarshalBinary()
			if !slices.Equal(a, b) {
				t.Fatalf("%v k=%d: AddHashedIf's bits differ from AddHashed's", s, k)
			}
			h1, h2 := s.Hash([]byte("x"))
			if n := testing.AllocsPerRun(100, func() {
				f.AddHashedIf(h1, h2, func() bool { return true })
				f.PrefetchHashed(h1, h2)
			}); n != 0 {
				t.Errorf("%v k=%d: AddHashedIf and PrefetchHashed allocate %v times", s, k, n)
			}
		}
	}
}

// The positions PrefetchLocate returns make AddLocatedIf and TestLocated do what AddHashedIf and
// TestHashed do, for every scheme, for k beyond the stack-gathered path, and for positions that
// do not fit (recomputed).
func TestLocated(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		for _, k := range []int{1, 7, 40} {
			for _, room := range []int{64, 3} {
				f, _ := bloom.NewWithParams(1<<14, k, s)
				ref, _ := bloom.NewWithParams(1<<14, k, s)
				var buf [64]uint64
				for i := range 3000 {
					h1, h2 := s.Hash([]byte(strconv.Itoa(i % 1500)))
					pos := f.PrefetchLocate(h1, h2, buf[:room])
					if (pos != nil) != (k <= room && k <= 32) || pos != nil && len(pos) != k {
						t.Fatalf("%v k=%d room %d: %d positions", s, k, room, len(pos))
					}
					if got, want := f.TestLocated(h1, h2, pos), ref.TestHashed(h1, h2); got != want {
						t.Fatalf("%v k=%d key %d: TestLocated %v, TestHashed %v", s, k, i, got, want)
					}
					admit := i%3 != 0
					added, present := f.AddLocatedIf(h1, h2, pos, func() bool { return admit })
					wa, wp := ref.AddHashedIf(h1, h2, func() bool { return admit })
					if added != wa || present != wp {
						t.Fatalf("%v k=%d key %d: AddLocatedIf %v %v, AddHashedIf %v %v", s, k, i, added, present, wa, wp)
					}
				}
				a, _ := f.MarshalBinary()
				b, _ := ref.MarshalBinary()
				if !slices.Equal(a, b) {
					t.Fatalf("%v k=%d room %d: the bits differ", s, k, room)
				}
				h1, h2 := s.Hash([]byte("x"))
				if n := testing.AllocsPerRun(100, func() {
					pos := f.PrefetchLocate(h1, h2, buf[:room])
					f.AddLocatedIf(h1, h2, pos, func() bool { return true })
					f.TestLocated(h1, h2, pos)
				}); n != 0 {
					t.Errorf("%v k=%d: %v allocations", s, k, n)
				}
			}
		}
	}
}
