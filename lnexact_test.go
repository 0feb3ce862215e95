package bloom

import (
	"math"
	"testing"
)

// Bits per entry, -ln(p)/0.480453013918201, as RedisBloom 2.6 computes them on Debian 12
// (glibc 2.36, x86-64), for rates where math.Log is one ulp off. RedisBloom writes this double
// into every BF.SCANDUMP header, so a dump is byte-identical only if it matches.
var redisBloomBPE = []struct {
	p   float64
	bpe uint64
}{
	{0.01, 0x40232b8cc58a1688},
	{0.0003125, 0x4030cc6cb262a435},
	{7.62939453125e-11, 0x40483e85e9356bb0},
	{0.0015, 0x402b113c8c34e504},
	{4.6875e-05, 0x4034bf4495b80b74},
	{4.3655745685100556e-14, 0x405001ca9cda6847},
	{0.000927734375, 0x402d114286becafd},
	{0.005, 0x40260e35b22f86e9}, // the default first sub-filter (dump-small-1.bin)
}

func TestRedisBloomBPE(t *testing.T) {
	for _, c := range redisBloomBPE {
		_, _, bpe, err := RedisBloomSize(100, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := math.Float64bits(bpe); got != c.bpe {
			t.Errorf("p=%g: bpe %#016x (%v), want %#016x (%v)", c.p, got, bpe, c.bpe, math.Float64frombits(c.bpe))
		}
	}
}

func TestLnExact(t *testing.T) {
	for _, x := range []float64{1, 2, 0.5, math.E, 10, 1e-300, math.MaxFloat64, 0.7071067811865476, 1.0000000000000002, 0.9999999999999999} {
		got, want := lnExact(x), math.Log(x)
		if d := math.Abs(got - want); d > 2*math.Abs(want)*0x1p-52 && d > 0 {
			t.Errorf("lnExact(%v) = %v, math.Log = %v", x, got, want)
		}
	}
	// math.Log mishandles subnormals on amd64 (it returns -709.09 for the smallest one).
	if got := lnExact(5e-324); math.Abs(got+744.4400719213812) > 1e-12 {
		t.Errorf("lnExact(5e-324) = %v, want -744.4400719213812", got)
	}
	if lnExact(1) != 0 || lnExact(2) != math.Ln2 {
		t.Errorf("lnExact(1) = %v, lnExact(2) = %v", lnExact(1), lnExact(2))
	}
}
