package bloom

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The multiply-and-shift reduction must equal the % operator for every divisor and dividend.
func TestDivisorMatchesModulo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	divisors := []uint64{1, 2, 3, 7, 63, 64, 65, 100, 127, 128, 729, 9600, 1<<32 - 1, 1 << 32, 1<<32 + 64, 958505856, 1<<56 - 1, 1 << 56}
	for range 200 {
		divisors = append(divisors, rng.Uint64N(1<<56)+1, uint64(rng.IntN(1<<20)+1)*64)
	}
	for _, d := range divisors {
		v := newDivisor(d)
		xs := []uint64{0, 1, d - 1, d, d + 1, 2*d - 1, math.MaxInt64, 1 << 63, math.MaxUint64, math.MaxUint64 - d}
		for range 2000 {
			xs = append(xs, rng.Uint64())
		}
		for _, x := range xs {
			if got, want := v.mod(x), x%d; got != want {
				t.Fatalf("%d mod %d = %d, want %d", x, d, got, want)
			}
			if x <= math.MaxInt64 && d > 1 {
				if got := v.mod63(x); got != x%d {
					t.Fatalf("mod63: %d mod %d = %d, want %d", x, d, got, x%d)
				}
			}
		}
	}
}

func FuzzDivisor(f *testing.F) {
	f.Add(uint64(9600), uint64(12345678901234))
	f.Add(uint64(3), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, d, x uint64) {
		if d == 0 {
			return
		}
		v := newDivisor(d)
		if got := v.mod(x); got != x%d {
			t.Fatalf("%d mod %d = %d, want %d", x, d, got, x%d)
		}
	})
}
