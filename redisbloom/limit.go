package redisbloom

import (
	"math/bits"

	"github.com/bloomd/bloom"
)

// CapacityWithin returns the capacity the chain would reach by growing while its Size stays at
// most limit bytes: Capacity now, plus the capacity of each link Add would append (sized as Add
// sizes it) until the next one would pass limit, the chain could not grow (non-scaling, at
// MaxFilters links, or its sizing fails), or the total would pass 2^64-1. A chain already
// larger than limit returns Capacity. It is safe for concurrent use and allocates nothing.
func (c *Chain) CapacityWithin(limit uint64) uint64 {
	links := *c.links.Load()
	size, capacity := c.Size(), c.Capacity()
	if c.options&optNoScaling != 0 {
		return capacity
	}
	last := links[len(links)-1]
	linkCap, rate := last.capacity, last.errorRate
	for n := len(links); n < MaxFilters; n++ {
		hi, next := bits.Mul64(linkCap, uint64(c.growth))
		if hi != 0 || next == 0 {
			break
		}
		rate *= TighteningRatio
		m, _, _, err := bloom.RedisBloomSize(next, rate)
		if err != nil {
			break
		}
		add := linkOverhead + m/8 // what newLink asks the Reserve hook for
		total, carry := bits.Add64(capacity, next, 0)
		if size+add > limit || size+add < size || carry != 0 {
			break
		}
		size, capacity, linkCap = size+add, total, next
	}
	return capacity
}
