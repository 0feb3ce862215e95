package plot

import "github.com/bloomd/bloom"

// A Sizing is one rule's answer to "n items at rate p", as `bloom calc -n N -p P` prints it.
type Sizing struct {
	Rule    string // "guava", "redisbloom" or "blocked"
	Bits    uint64
	K       int
	Sectors int   // blocked filters only
	Err     error // the rule cannot size this
	// FPP is the rule's false-positive rate at a count of items.
	FPP func(items uint64) float64
}

// Sizings sizes n items at rate p under Guava's, RedisBloom's and the blocked filter's rules,
// with the functions `bloom calc` uses.
func Sizings(n uint64, p float64) []Sizing {
	var out []Sizing
	if m, k, err := bloom.GuavaSize(n, p); err != nil {
		out = append(out, Sizing{Rule: "guava", Err: err})
	} else {
		out = append(out, Sizing{Rule: "guava", Bits: m, K: k, FPP: func(x uint64) float64 { return bloom.FalsePositiveRate(m, k, x) }})
	}
	if m, k, _, err := bloom.RedisBloomSize(n, p); err != nil {
		out = append(out, Sizing{Rule: "redisbloom", Err: err})
	} else {
		out = append(out, Sizing{Rule: "redisbloom", Bits: m, K: k, FPP: func(x uint64) float64 { return bloom.FalsePositiveRate(m, k, x) }})
	}
	if m, k, z, err := bloom.BlockedSize(n, p); err != nil {
		out = append(out, Sizing{Rule: "blocked", Err: err})
	} else {
		out = append(out, Sizing{Rule: "blocked", Bits: m, K: k, Sectors: z, FPP: func(x uint64) float64 { return bloom.BlockedFalsePositiveRate(m, k, z, x) }})
	}
	return out
}

// SizingChart is the chart of n items at rate p: one curve per rule that can size it, up to 4n,
// with p as the target line.
func SizingChart(n uint64, p float64) *Chart {
	c := &Chart{Title: Count(float64(n)) + " items at " + Rate(p), MaxItems: 4 * float64(n), Target: p}
	for _, s := range Sizings(n, p) {
		if s.Err == nil {
			fpp := s.FPP
			c.Curves = append(c.Curves, Curve{Name: s.Rule, FPP: func(x float64) float64 { return fpp(uint64(x)) }})
		}
	}
	return c
}
