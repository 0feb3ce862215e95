package bloom

import (
	"math"
	"math/big"
	"sync"
)

// lnExact returns the natural logarithm of x > 0 rounded correctly to the nearest float64.
//
// RedisBloom stores bits per entry, -ln(p)/ln²2, in its BF.SCANDUMP header, and Debian's glibc
// computes ln(p) correctly rounded for every rate we have compared (all rates of the form
// p·2^-i for common p), while math.Log is off by one ulp for about 7% of inputs, 0.01 among
// them. Sizing is rare (once per sub-filter), so the exact value is computed with big.Float
// (ln x = e·ln 2 + 2·atanh((m-1)/(m+1)) at 128 bits) and remembered.
func lnExact(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) {
		return math.Log(x)
	}
	lnCache.Lock()
	defer lnCache.Unlock()
	if v, ok := lnCache.m[x]; ok {
		return v
	}
	if len(lnCache.m) >= 1024 { // bounded: callers with many distinct rates just recompute
		clear(lnCache.m)
	}
	v := lnBig(x)
	lnCache.m[x] = v
	return v
}

var lnCache = struct {
	sync.Mutex
	m map[float64]float64
}{m: map[float64]float64{}}

const lnPrec = 128

var ln2Big = sync.OnceValue(func() *big.Float {
	third := new(big.Float).SetPrec(lnPrec).Quo(big.NewFloat(1), big.NewFloat(3))
	return twoAtanh(third) // ln 2 = 2·atanh(1/3)
})

func lnBig(x float64) float64 {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac in [0.5, 1)
	if frac < math.Sqrt2/2 {
		frac *= 2 // keeps (m-1)/(m+1) below 0.172, so the series gains 5 bits a term
		exp--
	}
	m := new(big.Float).SetPrec(lnPrec).SetFloat64(frac)
	num := new(big.Float).SetPrec(lnPrec).Sub(m, big.NewFloat(1))
	den := new(big.Float).SetPrec(lnPrec).Add(m, big.NewFloat(1))
	r := twoAtanh(num.Quo(num, den))
	r.Add(r, new(big.Float).SetPrec(lnPrec).Mul(ln2Big(), big.NewFloat(float64(exp))))
	f, _ := r.Float64() // rounds to nearest even
	return f
}

// twoAtanh returns 2·atanh(s) = ln((1+s)/(1-s)) for |s| < 1/2 by its series s + s³/3 + s⁵/5 + ...
func twoAtanh(s *big.Float) *big.Float {
	s2 := new(big.Float).SetPrec(lnPrec).Mul(s, s)
	pow := new(big.Float).SetPrec(lnPrec).Set(s)
	sum := new(big.Float).SetPrec(lnPrec).Set(s)
	term := new(big.Float).SetPrec(lnPrec)
	for n := int64(3); sum.Sign() != 0; n += 2 {
		pow.Mul(pow, s2)
		term.Quo(pow, big.NewFloat(float64(n)))
		if term.Sign() == 0 || term.MantExp(nil) < sum.MantExp(nil)-lnPrec-8 {
			break
		}
		sum.Add(sum, term)
	}
	return sum.Mul(sum, big.NewFloat(2))
}
