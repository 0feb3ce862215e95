package redisbloom

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"

	"github.com/bloomd/bloom"
)

// MaxChunkSize is the largest chunk BF.SCANDUMP returns (RedisBloom's MAX_SCANDUMP_SIZE, 16 MiB).
const MaxChunkSize = 16 << 20

// Sizes of the packed header structs (RedisBloom's dumpedChainHeader and dumpedChainLink).
const (
	headerFixedSize = 20
	headerLinkSize  = 53
)

// MaxHeaderSize is the length of the largest header LoadHeader accepts: one of MaxFilters links.
const MaxHeaderSize = headerFixedSize + headerLinkSize*MaxFilters

// maxLinkBytes bounds one link's bit array to the core library's limit of 2^56 bits.
const maxLinkBytes = 1 << 53

// ScanDump returns what BF.SCANDUMP key iter replies: for iter 0, the header and the next
// iterator 1; for an iterator inside the chain's bit arrays (byte offset iter-1 of their
// concatenation, oldest link first), the bytes from there to the end of that link, at most
// MaxChunkSize, and iter plus their length; past the end, or for a negative iter, 0 and nil
// (which RedisBloom sends as an empty bulk string). A chunk never spans two links.
//
// Each returned pair is exactly what BF.LOADCHUNK key next data takes. ScanDump is safe to call
// during Adds; a dump taken while items are being added may mix bits from before and after them.
func (c *Chain) ScanDump(iter int64) (next int64, data []byte) {
	links := *c.links.Load()
	if iter == 0 {
		return 1, c.appendHeader(nil, links)
	}
	l, off, ok := linkAt(links, iter)
	if !ok {
		return 0, nil
	}
	n := min(MaxChunkSize, l.bytes()-off)
	data = make([]byte, n)
	l.f.ReadAt(data, int64(off)) // cannot fail: [off, off+n) lies inside the link
	return iter + int64(n), data
}

// ScanDumpInto is ScanDump with the chunk read into buf when it is large enough (it is then
// data's backing array), so that a caller going through a large filter reuses one buffer
// instead of allocating each chunk. Iterator 0 still returns a newly allocated header.
func (c *Chain) ScanDumpInto(iter int64, buf []byte) (next int64, data []byte) {
	if iter == 0 {
		return c.ScanDump(0)
	}
	links := *c.links.Load()
	l, off, ok := linkAt(links, iter)
	if !ok {
		return 0, nil
	}
	n := min(MaxChunkSize, l.bytes()-off)
	if uint64(cap(buf)) >= n {
		data = buf[:n]
	} else {
		data = make([]byte, n)
	}
	l.f.ReadAt(data, int64(off)) // cannot fail: [off, off+n) lies inside the link
	return iter + int64(n), data
}

// linkAt finds the link holding byte iter-1 of the concatenated bit arrays and the offset of
// that byte in the link (RedisBloom's getLinkPos).
func linkAt(links []*link, iter int64) (l *link, off uint64, ok bool) {
	if iter < 1 {
		return nil, 0, false
	}
	pos := uint64(iter - 1)
	for _, l := range links {
		if pos < l.bytes() {
			return l, pos, true
		}
		pos -= l.bytes()
	}
	return nil, 0, false
}

// Header returns the BF.SCANDUMP header of the chain (iterator 1): 20 + 53·NumFilters bytes.
func (c *Chain) Header() []byte { return c.appendHeader(nil, *c.links.Load()) }

// appendHeader appends the packed little-endian header of links:
//
//	chain: uint64 items, uint32 nfilters, uint32 options, uint32 growth
//	link:  uint64 bytes, uint64 bits, uint64 items, float64 error, float64 bpe,
//	       uint32 hashes, uint64 capacity, uint8 n2
//
// The total is the sum of the link counts read here, so a header taken during Adds is still
// consistent (RedisBloom refuses one whose counts do not add up).
func (c *Chain) appendHeader(b []byte, links []*link) []byte {
	sizes := make([]uint64, len(links))
	var total uint64
	for i, l := range links {
		sizes[i] = l.size.Load()
		total += sizes[i]
	}
	le := binary.LittleEndian
	b = le.AppendUint64(b, total)
	b = le.AppendUint32(b, uint32(len(links)))
	b = le.AppendUint32(b, c.options)
	b = le.AppendUint32(b, c.growth)
	for i, l := range links {
		b = le.AppendUint64(b, l.bytes())
		b = le.AppendUint64(b, l.bytes()*8)
		b = le.AppendUint64(b, sizes[i])
		b = le.AppendUint64(b, math.Float64bits(l.errorRate))
		b = le.AppendUint64(b, math.Float64bits(l.bpe))
		b = le.AppendUint32(b, uint32(l.f.K()))
		b = le.AppendUint64(b, l.capacity)
		b = append(b, l.n2)
	}
	return b
}

// headerLink is one decoded link record of a header.
type headerLink struct {
	bytes, bits, size uint64
	errorRate, bpe    float64
	hashes            uint32
	capacity          uint64
	n2                uint8
}

// LoadHeader returns a chain with zeroed bit arrays from a BF.SCANDUMP header (the data of
// BF.LOADCHUNK key 1 data on a missing key); its bits are then filled by LoadChunk.
//
// It validates the header completely before allocating anything: every check RedisBloom 2.6
// makes (length 20 + 53·nfilters with nfilters ≥ 1, option bits, each link's error rate in
// (0, 1), bits = 8·bytes ≠ 0, hashes = ⌈ln2·bpe⌉, n2, the items adding up), plus those a server
// needs: at most MaxFilters links, whole 64-bit words, no link above 2^56 bits, a capacity of at
// least 1, and only the option sets commands create (FORCE64|NOROUND, optionally NO_SCALING).
// Failures wrap ErrBadData (and so bloom.ErrCorrupt) and say what is wrong. A valid header
// whose bit arrays cannot fit in memory fails with an error wrapping bloom.ErrTooLarge, and the
// Reserve hook of opts, called with the chain's Size, can refuse it with its own error.
func LoadHeader(data []byte, opts *Options) (*Chain, error) {
	h, err := ParseHeader(data)
	if err != nil {
		return nil, err
	}
	var memory uint64 = chainOverhead
	for _, l := range h.Links {
		// At most 2048·(64 + 2^53), which can pass 2^64: saturate, so the hook and the
		// memory check see a size too large rather than a wrapped small one.
		memory = min(memory, math.MaxUint64-linkOverhead-l.Bytes) + linkOverhead + l.Bytes
	}
	c := &Chain{growth: h.Expansion, options: h.Options}
	if opts != nil && opts.Reserve != nil {
		// The hook first: its refusal says more (what limit, how much is in use) than the
		// check against the machine's memory below.
		c.reserve = opts.Reserve
		if err := c.reserve(memory); err != nil {
			return nil, err
		}
	}
	if err := bloom.CheckAlloc(memory); err != nil {
		return nil, fmt.Errorf("redisbloom: loading a header of %d sub-filters: %w", len(h.Links), err)
	}
	chain := make([]*link, len(h.Links))
	for i, h := range h.Links {
		f, err := bloom.NewWithParams(h.Bits, int(h.Hashes), bloom.RedisBloom64)
		if err != nil {
			return nil, fmt.Errorf("redisbloom: loading sub-filter %d: %w", i, err)
		}
		l := &link{f: f, capacity: h.Capacity, errorRate: h.ErrorRate, bpe: h.BitsPerEntry, n2: h.N2}
		l.size.Store(h.Items)
		chain[i] = l
	}
	c.links.Store(&chain)
	return c, nil
}

// validate checks one link record: RedisBloom's bloom_validate_integrity first, then what this
// package needs to hold the link in a bloom.Filter.
func (h *headerLink) validate() error {
	switch {
	case !(h.errorRate > 0 && h.errorRate < 1):
		return fmt.Errorf("error rate %g is not in (0, 1)", h.errorRate)
	case h.n2 > 63:
		return fmt.Errorf("n2 %d is above 63", h.n2)
	case h.n2 != 0 && h.bits < 1<<h.n2:
		return fmt.Errorf("%d bits are fewer than 2^n2 = 2^%d", h.bits, h.n2)
	case h.bits == 0:
		return fmt.Errorf("0 bits")
	case h.bytes > maxLinkBytes:
		return fmt.Errorf("%d bytes exceed the limit of 2^53", h.bytes)
	case h.bits != h.bytes*8:
		return fmt.Errorf("%d bits for %d bytes (want %d)", h.bits, h.bytes, h.bytes*8)
	case h.bytes%8 != 0:
		return fmt.Errorf("%d bytes is not a whole number of 64-bit words", h.bytes)
	case h.n2 != 0 && h.bits != 1<<h.n2:
		return fmt.Errorf("power-of-two sub-filters (n2 = %d) are supported only when bits = 2^n2, not %d", h.n2, h.bits)
	case !(h.bpe > 0 && h.bpe <= math.MaxFloat64):
		return fmt.Errorf("bits per entry %g is not a positive number", h.bpe)
	case math.Ceil(0.693147180559945*h.bpe) != float64(h.hashes):
		return fmt.Errorf("%d hashes for %g bits per entry (want %g)", h.hashes, h.bpe, math.Ceil(0.693147180559945*h.bpe))
	case h.hashes > bloom.MaxK:
		return fmt.Errorf("%d hashes exceed the limit of %d", h.hashes, bloom.MaxK)
	case h.capacity == 0:
		return fmt.Errorf("capacity 0")
	}
	return nil
}

// LoadChunk writes one BF.SCANDUMP chunk into the chain, as BF.LOADCHUNK key iter data does on
// an existing key: the data's bytes go to byte offsets iter-1-len(data) onwards of the
// concatenated bit arrays, and must lie inside one link. Chunks may be loaded in any order,
// repeatedly, or not at all (their bytes stay zero). Errors are ErrBadData for iter ≤ 0 or
// iter < len(data), ErrNoLink when the start is outside every link, ErrChunkTooBig when the
// data runs past the end of its link; the chain is then unchanged.
//
// LoadChunk is safe to call during Adds and Exists (each 64-bit word is replaced atomically),
// though what those report for items whose bits are being loaded is then unspecified.
func (c *Chain) LoadChunk(iter int64, data []byte) error {
	if iter <= 0 || iter < int64(len(data)) {
		return fmt.Errorf("%w: chunk of %d bytes at iterator %d", ErrBadData, len(data), iter)
	}
	start := iter - int64(len(data))
	l, off, ok := linkAt(*c.links.Load(), start)
	if !ok {
		return fmt.Errorf("%w: chunk of %d bytes at iterator %d starts at byte %d", ErrNoLink, len(data), iter, start-1)
	}
	if uint64(len(data)) > l.bytes()-off {
		return fmt.Errorf("%w: chunk of %d bytes at offset %d of a %d-byte sub-filter", ErrChunkTooBig, len(data), off, l.bytes())
	}
	if _, err := l.f.WriteAt(data, int64(off)); err != nil {
		return fmt.Errorf("redisbloom: %w", err) // unreachable: the bounds were checked above
	}
	return nil
}

// Chunks returns the chain's complete dump as the sequence BF.SCANDUMP produces: (1, header),
// then (iterator, chunk) for every chunk, each pair ready for BF.LOADCHUNK. The header and chunks
// all describe the links the chain had when the sequence began.
func (c *Chain) Chunks() iter.Seq2[int64, []byte] {
	return func(yield func(int64, []byte) bool) {
		links := *c.links.Load()
		if !yield(1, c.appendHeader(nil, links)) {
			return
		}
		it := int64(1)
		for _, l := range links {
			for off := uint64(0); off < l.bytes(); {
				n := min(MaxChunkSize, l.bytes()-off)
				data := make([]byte, n)
				l.f.ReadAt(data, int64(off))
				off += n
				it += int64(n)
				if !yield(it, data) {
					return
				}
			}
		}
	}
}

// LoadChunks builds a chain from a sequence of (iterator, data) pairs as BF.LOADCHUNK receives
// them: the first must be the header (iterator 1), the others chunks, in any order. It returns
// the first error of LoadHeader or LoadChunk, and never a partly loaded chain alongside it.
// Chunks that are never sent leave their bytes zero, as in RedisBloom.
func LoadChunks(chunks iter.Seq2[int64, []byte], opts *Options) (*Chain, error) {
	var c *Chain
	var err error
	for it, data := range chunks {
		if c == nil {
			if it != 1 {
				return nil, fmt.Errorf("%w: the first chunk has iterator %d, not 1 (the header)", ErrBadData, it)
			}
			if c, err = LoadHeader(data, opts); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.LoadChunk(it, data); err != nil {
			return nil, err
		}
	}
	if c == nil {
		return nil, fmt.Errorf("%w: no header", ErrBadData)
	}
	return c, nil
}
