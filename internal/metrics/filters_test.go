package metrics

import (
	"math"
	"testing"

	"github.com/bloomd/bloom"
)

func TestFilterEstimates(t *testing.T) {
	m, k := uint64(9585088), 7 // Guava's sizing of 1e6 items at 1%
	f := Filter{Links: []Link{{Bits: m, Hashes: k, Items: 1000000, Capacity: 1000000, Target: 0.01}}, Rate: 0.01}
	if got, want := f.FPP(), bloom.FalsePositiveRate(m, k, 1000000); math.Abs(got-want) > 1e-12 {
		t.Errorf("FPP = %v, bloom.FalsePositiveRate = %v", got, want)
	}
	if fill := f.Fill(); math.Abs(fill-(1-math.Exp(-7e6/float64(m)))) > 1e-12 || math.Abs(fill-0.5) > 0.03 { // about half full at capacity
		t.Errorf("Fill = %v, want about 0.5", fill)
	}
	// Rates far below float64's epsilon survive.
	f.Links[0].Items = 10
	if p := f.FPP(); p <= 0 || p > 1e-30 {
		t.Errorf("FPP at 10 items = %v", p)
	}
	if f.Target() != 0.01 || f.Bits() != m || f.Capacity() != 1000000 {
		t.Error("Target, Bits or Capacity wrong")
	}
}

func TestProjectedChain(t *testing.T) {
	size := func(c uint64, p float64) (uint64, int, bool) {
		m, k, _, err := bloom.RedisBloomSize(c, p)
		return m, k, err == nil
	}
	m0, k0, _ := size(1000, 0.005)
	f := Filter{Scaling: true, Expansion: 2, Links: []Link{{Bits: m0, Hashes: k0, Capacity: 1000, Target: 0.005}}}
	links := f.Projected(7000, size)
	if len(links) != 3 || links[1].Capacity != 2000 || links[2].Capacity != 4000 || links[2].Target != 0.00125 {
		t.Fatalf("Projected = %+v", links)
	}
	if s := Starts(links); len(s) != 2 || s[0] != 1000 || s[1] != 3000 {
		t.Errorf("Starts = %v", s)
	}
	// The curve rises with items, and a scalable chain stays near the sum of its links' rates.
	prev := 0.0
	for n := 0.0; n <= 7000; n += 250 {
		p := FPPAt(links, n)
		if p < prev {
			t.Fatalf("FPPAt(%v) = %v fell below %v", n, p, prev)
		}
		prev = p
	}
	if prev > 0.005+0.0025+0.00125+0.001 {
		t.Errorf("FPPAt(7000) = %v, above the chain's bound", prev)
	}
	f.Scaling = false
	if len(f.Projected(1e9, size)) != 1 {
		t.Error("a non-scaling filter was projected to grow")
	}
}
