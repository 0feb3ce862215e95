package metrics

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// subBits is the number of bits below the leading one that a histogram bucket keeps: four
// buckets per power of two, so a percentile read from the buckets is within 25% of the truth,
// the same order as Redis's latencystats (HdrHistogram with two significant digits), at one
// atomic add per observation and no lock.
const subBits = 2

// numBuckets covers durations up to 2^41 ns (36 minutes); longer ones count in the last bucket.
const numBuckets = (41-subBits)<<subBits + 1<<subBits

// A Histogram counts durations in nanoseconds into log-linear buckets. Its zero value is empty
// and ready to use.
type Histogram struct {
	b [numBuckets]atomic.Int64
}

// bucket returns the index of the bucket that holds ns.
func bucket(ns int64) int {
	if ns < 1<<subBits {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // ns is in [2^e, 2^(e+1))
	sub := int(ns>>(e-subBits)) & (1<<subBits - 1)
	return min((e-subBits+1)<<subBits+sub, numBuckets-1)
}

// upper returns the least duration in ns that is above every value of bucket i.
func upper(i int) int64 {
	if i < 1<<subBits {
		return int64(i) + 1
	}
	e := i>>subBits + subBits - 1
	sub := int64(i & (1<<subBits - 1))
	return (1<<subBits + sub + 1) << (e - subBits)
}

// Observe counts one duration of ns nanoseconds.
func (h *Histogram) Observe(ns int64) { h.b[bucket(ns)].Add(1) }

// ObserveN counts n durations of ns nanoseconds.
func (h *Histogram) ObserveN(ns, n int64) { h.b[bucket(ns)].Add(n) }

// Reset empties the histogram. Observations made while it runs may survive it.
func (h *Histogram) Reset() {
	for i := range h.b {
		h.b[i].Store(0)
	}
}

// A HistogramSnapshot is a histogram's counts at one moment.
type HistogramSnapshot struct {
	counts [numBuckets]int64
	Count  int64
}

// Snapshot copies the counts. It does not stop observations: each bucket is read once.
func (h *Histogram) Snapshot() HistogramSnapshot {
	var s HistogramSnapshot
	for i := range h.b {
		s.counts[i] = h.b[i].Load()
		s.Count += s.counts[i]
	}
	return s
}

// Percentile returns the upper bound, in nanoseconds, of the bucket holding the p-th percentile
// (0 < p <= 100), or 0 if the histogram is empty.
func (s *HistogramSnapshot) Percentile(p float64) int64 {
	if s.Count == 0 {
		return 0
	}
	rank := int64(math.Ceil(p / 100 * float64(s.Count)))
	rank = max(rank, 1)
	var seen int64
	for i, n := range s.counts {
		seen += n
		if seen >= rank {
			return upper(i)
		}
	}
	return upper(numBuckets - 1)
}

// Buckets calls fn for each power of two from 1 µs up to the largest observed duration, with
// the bound in seconds and the number of observations at or below it: the cumulative buckets of
// a Prometheus histogram. Powers of two keep the series few (about 22 for durations up to
// seconds) while the bounds fall exactly on bucket edges.
func (s *HistogramSnapshot) Buckets(fn func(le float64, cumulative uint64)) {
	last := 0
	for i, n := range s.counts {
		if n > 0 {
			last = i
		}
	}
	var cum int64
	i := 0
	for bound := int64(1024); ; bound <<= 1 {
		for i < numBuckets && upper(i) <= bound {
			cum += s.counts[i]
			i++
		}
		fn(float64(bound)/1e9, uint64(cum))
		if i > last || bound >= 1<<40 {
			return
		}
	}
}

// Sum estimates the sum of the observations in seconds from bucket midpoints; Prometheus's
// histogram needs one, and Command keeps the exact total separately.
func (s *HistogramSnapshot) Sum() float64 {
	var sum float64
	for i, n := range s.counts {
		if n == 0 {
			continue
		}
		lo := int64(0)
		if i > 0 {
			lo = upper(i - 1)
		}
		sum += float64(n) * float64(lo+upper(i)) / 2
	}
	return sum / 1e9
}
