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
