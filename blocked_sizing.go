package bloom

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Sizing of blocked filters. Confining a key to one 64-byte block raises the false-positive rate
// at a given number of bits per key, because blocks receive unequal numbers of keys (Putze,
// Sanders and Singler, "Cache-, hash- and space-efficient Bloom filters", 2007), and confining it
// further to a few 64-bit words of the block raises it again. The classic formula therefore
// undersizes a blocked filter. BlockedFalsePositiveRate computes the exact expected rate of this
// package's layout instead, and BlockedSize searches the smallest size that reaches p with it.
//
// The model: with λ = 512/(bits per key) keys per block on average, a block holds j keys with
// Poisson probability; each of its z sectors (groups of 8/z words) gives each key one word,
// uniformly, so a word of a sector holds l of the block's j keys binomially; a word hit by l keys
// has received l·b uniform bit throws, and a query's b throws (which may repeat, as the stored
// ones may) all land on set bits with a probability given by inclusion–exclusion. A query is a
// false positive when that happens in all z of its words; the sectors are independent given j.
//
// What BlockedSize gives, against Guava's classic sizing, and the rate measured at capacity with
// a million 16-byte keys and ten million absent ones (BLOOM_FPP_N=1000000 go test -run FPPTable
// -v measures it). Where measured, the model agrees within 1%; below 0.001 only the model is
// given.
//
//	p       bits/key  k   sectors  classic bits/key  k   extra memory  measured FPP
//	0.1      5.11     3   1         4.79             3    +7%          0.0971
//	0.05     6.92     4   1         6.24             4   +11%
//	0.02     8.64     6   2         8.14             6    +6%
//	0.01    10.35     6   2         9.59             7    +8%          0.00975
//	0.005   12.30     6   2        11.03             8   +12%
//	0.001   17.15     8   2        14.38            10   +19%          0.00098
//	1e-4    22.66    12   4        19.17            13   +18%
//	1e-5    31.19    12   4        23.96            17   +30%
//	1e-6    41.23    16   4        28.76            20   +43%
//
// Below about 1e-4 a classic filter is the better choice unless speed matters most.

// BlockedFalsePositiveRate returns the expected false-positive rate of a blocked filter of m bits
// (a multiple of 512) with k bits per key spread over the given number of sectors (64-bit words
// per key: 1, 2, 4 or 8, dividing k) after n distinct keys. It returns 1 for parameters no
// blocked filter can have.
func BlockedFalsePositiveRate(m uint64, k, sectors int, n uint64) float64 {
	if m < blockBits || checkSectors(k, sectors) != nil {
		return 1
	}
	if n == 0 {
		return 0
	}
	return blockedFPP(float64(m)/float64(n), sectors, k/sectors)
}

// BlockedSize returns the size m (a multiple of 512 bits), the number of bits per key k and the
// number of sectors (64-bit words per key) of the blocked filter NewBlocked makes for n keys at
// false-positive rate p. The expected rate at n keys, by BlockedFalsePositiveRate, is 0.97·p:
// the rate a filter actually reaches scatters around its expectation (by about 1% at a million
// keys, more for small filters), and the 3% margin keeps measured rates at or below p for about
// half a percent more memory.
//
// Among the layouts that reach p, it takes the fewest sectors whose size is within 10% of the
// smallest: each sector costs an atomic instruction per Add, and at p = 0.01 two sectors need
// only 6% more memory than a classic filter. It fails for p outside [1e-12, 1) and for sizes
// beyond 2^56 bits. The computation takes about a millisecond; results are cached per p.
func BlockedSize(n uint64, p float64) (m uint64, k, sectors int, err error) {
	if err := checkRate(p); err != nil {
		return 0, 0, 0, err
	}
	if p < minBlockedRate {
		return 0, 0, 0, fmt.Errorf("%w: false-positive rate %g is below %g, the smallest a blocked filter is sized for", ErrInvalidParameter, p, minBlockedRate)
	}
	l := blockedLayoutFor(p)
	if n == 0 {
		n = 1
	}
	bits := float64(n) * l.bitsPerKey
	if bits >= maxBits {
		return 0, 0, 0, fmt.Errorf("%w: %d items at p=%g need %.3g bits (limit %d)", ErrTooLarge, n, p, bits, uint64(maxBits))
	}
	blocks := uint64(math.Ceil(bits / blockBits))
	return max(blocks, 1) * blockBits, l.k, l.sectors, nil
}

// blockedMargin is the ratio of the expected rate BlockedSize sizes for to the rate asked for.
const blockedMargin = 0.97

// minBlockedRate bounds the rates BlockedSize accepts: below it the model's inclusion–exclusion
// sums lose precision, and k would exceed what one 64-bit hash word per sector can address.
const minBlockedRate = 1e-12

// blockedLayout is the best layout for one rate: bits per key, k and sectors.
type blockedLayout struct {
	bitsPerKey float64
	k, sectors int
}

var blockedLayouts sync.Map // float64 p -> blockedLayout

func blockedLayoutFor(p float64) blockedLayout {
	if l, ok := blockedLayouts.Load(p); ok {
		return l.(blockedLayout)
	}
	best := make(map[int]blockedLayout) // sectors -> best layout with that many sectors
	smallest := math.Inf(1)
	classicK := -math.Log2(p)
	target := p * blockedMargin
	for _, z := range []int{1, 2, 4, 8} {
		// The size is unimodal in b: start near the classic optimum and walk downhill.
		b0 := min(max(int(math.Round(classicK/float64(z))), 1), maxSectorBits)
		bpk0, ok := blockedBitsPerKey(target, z, b0)
		if !ok {
			continue
		}
		best[z] = blockedLayout{bpk0, z * b0, z}
		for _, step := range []int{-1, 1} {
			prev := bpk0
			for b := b0 + step; b >= 1 && b <= maxSectorBits; b += step {
				bpk, ok := blockedBitsPerKey(target, z, b)
				if !ok || bpk >= prev {
					break
				}
				prev = bpk
				if bpk < best[z].bitsPerKey {
					best[z] = blockedLayout{bpk, z * b, z}
				}
			}
		}
		smallest = min(smallest, best[z].bitsPerKey)
	}
	var l blockedLayout
	for _, z := range []int{1, 2, 4, 8} {
		if c, ok := best[z]; ok && c.bitsPerKey <= 1.10*smallest {
			l = c
			break
		}
	}
	if blockedLayoutCount.Add(1) < 4096 { // bound the cache; recomputing is only slower
		blockedLayouts.Store(p, l)
	}
	return l
}

var blockedLayoutCount atomic.Int64

// blockedBitsPerKey finds the bits per key at which layout (z, b) reaches rate p, to a relative
// precision of 1e-5, by regula falsi (Illinois variant) on ln FPP, which is nearly linear in the
// bits per key. ok is false when no size below 1024 bits per key reaches p.
func blockedBitsPerKey(p float64, z, b int) (bpk float64, ok bool) {
	f := func(x float64) float64 { return math.Log(blockedFPP(x, z, b)) - math.Log(p) }
	lo := -math.Log(p) / ln2Squared // the classic optimum: no blocked layout needs less
	flo := f(lo)
	for flo <= 0 {
		lo /= 2
		flo = f(lo)
	}
	hi := lo * 1.25
	fhi := f(hi)
	for fhi > 0 {
		lo, flo = hi, fhi
		hi *= 1.5
		if hi > 1024 {
			return 0, false
		}
		fhi = f(hi)
	}
	side := 0
	for range 100 {
		if hi-lo <= 1e-5*hi {
			break
		}
		x := hi - fhi*(hi-lo)/(fhi-flo)
		if !(x > lo && x < hi) {
			x = (lo + hi) / 2
		}
		fx := f(x)
		if fx > 0 {
			lo, flo = x, fx
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return hi, true
}

// blockedFPP is the model above at a given number of bits per key, for z sectors of b bits.
func blockedFPP(bpk float64, z, b int) float64 {
	lambda := blockBits / bpk
	g := blockWords / z // words per sector
	lo := max(0, int(lambda-12*math.Sqrt(lambda)-40))
	hi := int(lambda+12*math.Sqrt(lambda)) + 40
	hit := wordHitProbabilities(b, hi)
	_ = hit[hi]
	q := 1 / float64(g)
	total := 0.0
	for j := lo; j <= hi; j++ {
		lg, _ := math.Lgamma(float64(j + 1))
		pj := math.Exp(float64(j)*math.Log(lambda) - lambda - lg)
		if pj == 0 {
			continue
		}
		var inner float64
		if g == 1 {
			inner = hit[j]
		} else {
			// Binomial(l; j, q) over the window where it is not negligible, iterated in l from
			// its first term (computed in log space: (1-q)^j alone underflows for large j).
			mean, sd := float64(j)*q, math.Sqrt(float64(j)*q*(1-q))
			l0 := max(0, int(mean-12*sd-10))
			l1 := min(j, int(mean+12*sd)+10)
			pl := math.Exp(logChoose(j, l0) + float64(l0)*math.Log(q) + float64(j-l0)*math.Log1p(-q))
			ratio := q / (1 - q)
			for l := l0; l <= l1; l++ {
				inner += pl * hit[l]
				pl *= float64(j-l) / float64(l+1) * ratio
			}
		}
		total += pj * math.Pow(inner, float64(z))
	}
	if math.IsNaN(total) {
		return 1
	}
	return min(1, max(0, total))
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// hitTables caches wordHitProbabilities, which depend only on b; they dominate the cost of
// the model otherwise.
var hitTables [maxSectorBits + 1]atomic.Pointer[[]float64]

// wordHitProbabilities returns, for l = 0..maxL at least, the probability that b uniform throws
// over 64 bits all land on bits set by l·b earlier uniform throws.
func wordHitProbabilities(b, maxL int) []float64 {
	if t := hitTables[b].Load(); t != nil && len(*t) > maxL {
		return *t
	}
	t := computeHitProbabilities(b, max(maxL, 1024))
	hitTables[b].Store(&t)
	return t
}

func computeHitProbabilities(b, maxL int) []float64 {
	// The query's b throws cover d distinct bits with probability S2(b,d)·64!/(64-d)!/64^b;
	// d given bits are all among the set ones with probability Σ_i (-1)^i C(d,i) (1-i/64)^t.
	stirling := make([][]float64, b+1)
	for i := range stirling {
		stirling[i] = make([]float64, b+1)
	}
	stirling[0][0] = 1
	for n := 1; n <= b; n++ {
		for d := 1; d <= n; d++ {
			stirling[n][d] = float64(d)*stirling[n-1][d] + stirling[n-1][d-1]
		}
	}
	pd := make([]float64, b+1)
	for d := 1; d <= b; d++ {
		falling := 1.0
		for i := range d {
			falling *= float64(64 - i)
		}
		pd[d] = stirling[b][d] * falling / math.Pow(64, float64(b))
	}
	hit := make([]float64, maxL+1)
	for l := range hit {
		t := float64(l * b)
		s := 0.0
		for d := 1; d <= b; d++ {
			sum, binom := 0.0, 1.0
			for i := 0; i <= d; i++ {
				term := binom * math.Pow(1-float64(i)/64, t)
				if i%2 == 1 {
					term = -term
				}
				sum += term
				binom = binom * float64(d-i) / float64(i+1)
			}
			s += pd[d] * max(0, sum)
		}
		hit[l] = min(1, s)
	}
	return hit
}
