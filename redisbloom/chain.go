package redisbloom

import (
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bloomd/bloom"
)

// Defaults of RedisBloom 2.6 for filters that BF.ADD, BF.MADD and BF.INSERT create implicitly.
const (
	DefaultCapacity  = 100
	DefaultErrorRate = 0.01
	DefaultExpansion = 2
)

// TighteningRatio is the factor by which each new sub-filter of a scaling chain tightens the
// error rate of the one before it; the first sub-filter of a scaling chain already gets
// errorRate·TighteningRatio.
const TighteningRatio = 0.5

// MaxFilters bounds the number of sub-filters of a chain. RedisBloom itself cannot go past about
// 1,076: each sub-filter halves the error rate, which underflows to 0 (an invalid rate) after
// that many halvings of a rate below 1. Headers declaring more are refused as bad data.
const MaxFilters = 2048

// Memory accounting, as RedisBloom reports it in BF.INFO Size and MEMORY USAGE: the size of its
// SBChain struct, plus its SBLink struct per sub-filter, plus the bit arrays.
const (
	chainOverhead = 32
	linkOverhead  = 64
)

// RedisBloom's option bits (deps/bloom/bloom.h); every filter made by a command has
// FORCE64|NOROUND, plus NO_SCALING when non-scaling. They are stored in dump headers.
const (
	optNoRound    = 1
	optEntsIsBits = 2
	optForce64    = 4
	optNoScaling  = 8
	optAll        = optNoRound | optEntsIsBits | optForce64 | optNoScaling
)

// Options holds the settings of a chain that are not part of the filter itself.
// A nil *Options means no hook.
type Options struct {
	// Reserve, if not nil, is called before the chain allocates memory: with the whole Size of
	// the new chain in NewChain and LoadHeader, and with the growth of Size (the new
	// sub-filter's bytes plus 64) before Add appends a sub-filter. An error it returns is
	// returned unchanged (from Add, NewChain or LoadHeader) and nothing is allocated, which lets
	// a server enforce maxmemory. Reserve is a gate, not a ledger: when it returns nil the
	// allocation can still fail (as bloom.ErrTooLarge, when the machine cannot hold it), and the
	// memory in use is always Size. It is called with the chain's growth lock held, never
	// concurrently for one chain, and must not call back into the chain.
	Reserve func(bytes uint64) error
}

// A Chain is RedisBloom 2.6's scalable Bloom filter (SBChain), bit for bit: a list of classic
// sub-filters ("links") under the bloom.RedisBloom64 scheme, sized by bloom.RedisBloomSize, of
// which only the newest receives new items. Link i of a chain made with capacity C, error rate
// E and expansion g holds C·g^i items at error rate E·0.5^(i+1) (E for a non-scaling chain).
//
// A Chain is safe for concurrent use. Add and Exists take no lock: they hash once, probe each
// link with atomic loads, and an Add sets its bits with atomic ORs and counts itself with
// atomic operations on the newest link, so adds on both cores of a server proceed in parallel.
// Only appending a link takes the chain's lock. Used from one goroutine, a Chain reproduces
// RedisBloom exactly: same links, same counts, same bits, same BF.SCANDUMP bytes. Concurrent
// Adds of one item that is new may both report it new and both count it (as in any lock-free
// Bloom filter); Add never counts a link past its capacity.
//
// The zero Chain is not usable; make one with NewChain or LoadHeader.
type Chain struct {
	mu      sync.Mutex               // serialises appending links
	links   atomic.Pointer[[]*link]  // copy-on-write: readers load it once per call
	growth  uint32                   // expansion, stored as RedisBloom's unsigned
	options uint32                   // optForce64|optNoRound[|optNoScaling]
	reserve func(bytes uint64) error // Options.Reserve
}

// A link is one sub-filter with RedisBloom's bookkeeping. Everything but size is fixed once the
// link is published.
type link struct {
	f         *bloom.Filter
	capacity  uint64  // RedisBloom's "entries": items the link takes before the chain grows
	errorRate float64 // the link's own, tightened, error rate
	bpe       float64 // bits per entry, as computed at creation (stored in dumps)
	n2        uint8   // RedisBloom's power-of-two exponent; 0 except in foreign headers
	_         [64]byte
	size      atomic.Uint64 // items added to this link; on its own cache line (written by adds)
	_         [56]byte
}

func (l *link) bytes() uint64 { return uint64(l.f.ByteLen()) }

// tryReserve takes one of the link's free item slots, or reports that it is full.
func (l *link) tryReserve() bool {
	for {
		n := l.size.Load()
		if n >= l.capacity {
			return false
		}
		if l.size.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// NewChain returns an empty chain whose first link holds capacity items, as BF.RESERVE key
// errorRate capacity [EXPANSION expansion] [NONSCALING] makes it. The expansion is stored even
// for a non-scaling chain (RedisBloom's dumps carry it); an expansion of 0, which RedisBloom
// gets from EXPANSION values that wrap to 0 in its unsigned field, makes a chain that cannot
// grow: an Add that needs a second link fails with ErrCannotGrow.
//
// It fails with an error wrapping bloom.ErrInvalidParameter for a zero capacity or an error rate
// outside (0, 1), with one wrapping bloom.ErrTooLarge when the first link cannot fit in memory,
// and with the error of opts.Reserve unchanged.
func NewChain(capacity uint64, errorRate float64, expansion uint32, nonScaling bool, opts *Options) (*Chain, error) {
	if capacity == 0 {
		return nil, fmt.Errorf("redisbloom: capacity must be at least 1: %w", bloom.ErrInvalidParameter)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return nil, fmt.Errorf("redisbloom: error rate %g is not in (0, 1): %w", errorRate, bloom.ErrInvalidParameter)
	}
	c := &Chain{growth: expansion, options: optForce64 | optNoRound}
	if opts != nil {
		c.reserve = opts.Reserve
	}
	rate := errorRate * TighteningRatio
	if nonScaling {
		c.options |= optNoScaling
		rate = errorRate
	}
	l, fromHook, err := c.newLink(capacity, rate, chainOverhead)
	if err != nil {
		if fromHook {
			return nil, err
		}
		return nil, fmt.Errorf("redisbloom: %w", err)
	}
	c.links.Store(&[]*link{l})
	return c, nil
}

// newLink sizes a link as RedisBloom's bloom_init does, consults the Reserve hook with the
// link's bytes plus overhead, and only then allocates. fromHook tells the hook's errors, which
// callers return unchanged, from the core library's.
func (c *Chain) newLink(capacity uint64, errorRate float64, overhead uint64) (l *link, fromHook bool, err error) {
	m, k, bpe, err := bloom.RedisBloomSize(capacity, errorRate)
	if err != nil {
		return nil, false, err
	}
	if c.reserve != nil {
		if err := c.reserve(overhead + linkOverhead + m/8); err != nil {
			return nil, true, err
		}
	}
	f, err := bloom.NewWithParams(m, k, bloom.RedisBloom64)
	if err != nil {
		return nil, false, err
	}
	return &link{f: f, capacity: capacity, errorRate: errorRate, bpe: bpe}, false, nil
}

// An ItemHash is an item hashed as every chain hashes its items (bloom.RedisBloom64), and once
// PrefetchHash has used it, the item's bit positions in the chain's newest link. A caller that
// prepares an item's memory before it adds or tests the item hashes it once, with HashItem, and
// passes the hash to PrefetchHash, then to AddHash or ExistsHash, which do what Prefetch, Add and
// Exists do for the item, without computing the hash or those positions again. An ItemHash is
// not safe for concurrent use; the chains it is passed to are.
type ItemHash struct {
	h1, h2 uint64
	link   *link // the link whose k positions of the item pos[:k] holds; nil for none
	k      int
	pos    [itemPositions]uint64
}

// itemPositions is the most positions an ItemHash keeps (k of a link with error rate 1e-6 is 20).
const itemPositions = 24

// HashItem hashes item for PrefetchHash, AddHash and ExistsHash. It allocates nothing.
func HashItem(item []byte) ItemHash {
	h1, h2 := bloom.RedisBloom64.Hash(item)
	return ItemHash{h1: h1, h2: h2}
}

// Reset makes h the hash of item, as HashItem, in place.
func (h *ItemHash) Reset(item []byte) {
	h.h1, h.h2 = bloom.RedisBloom64.Hash(item)
	h.link = nil
}

// positions returns the item's positions in l, or nil when h does not hold them.
func (h *ItemHash) positions(l *link) []uint64 {
	if h.link != l {
		return nil
	}
	return h.pos[:h.k]
}

// Add adds item and reports whether it was new, as BF.ADD does: it returns false, and changes
// nothing, when any link reports the item present (it was added before, or is a false
// positive). Otherwise it adds the item to the newest link, first appending a link if the
// newest one holds its capacity; a non-scaling chain then fails with ErrFull instead. A failed
// append leaves the chain unchanged and returns the Reserve hook's error unchanged, or an error
// wrapping ErrCannotGrow. Add hashes item once and allocates nothing unless it appends a link.
func (c *Chain) Add(item []byte) (bool, error) {
	h1, h2 := bloom.RedisBloom64.Hash(item)
	return c.addHashed(h1, h2)
}

// AddHash is Add for the item that HashItem hashed to h.
func (c *Chain) AddHash(h *ItemHash) (bool, error) { return c.add(h.h1, h.h2, h) }

func (c *Chain) addHashed(h1, h2 uint64) (bool, error) { return c.add(h1, h2, nil) }

// add is Add for an item hashed to (h1, h2), with its positions in h when h is not nil.
func (c *Chain) add(h1, h2 uint64, h *ItemHash) (bool, error) {
	for {
		links := *c.links.Load()
		last := len(links) - 1
		for i := last - 1; i >= 0; i-- {
			if links[i].f.TestHashed(h1, h2) {
				return false, nil
			}
		}
		// The newest link is tested and added to in one pass over the item's bits, which
		// takes one of its free slots only when a bit is clear.
		cur := links[last]
		var pos []uint64
		if h != nil {
			pos = h.positions(cur)
		}
		added, present := cur.f.AddLocatedIf(h1, h2, pos, cur.tryReserve)
		switch {
		case added:
			return true, nil
		case present:
			return false, nil
		case c.options&optNoScaling != 0:
			return false, ErrFull
		}
		if err := c.grow(cur); err != nil {
			return false, err
		}
		// Test again: the new link is empty, so alone this changes nothing, but other
		// goroutines may have added the item meanwhile.
	}
}

// grow appends a link after full, unless another goroutine already has.
func (c *Chain) grow(full *link) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	links := *c.links.Load()
	if links[len(links)-1] != full {
		return nil
	}
	if len(links) >= MaxFilters {
		return fmt.Errorf("%w: the chain has %d sub-filters already", ErrCannotGrow, len(links))
	}
	hi, capacity := bits.Mul64(full.capacity, uint64(c.growth))
	if hi != 0 || capacity == 0 {
		return fmt.Errorf("%w: capacity %d × expansion %d is not in [1, 2^64)", ErrCannotGrow, full.capacity, c.growth)
	}
	l, fromHook, err := c.newLink(capacity, full.errorRate*TighteningRatio, 0)
	if err != nil {
		if fromHook {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCannotGrow, err)
	}
	grown := make([]*link, len(links)+1)
	copy(grown, links)
	grown[len(links)] = l
	c.links.Store(&grown)
	return nil
}

// Exists reports whether item may have been added (BF.EXISTS): true if any link reports it
// present. It takes no lock and allocates nothing.
func (c *Chain) Exists(item []byte) bool {
	h1, h2 := bloom.RedisBloom64.Hash(item)
	return c.existsHashed(h1, h2)
}

// ExistsHash is Exists for the item that HashItem hashed to h.
func (c *Chain) ExistsHash(h *ItemHash) bool { return c.exists(h.h1, h.h2, h) }

func (c *Chain) existsHashed(h1, h2 uint64) bool { return c.exists(h1, h2, nil) }

// exists is Exists for an item hashed to (h1, h2), with its positions in h when h is not nil.
func (c *Chain) exists(h1, h2 uint64, h *ItemHash) bool {
	links := *c.links.Load()
	for i := len(links) - 1; i >= 0; i-- {
		var pos []uint64
		if h != nil {
			pos = h.positions(links[i])
		}
		if links[i].f.TestLocated(h1, h2, pos) {
			return true
		}
	}
	return false
}

// Prefetch asks the CPU for the words of the newest link that an Add or Exists of item will
// read, without waiting for them: called for the items of several requests before running them,
// it lets their cache misses overlap. It changes nothing and is safe for concurrent use.
func (c *Chain) Prefetch(item []byte) {
	h1, h2 := bloom.RedisBloom64.Hash(item)
	links := *c.links.Load()
	links[len(links)-1].f.PrefetchHashed(h1, h2)
}

// PrefetchHash is Prefetch for the item that HashItem hashed to h. It keeps in h the item's
// positions in the newest link, for AddHash and ExistsHash.
func (c *Chain) PrefetchHash(h *ItemHash) {
	links := *c.links.Load()
	l := links[len(links)-1]
	h.link, h.k = l, len(l.f.PrefetchLocate(h.h1, h.h2, h.pos[:]))
}

// manyAhead is how many items ahead of the one they work on AddMany and ExistsMany prefetch:
// with k words per item, enough misses in flight to cover a memory latency.
const manyAhead = 4

// many calls each(i, h1, h2) for the hash of every item in order, until each returns false,
// having first asked the CPU for the newest link's words of the item manyAhead further on.
func (c *Chain) many(items [][]byte, each func(i int, h1, h2 uint64) bool) {
	var ring [manyAhead][2]uint64
	next := func(j int) {
		h1, h2 := bloom.RedisBloom64.Hash(items[j])
		ring[j%manyAhead] = [2]uint64{h1, h2}
		links := *c.links.Load()
		links[len(links)-1].f.PrefetchHashed(h1, h2)
	}
	for j := range min(manyAhead, len(items)) {
		next(j)
	}
	for i := range items {
		h := ring[i%manyAhead]
		if j := i + manyAhead; j < len(items) {
			next(j)
		}
		if !each(i, h[0], h[1]) {
			return
		}
	}
}

// AddMany adds items in order, as Add called for each of them does, and calls fn with the
// index and the result of each, stopping when fn returns false. The cache misses of consecutive
// items overlap, which a filter larger than the CPU's cache makes much cheaper than calling Add
// for each. It allocates nothing beyond what Add does; fn must not call back into the chain.
func (c *Chain) AddMany(items [][]byte, fn func(i int, added bool, err error) bool) {
	c.many(items, func(i int, h1, h2 uint64) bool {
		added, err := c.addHashed(h1, h2)
		return fn(i, added, err)
	})
}

// ExistsMany calls fn with the index of each item, in order, and whether it may have been added,
// as Exists reports it, overlapping the items' cache misses as AddMany does.
func (c *Chain) ExistsMany(items [][]byte, fn func(i int, present bool)) {
	c.many(items, func(i int, h1, h2 uint64) bool {
		fn(i, c.existsHashed(h1, h2))
		return true
	})
}

// Card returns the number of items added (BF.CARD, BF.INFO "Number of items inserted"): the
// sum of the links' counts. Items that tested present when added are not counted.
func (c *Chain) Card() uint64 {
	var n uint64
	for _, l := range *c.links.Load() {
		n += l.size.Load()
	}
	return n
}

// Capacity returns the sum of the links' capacities (BF.INFO "Capacity").
func (c *Chain) Capacity() uint64 {
	var n uint64
	for _, l := range *c.links.Load() {
		n += l.capacity
	}
	return n
}

// Size returns the memory RedisBloom accounts for the chain (BF.INFO "Size", MEMORY USAGE):
// 32 + 64 per link + the links' bit arrays in bytes.
func (c *Chain) Size() uint64 {
	links := *c.links.Load()
	n := uint64(chainOverhead + linkOverhead*len(links))
	for _, l := range links {
		n += l.bytes()
	}
	return n
}

// NumFilters returns the number of links (BF.INFO "Number of filters").
func (c *Chain) NumFilters() int { return len(*c.links.Load()) }

// Expansion returns the growth factor as RedisBloom stores it, a 32-bit unsigned value
// (BF.INFO "Expansion rate", which RedisBloom reports as nil for a non-scaling chain).
func (c *Chain) Expansion() uint32 { return c.growth }

// NonScaling reports whether the chain was made NONSCALING: it never grows, and Add fails with
// ErrFull once its link is full.
func (c *Chain) NonScaling() bool { return c.options&optNoScaling != 0 }

// LinkInfo describes one link of a chain, with the values RedisBloom keeps for it.
type LinkInfo struct {
	Capacity     uint64  // items the link takes before the chain grows ("entries")
	Items        uint64  // items added to this link
	Bytes        uint64  // length of the bit array; the link has Bytes·8 bits
	Hashes       int     // positions per item (k)
	ErrorRate    float64 // the link's tightened error rate
	BitsPerEntry float64 // -ln(ErrorRate)/ln²2, as stored in dumps
}

// Links returns a description of each link, oldest first.
func (c *Chain) Links() []LinkInfo {
	links := *c.links.Load()
	info := make([]LinkInfo, len(links))
	for i, l := range links {
		info[i] = LinkInfo{
			Capacity:     l.capacity,
			Items:        l.size.Load(),
			Bytes:        l.bytes(),
			Hashes:       l.f.K(),
			ErrorRate:    l.errorRate,
			BitsPerEntry: l.bpe,
		}
	}
	return info
}

// Debug returns the lines of RedisBloom's undocumented BF.DEBUG reply: "size:<items>", then
// for each link "bytes:… bits:… hashes:… hashwidth:64 capacity:… size:… ratio:…", with the
// ratio formatted as C's %g.
func (c *Chain) Debug() []string {
	links := c.Links()
	lines := make([]string, 1, 1+len(links))
	var total uint64
	for _, l := range links {
		total += l.Items
		lines = append(lines, fmt.Sprintf("bytes:%d bits:%d hashes:%d hashwidth:64 capacity:%d size:%d ratio:%s",
			l.Bytes, l.Bytes*8, l.Hashes, l.Capacity, l.Items, strconv.FormatFloat(l.ErrorRate, 'g', 6, 64)))
	}
	lines[0] = "size:" + strconv.FormatUint(total, 10)
	return lines
}
