package bloom

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/bloomd/bloom/internal/hash"
)

// RedisBloom 2.6's cuckoo filter limits and defaults (src/cuckoo.h and src/rebloom.c).
const (
	CuckooDefaultBucketSize    = 2
	CuckooDefaultMaxIterations = 20
	CuckooDefaultExpansion     = 1
	CuckooDefaultMaxFilters    = 32 // RedisBloom's CF_MAX_EXPANSIONS default
	CuckooMaxBucketSize        = 255
	CuckooMaxIterations        = 65535
	CuckooMaxExpansion         = 32768
	CuckooMaxBuckets           = 1<<56 - 1
	CuckooMaxFilters           = 65535
)

// CuckooOptions are the settings of a new cuckoo filter. A nil *CuckooOptions means every default.
type CuckooOptions struct {
	// BucketSize is the number of one-byte fingerprint slots per bucket, 1 to 255; 0 means 2.
	// Larger buckets fill closer to capacity before growing but raise the false-positive rate
	// (about 2·BucketSize/255 when full).
	BucketSize uint16

	// MaxIterations bounds the kicks of one insertion before the filter grows, 1 to 65535;
	// 0 means 20.
	MaxIterations uint16

	// Expansion is the factor by which each new sub-filter has more buckets than the one before,
	// rounded up to a power of two, 1 to 32768; 0 means 1. NonScaling makes a filter that never
	// grows (RedisBloom's EXPANSION 0): an insertion that finds no room fails with ErrFull.
	Expansion  uint16
	NonScaling bool

	// MaxFilters is the number of sub-filters past which an insertion fails with ErrFull instead
	// of growing the filter, 1 to 65535; 0 means 32.
	MaxFilters int

	// Reserve, if set, is called with the size in bytes of every slot array before it is
	// allocated (the first one and each growth); an error refuses the allocation and is returned,
	// wrapped, by the call that needed it. It lets a server charge a memory limit.
	Reserve func(bytes uint64) error
}

// A Cuckoo is a cuckoo filter laid out, hashed and grown exactly as RedisBloom 2.6's CF.*
// commands do, so that its slots are byte for byte those of the same commands run on RedisBloom
// (see package redisbloom for the CF.SCANDUMP chunk format). Unlike a Bloom filter it supports
// Remove and Count; like one, Test may report a never-added key as present (when a key's 8-bit
// fingerprint matches another key's in one of its two buckets), and never misses a key that was
// added more times than removed.
//
// An item is hashed once with MurmurHash64A (seed 0) to h; its fingerprint is h%255+1 (1..255;
// 0 marks an empty slot), its first bucket h mod the number of buckets, its second the first
// XOR fingerprint·0x5bd1e995, so each bucket is the other's alternate. A new item goes to a free
// slot of either bucket, searching the newest sub-filter first; when all are full, fingerprints
// are kicked between buckets of the newest sub-filter up to MaxIterations times; failing that,
// the kicks are undone and a sub-filter Expansion times larger is added. Sub-filter i has
// buckets·Expansion^i buckets, buckets being capacity/BucketSize rounded up to a power of two.
//
// A Cuckoo is safe for concurrent use: one sync.RWMutex per filter lets tests and counts run in
// parallel and serializes insertions and removals (which move fingerprints between buckets).
// The zero value is not usable; make one with NewCuckoo.
type Cuckoo struct {
	mu         sync.RWMutex
	numBuckets uint64 // of the first sub-filter, a power of two
	items      uint64
	deletes    uint64
	bucketSize uint16
	maxIter    uint16
	expansion  uint16 // a power of two, or 0 for a filter that never grows
	maxFilters int
	reserve    func(uint64) error
	filters    []cuckooSub
}

// A cuckooSub is one sub-filter: buckets·bucketSize one-byte slots.
type cuckooSub struct {
	buckets uint64
	slots   []byte
}

// nextPow2 rounds n up to a power of two as RedisBloom's getNextN2 does (0 stays 0).
func nextPow2(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return 1 << bits.Len64(n-1)
}

// NewCuckoo returns an empty cuckoo filter sized for capacity items: capacity/BucketSize
// buckets (integer division) rounded up to a power of two, at least one. It fails with
// ErrInvalidParameter for options out of range and ErrTooLarge for a filter beyond this
// machine's memory or RedisBloom's 2^56 buckets.
func NewCuckoo(capacity uint64, opts *CuckooOptions) (*Cuckoo, error) {
	var o CuckooOptions
	if opts != nil {
		o = *opts
	}
	if o.BucketSize == 0 {
		o.BucketSize = CuckooDefaultBucketSize
	}
	if o.MaxIterations == 0 {
		o.MaxIterations = CuckooDefaultMaxIterations
	}
	if o.Expansion == 0 {
		o.Expansion = CuckooDefaultExpansion
	}
	if o.MaxFilters == 0 {
		o.MaxFilters = CuckooDefaultMaxFilters
	}
	switch {
	case o.BucketSize > CuckooMaxBucketSize:
		return nil, fmt.Errorf("%w: bucket size %d is not in [1, %d]", ErrInvalidParameter, o.BucketSize, CuckooMaxBucketSize)
	case o.Expansion > CuckooMaxExpansion:
		return nil, fmt.Errorf("%w: expansion %d is not in [0, %d]", ErrInvalidParameter, o.Expansion, CuckooMaxExpansion)
	case o.MaxFilters < 1 || o.MaxFilters > CuckooMaxFilters:
		return nil, fmt.Errorf("%w: max filters %d is not in [1, %d]", ErrInvalidParameter, o.MaxFilters, CuckooMaxFilters)
	}
	c := &Cuckoo{
		numBuckets: max(1, nextPow2(capacity/uint64(o.BucketSize))),
		bucketSize: o.BucketSize,
		maxIter:    o.MaxIterations,
		expansion:  uint16(nextPow2(uint64(o.Expansion))),
		maxFilters: o.MaxFilters,
		reserve:    o.Reserve,
	}
	if o.NonScaling {
		c.expansion = 0
	}
	if c.numBuckets > CuckooMaxBuckets {
		return nil, fmt.Errorf("%w: %d buckets is more than %d", ErrTooLarge, c.numBuckets, uint64(CuckooMaxBuckets))
	}
	if err := c.grow(); err != nil {
		return nil, err
	}
	return c, nil
}

// subBuckets returns the number of buckets of sub-filter i, numBuckets·expansion^i, or false
// when that passes 2^56-1 (RedisBloom's CuckooFilter_Grow refuses the same). Filters made here
// have a power-of-two expansion; one restored from a RedisBloom header may have any.
func subBuckets(numBuckets uint64, expansion uint16, i int) (uint64, bool) {
	if i == 0 || expansion == 1 {
		return numBuckets, true
	}
	if expansion == 0 {
		return 0, false // pow(0, i) is 0: RedisBloom refuses such a sub-filter too
	}
	n := numBuckets
	for range i {
		if n > CuckooMaxBuckets/uint64(expansion) {
			return 0, false
		}
		n *= uint64(expansion)
	}
	return n, true
}

// grow adds a sub-filter. c.mu must be held (or c unpublished).
func (c *Cuckoo) grow() error {
	n := len(c.filters)
	if n >= CuckooMaxFilters {
		return fmt.Errorf("%w: %d sub-filters", ErrFull, n)
	}
	buckets, ok := subBuckets(c.numBuckets, c.expansion, n)
	if !ok {
		return fmt.Errorf("%w: sub-filter %d would pass %d buckets", ErrTooLarge, n, uint64(CuckooMaxBuckets))
	}
	size := buckets * uint64(c.bucketSize)
	if buckets > (1<<63)/uint64(c.bucketSize) {
		return fmt.Errorf("%w: sub-filter %d of %d buckets", ErrTooLarge, n, buckets)
	}
	if err := checkAlloc(size); err != nil {
		return err
	}
	if c.reserve != nil {
		if err := c.reserve(size); err != nil {
			return fmt.Errorf("bloom: growing a cuckoo filter: %w", err)
		}
	}
	c.filters = append(c.filters, cuckooSub{buckets: buckets, slots: make([]byte, size)})
	return nil
}

// cuckooKey is an item's fingerprint and its two bucket hashes.
type cuckooKey struct {
	h1, h2 uint64
	fp     byte
}

func altHash(fp byte, h uint64) uint64 { return h ^ uint64(fp)*0x5bd1e995 }

func cuckooLookup(key []byte) cuckooKey {
	h := hash.MurmurHash64A(key, 0)
	fp := byte(h%255 + 1)
	return cuckooKey{h1: h, h2: altHash(fp, h), fp: fp}
}

// bucket returns the slots of the bucket h selects in s. RedisBloom computes the slot offset in
// 32 bits (SubCF_GetIndex returns uint32_t), which only matters past 4 GiB of slots; it is
// repeated here so that such filters place fingerprints where RedisBloom does.
func (c *Cuckoo) bucket(s *cuckooSub, h uint64) []byte {
	off := uint64(uint32((h % s.buckets) * uint64(c.bucketSize)))
	return s.slots[off : off+uint64(c.bucketSize)]
}

func indexOf(b []byte, fp byte) int {
	for i, v := range b {
		if v == fp {
			return i
		}
	}
	return -1
}

func countOf(b []byte, fp byte) uint64 {
	n := uint64(0)
	for _, v := range b {
		if v == fp {
			n++
		}
	}
	return n
}

// freeSlot returns the index in s.slots of a free slot in bucket h1 or else h2, or -1.
func (c *Cuckoo) freeSlot(s *cuckooSub, h1, h2 uint64) int64 {
	for _, h := range [2]uint64{h1, h2} {
		off := int64(uint32((h % s.buckets) * uint64(c.bucketSize)))
		if i := indexOf(s.slots[off:off+int64(c.bucketSize)], 0); i >= 0 {
			return off + int64(i)
		}
	}
	return -1
}

func (c *Cuckoo) contains(k cuckooKey) bool {
	for i := range c.filters {
		s := &c.filters[i]
		if indexOf(c.bucket(s, k.h1), k.fp) >= 0 || indexOf(c.bucket(s, k.h2), k.fp) >= 0 {
			return true
		}
	}
	return false
}

// insert places k's fingerprint as RedisBloom's CuckooFilter_InsertFP does.
func (c *Cuckoo) insert(k cuckooKey) error {
	for {
		for i := len(c.filters) - 1; i >= 0; i-- {
			s := &c.filters[i]
			if j := c.freeSlot(s, k.h1, k.h2); j >= 0 {
				s.slots[j] = k.fp
				c.items++
				return nil
			}
		}
		if c.kickInsert(&c.filters[len(c.filters)-1], k) {
			c.items++
			return nil
		}
		if c.expansion == 0 {
			return ErrFull
		}
		if len(c.filters) >= c.maxFilters {
			return fmt.Errorf("%w: %d sub-filters", ErrFull, len(c.filters))
		}
		if err := c.grow(); err != nil {
			return err
		}
	}
}

// kickInsert moves fingerprints between buckets of s to make room for k, undoing every move if
// MaxIterations kicks find no free slot (Filter_KOInsert).
func (c *Cuckoo) kickInsert(s *cuckooSub, k cuckooKey) bool {
	bs := uint64(c.bucketSize)
	fp := k.fp
	victim := uint64(0)
	ii := k.h1 % s.buckets
	for range c.maxIter {
		at := ii*bs + victim
		s.slots[at], fp = fp, s.slots[at]
		ii = altHash(fp, ii) % s.buckets
		if j := indexOf(s.slots[ii*bs:ii*bs+bs], 0); j >= 0 {
			s.slots[ii*bs+uint64(j)] = fp
			return true
		}
		victim = (victim + 1) % bs
	}
	for range c.maxIter {
		victim = (victim + bs - 1) % bs
		ii = altHash(fp, ii) % s.buckets
		at := ii*bs + victim
		s.slots[at], fp = fp, s.slots[at]
	}
	return false
}

// Add inserts key, even if it may be present already (a key added twice is counted twice and
// must be removed twice). It fails with ErrFull when there is no room and the filter may not
// grow (NonScaling, or MaxFilters reached), or with the error of the Reserve hook or ErrTooLarge
// when growing is refused; the filter is then unchanged.
func (c *Cuckoo) Add(key []byte) error {
	k := cuckooLookup(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.insert(k)
}

// AddUnique inserts key unless it may be present already, and reports whether it inserted it
// (RedisBloom's CF.ADDNX). Errors are Add's.
func (c *Cuckoo) AddUnique(key []byte) (bool, error) {
	k := cuckooLookup(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.contains(k) {
		return false, nil
	}
	if err := c.insert(k); err != nil {
		return false, err
	}
	return true, nil
}

// AddString and AddUniqueString add the UTF-8 bytes of s.
func (c *Cuckoo) AddString(s string) error               { return c.Add([]byte(s)) }
func (c *Cuckoo) AddUniqueString(s string) (bool, error) { return c.AddUnique([]byte(s)) }

// Test reports whether key may be present: false means it was never added, or was removed as
// many times as it was added (or a colliding key's removal took its fingerprint; see Remove).
func (c *Cuckoo) Test(key []byte) bool {
	k := cuckooLookup(key)
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.contains(k)
}

// TestString tests the UTF-8 bytes of s.
func (c *Cuckoo) TestString(s string) bool { return c.Test([]byte(s)) }

// Count returns the number of slots holding key's fingerprint in its two buckets of every
// sub-filter: at least the number of times key was added and not removed, more when other keys
// share its fingerprint and buckets. It is RedisBloom's CF.COUNT.
func (c *Cuckoo) Count(key []byte) uint64 {
	k := cuckooLookup(key)
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := uint64(0)
	for i := range c.filters {
		s := &c.filters[i]
		n += countOf(c.bucket(s, k.h1), k.fp) + countOf(c.bucket(s, k.h2), k.fp)
	}
	return n
}

// Remove removes one copy of key's fingerprint, looking in the newest sub-filter first, and
// reports whether it found one. Remove only keys that were added: removing a never-added key that
// tests present (a false positive) takes away another key's fingerprint and can make that key
// test absent. When the filter has several sub-filters and the removals since the last compaction
// pass a tenth of the items, Remove compacts the filter (see Compact), as RedisBloom does.
func (c *Cuckoo) Remove(key []byte) bool {
	k := cuckooLookup(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.filters) - 1; i >= 0; i-- {
		s := &c.filters[i]
		b := c.bucket(s, k.h1)
		j := indexOf(b, k.fp)
		if j < 0 {
			b = c.bucket(s, k.h2)
			j = indexOf(b, k.fp)
		}
		if j < 0 {
			continue
		}
		b[j] = 0
		c.items--
		c.deletes++
		if len(c.filters) > 1 && float64(c.deletes) > float64(c.items)*0.10 {
			c.compact(false)
		}
		return true
	}
	return false
}

// RemoveString removes the UTF-8 bytes of s.
func (c *Cuckoo) RemoveString(s string) bool { return c.Remove([]byte(s)) }

// AddMany adds keys in order, as Add does, under one acquisition of the lock, and stops at the
// first error; it returns how many keys it added.
func (c *Cuckoo) AddMany(keys [][]byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, key := range keys {
		if err := c.insert(cuckooLookup(key)); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// AddUniqueMany adds each key not present yet, in order, appending to dst whether it did; it
// stops at the first error, with dst holding the results of the keys before it.
func (c *Cuckoo) AddUniqueMany(dst []bool, keys [][]byte) ([]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range keys {
		k := cuckooLookup(key)
		if c.contains(k) {
			dst = append(dst, false)
			continue
		}
		if err := c.insert(k); err != nil {
			return dst, err
		}
		dst = append(dst, true)
	}
	return dst, nil
}

// TestMany appends Test's answer for each key to dst, under one acquisition of the read lock.
func (c *Cuckoo) TestMany(dst []bool, keys [][]byte) []bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, key := range keys {
		dst = append(dst, c.contains(cuckooLookup(key)))
	}
	return dst
}

// RemoveMany removes one copy of each key, as Remove does, and returns how many it found.
func (c *Cuckoo) RemoveMany(keys [][]byte) int {
	n := 0
	for _, key := range keys {
		if c.Remove(key) {
			n++
		}
	}
	return n
}

// Compact moves fingerprints from newer sub-filters into free slots of older ones, and frees
// the newest sub-filters that end up empty; it resets the count of removals. It is RedisBloom's
// CF.COMPACT (which goes on past a sub-filter it cannot empty).
func (c *Cuckoo) Compact() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compact(true)
}

// compact is CuckooFilter_Compact: cont says whether to go on to older sub-filters after one
// that could not be emptied.
func (c *Cuckoo) compact(cont bool) {
	for i := len(c.filters) - 1; i > 0; i-- {
		if !c.compactOne(i) && !cont {
			break
		}
	}
	c.deletes = 0
}

// compactOne tries to move every fingerprint of sub-filter fi into an older one, and frees fi
// if all moved and it is the newest. It reports whether all moved.
func (c *Cuckoo) compactOne(fi int) bool {
	s := &c.filters[fi]
	bs := uint64(c.bucketSize)
	ok := true
	for b := uint64(0); b < s.buckets; b++ {
		for j := uint64(0); j < bs; j++ {
			fp := s.slots[b*bs+j]
			if fp == 0 {
				continue
			}
			// Older sub-filters have fewer buckets, a divisor of this one's, so the bucket
			// index stands in for the item's hash.
			moved := false
			for k := 0; k < fi; k++ {
				t := &c.filters[k]
				if at := c.freeSlot(t, b, altHash(fp, b)); at >= 0 {
					t.slots[at] = fp
					s.slots[b*bs+j] = 0
					moved = true
					break
				}
			}
			ok = ok && moved
		}
	}
	if ok && fi == len(c.filters)-1 {
		c.filters[fi] = cuckooSub{}
		c.filters = c.filters[:fi]
	}
	return ok
}

// CuckooInfo describes a cuckoo filter: what CF.INFO and the CF.SCANDUMP header report.
type CuckooInfo struct {
	Buckets       uint64 // buckets of the first sub-filter
	Filters       int    // sub-filters
	Items         uint64 // fingerprints inserted and not removed
	Deletes       uint64 // removals since the last compaction
	BucketSize    uint16
	MaxIterations uint16
	Expansion     uint16 // 0 for a filter that never grows
	Bytes         uint64 // slots of all sub-filters, one byte each
}

// Info describes c.
func (c *Cuckoo) Info() CuckooInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.info()
}

func (c *Cuckoo) info() CuckooInfo {
	return CuckooInfo{Buckets: c.numBuckets, Filters: len(c.filters), Items: c.items, Deletes: c.deletes,
		BucketSize: c.bucketSize, MaxIterations: c.maxIter, Expansion: c.expansion, Bytes: c.bytes()}
}

func (c *Cuckoo) bytes() uint64 {
	n := uint64(0)
	for i := range c.filters {
		n += uint64(len(c.filters[i].slots))
	}
	return n
}

// Size returns RedisBloom's CF.INFO Size: the filter's structures as RedisBloom lays them out
// (40 bytes, 16 per sub-filter) plus every slot.
func (c *Cuckoo) Size() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return 40 + 16*uint64(len(c.filters)) + c.bytes()
}

// NumFilters returns the number of sub-filters.
func (c *Cuckoo) NumFilters() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.filters)
}

// FilterBytes returns the number of slots (bytes) of each sub-filter, oldest first.
func (c *Cuckoo) FilterBytes() []uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]uint64, len(c.filters))
	for i := range c.filters {
		out[i] = uint64(len(c.filters[i].slots))
	}
	return out
}

// ReadSlots copies slots of sub-filter i from offset off into p and returns how many it copied
// (fewer than len(p) at the end of the sub-filter, 0 past it or for a sub-filter that does not
// exist). Slot j of bucket b is at offset b·BucketSize+j; a slot holds a fingerprint, 0 if free.
func (c *Cuckoo) ReadSlots(i int, off uint64, p []byte) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if i < 0 || i >= len(c.filters) || off >= uint64(len(c.filters[i].slots)) {
		return 0
	}
	return copy(p, c.filters[i].slots[off:])
}

// WriteSlots overwrites slots of sub-filter i from offset off with p. It fails with
// ErrInvalidParameter, changing nothing, unless the whole of p fits in the sub-filter. It changes
// no count: it is for restoring a filter whose counts came with it (NewCuckooFromInfo).
func (c *Cuckoo) WriteSlots(i int, off uint64, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.filters) {
		return fmt.Errorf("%w: no sub-filter %d of %d", ErrInvalidParameter, i, len(c.filters))
	}
	s := c.filters[i].slots
	if off > uint64(len(s)) || uint64(len(p)) > uint64(len(s))-off {
		return fmt.Errorf("%w: %d bytes at %d pass the %d of sub-filter %d", ErrInvalidParameter, len(p), off, len(s), i)
	}
	copy(s[off:], p)
	return nil
}

// CheckCuckooInfo reports whether info describes a filter RedisBloom would accept (its
// CuckooFilter_ValidateIntegrity: bucket size 1..255, buckets a power of two below 2^56,
// 1..65535 sub-filters, max iterations at least 1, a single sub-filter when expansion is 0) and
// whose sub-filters' sizes are representable. It returns the total slot bytes. Bytes is ignored.
func CheckCuckooInfo(info CuckooInfo) (uint64, error) {
	switch {
	case info.BucketSize == 0 || info.BucketSize > CuckooMaxBucketSize:
		return 0, corruptf("bucket size %d is not in [1, %d]", info.BucketSize, CuckooMaxBucketSize)
	case info.Buckets == 0 || info.Buckets > CuckooMaxBuckets || info.Buckets&(info.Buckets-1) != 0:
		return 0, corruptf("%d buckets is not a power of two in [1, 2^56)", info.Buckets)
	case info.Filters < 1 || info.Filters > CuckooMaxFilters:
		return 0, corruptf("%d sub-filters is not in [1, %d]", info.Filters, CuckooMaxFilters)
	case info.MaxIterations == 0:
		return 0, corruptf("max iterations is 0")
	case info.Expansion == 0 && info.Filters > 1:
		return 0, corruptf("%d sub-filters for a filter that does not grow", info.Filters)
	}
	total := uint64(0)
	for i := range info.Filters {
		b, ok := subBuckets(info.Buckets, info.Expansion, i)
		if !ok {
			return 0, corruptf("sub-filter %d would pass 2^56 buckets", i)
		}
		n := b * uint64(info.BucketSize)
		if total+n < total || total+n > 1<<62 {
			return 0, fmt.Errorf("%w: more than 2^62 slots", ErrTooLarge)
		}
		total += n
	}
	return total, nil
}

// NewCuckooFromInfo returns a filter with info's parameters and counts and every slot free, to
// be filled with WriteSlots (restoring a CF.SCANDUMP or a file). The sizes are checked
// (CheckCuckooInfo, errors wrapping ErrCorrupt) and the memory needed against this machine's
// and opts.Reserve (called once, with the total) before anything is allocated. Of opts only
// MaxFilters and Reserve are used; MaxFilters must be at least info.Filters.
func NewCuckooFromInfo(info CuckooInfo, opts *CuckooOptions) (*Cuckoo, error) {
	total, err := CheckCuckooInfo(info)
	if err != nil {
		return nil, err
	}
	var o CuckooOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxFilters == 0 {
		o.MaxFilters = CuckooDefaultMaxFilters
	}
	if o.MaxFilters < info.Filters {
		o.MaxFilters = info.Filters
	}
	if err := checkAlloc(total); err != nil {
		return nil, err
	}
	if o.Reserve != nil {
		if err := o.Reserve(total); err != nil {
			return nil, fmt.Errorf("bloom: restoring a cuckoo filter: %w", err)
		}
	}
	c := &Cuckoo{numBuckets: info.Buckets, items: info.Items, deletes: info.Deletes, bucketSize: info.BucketSize,
		maxIter: info.MaxIterations, expansion: info.Expansion, maxFilters: min(o.MaxFilters, CuckooMaxFilters),
		reserve: o.Reserve, filters: make([]cuckooSub, info.Filters)}
	for i := range c.filters {
		b, _ := subBuckets(info.Buckets, info.Expansion, i)
		c.filters[i] = cuckooSub{buckets: b, slots: make([]byte, b*uint64(info.BucketSize))}
	}
	return c, nil
}

// SetReserve replaces the hook called before each later growth (see CuckooOptions.Reserve).
func (c *Cuckoo) SetReserve(reserve func(bytes uint64) error) {
	c.mu.Lock()
	c.reserve = reserve
	c.mu.Unlock()
}

// SetMaxFilters changes the number of sub-filters past which insertions fail instead of growing
// (1..65535).
func (c *Cuckoo) SetMaxFilters(n int) {
	c.mu.Lock()
	c.maxFilters = max(1, min(n, CuckooMaxFilters))
	c.mu.Unlock()
}

// Clone returns a deep copy of c, taken under its read lock: a consistent instant of it.
func (c *Cuckoo) Clone() *Cuckoo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d := &Cuckoo{numBuckets: c.numBuckets, items: c.items, deletes: c.deletes, bucketSize: c.bucketSize,
		maxIter: c.maxIter, expansion: c.expansion, maxFilters: c.maxFilters, reserve: c.reserve,
		filters: make([]cuckooSub, len(c.filters))}
	for i, s := range c.filters {
		d.filters[i] = cuckooSub{buckets: s.buckets, slots: append([]byte(nil), s.slots...)}
	}
	return d
}

// Equal reports whether c and d have the same parameters, counts and slots.
func (c *Cuckoo) Equal(d *Cuckoo) bool {
	if c == d {
		return true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	d.mu.RLock()
	defer d.mu.RUnlock()
	if c.info() != d.info() {
		return false
	}
	for i := range c.filters {
		if string(c.filters[i].slots) != string(d.filters[i].slots) {
			return false
		}
	}
	return true
}
