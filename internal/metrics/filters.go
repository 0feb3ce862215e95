package metrics

import "math"

// A Link is one sub-filter of a filter: its size and its count of items.
type Link struct {
	Bits     uint64  // m
	Hashes   int     // k
	Items    uint64  // n, counted as items are added
	Capacity uint64  // items it takes before the filter grows
	Target   float64 // the error rate it was sized for
}

// Fill returns the expected fraction of the link's bits that are set, 1 - e^(-kn/m): computed
// from the count of items, so that no bit is read.
func (l Link) Fill() float64 {
	if l.Bits == 0 {
		return 0
	}
	return -math.Expm1(-float64(l.Hashes) * float64(l.Items) / float64(l.Bits))
}

// FPP returns the link's false-positive probability now, Fill()^k.
func (l Link) FPP() float64 { return math.Pow(l.Fill(), float64(l.Hashes)) }

// anyOf returns 1 - Π(1 - pᵢ), the chance that at least one of independent events happens,
// without losing rates far below 1e-16 to rounding.
func anyOf(ps []float64) float64 {
	var logMiss float64
	for _, p := range ps {
		logMiss += math.Log1p(-p)
	}
	return -math.Expm1(logMiss)
}

// A Filter describes one filter of the keyspace, as the metrics endpoint and the page show it.
type Filter struct {
	Name  string
	Type  string // "bloom" (a RedisBloom-compatible scalable filter) or "cuckoo"
	Bytes int64  // memory charged for it
	Links []Link // oldest first; none for a cuckoo filter
	// Cuckoo describes a cuckoo filter (Type "cuckoo"); nil for a Bloom filter.
	Cuckoo *Cuckoo
	// Scaling reports whether the filter grows (a new link) once its last link is full.
	Scaling   bool
	Expansion uint32
	// Rate is the error rate the filter was made for (BF.RESERVE's); a scalable filter's first
	// link is sized tighter than that, so that the links together stay near it.
	Rate float64
}

// A Cuckoo is a cuckoo filter's description: CF.INFO's fields, and its slots.
type Cuckoo struct {
	Size          uint64 // CF.INFO's Size: RedisBloom's structures and every slot, in bytes
	Buckets       uint64 // of the first sub-filter
	Filters       int    // sub-filters
	Inserted      uint64 // items inserted and not deleted
	Deleted       uint64 // deletions since the last compaction
	BucketSize    uint16 // slots per bucket
	Expansion     uint16 // 0 for a filter that never grows
	MaxIterations uint16
	Slots         uint64 // one-byte fingerprint slots of all sub-filters: the items it holds before it grows
}

// Bits returns the total number of bits of the filter's links.
func (f *Filter) Bits() (n uint64) {
	for _, l := range f.Links {
		n += l.Bits
	}
	return n
}

// Items returns the items added.
func (f *Filter) Items() (n uint64) {
	for _, l := range f.Links {
		n += l.Items
	}
	return n
}

// Capacity returns the items the links take before the filter grows again.
func (f *Filter) Capacity() (n uint64) {
	for _, l := range f.Links {
		n += l.Capacity
	}
	return n
}

// Fill returns the expected fraction of all the filter's bits that are set.
func (f *Filter) Fill() float64 {
	var set, all float64
	for _, l := range f.Links {
		set += l.Fill() * float64(l.Bits)
		all += float64(l.Bits)
	}
	if all == 0 {
		return 0
	}
	return set / all
}

// FPP returns the probability now that an item never added tests present: 1 - Π(1 - FPPᵢ) over
// the links, each tested in turn.
func (f *Filter) FPP() float64 {
	ps := make([]float64, len(f.Links))
	for i, l := range f.Links {
		ps[i] = l.FPP()
	}
	return anyOf(ps)
}

// Target returns the error rate the filter was made for: Rate, or if that is not set its first
// link's.
func (f *Filter) Target() float64 {
	if f.Rate > 0 || len(f.Links) == 0 {
		return f.Rate
	}
	return f.Links[0].Target
}

// maxFutureLinks bounds the sub-filters a projection adds to a scalable filter.
const maxFutureLinks = 64

// Projected returns the filter's links with, for a scalable filter, the sub-filters it would add
// to hold items: each expansion times the previous one's capacity, at half its error rate, sized
// by size (RedisBloom's rule: bloom.RedisBloomSize). size may be nil for no projection.
func (f *Filter) Projected(items float64, size func(capacity uint64, p float64) (m uint64, k int, ok bool)) []Link {
	links := append([]Link(nil), f.Links...)
	if !f.Scaling || size == nil || len(links) == 0 {
		return links
	}
	total := float64(f.Capacity())
	for total < items && len(links) < maxFutureLinks {
		last := links[len(links)-1]
		capacity := last.Capacity * uint64(max(f.Expansion, 1))
		p := last.Target * 0.5
		m, k, ok := size(capacity, p)
		if !ok {
			break
		}
		links = append(links, Link{Bits: m, Hashes: k, Capacity: capacity, Target: p})
		total += float64(capacity)
	}
	return links
}

// FPPAt returns the false-positive probability the links give at items, filled in order (each
// to its capacity, the last beyond it). It is the curve the page and `bloom info --plot` draw.
func FPPAt(links []Link, items float64) float64 {
	var ps []float64
	left := items
	for i, l := range links {
		n := min(left, float64(l.Capacity))
		if i == len(links)-1 {
			n = left
		}
		left -= n
		if l.Bits == 0 || n <= 0 {
			continue
		}
		fill := -math.Expm1(-float64(l.Hashes) * n / float64(l.Bits))
		ps = append(ps, math.Pow(fill, float64(l.Hashes)))
	}
	return anyOf(ps)
}

// Starts returns the item counts at which each link after the first starts receiving items.
func Starts(links []Link) []float64 {
	var out []float64
	total := 0.0
	for i, l := range links {
		if i > 0 {
			out = append(out, total)
		}
		total += float64(l.Capacity)
	}
	return out
}
