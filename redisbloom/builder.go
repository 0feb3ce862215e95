package redisbloom

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/bloomd/bloom"
)

// A LinkHeader is one sub-filter's record as RedisBloom keeps it: in a BF.SCANDUMP header (53
// packed bytes) and, field by field, in its RDB value.
type LinkHeader struct {
	Bytes        uint64  // length of the bit array
	Bits         uint64  // the modulus m: 8·Bytes for every filter a command makes
	Items        uint64  // items added to this link
	ErrorRate    float64 // the link's tightened error rate
	BitsPerEntry float64 // -ln(ErrorRate)/ln²2
	Hashes       uint32  // k
	Capacity     uint64  // RedisBloom's "entries": items the link takes before the chain grows
	N2           uint8   // power-of-two exponent; 0 for every filter a command makes
}

// A Header is a whole BF.SCANDUMP header, decoded: the chain's fields and its links, oldest
// first.
type Header struct {
	Items     uint64 // the sum of the links' Items
	Options   uint32 // 5, or 13 for a non-scaling chain
	Expansion uint32
	Links     []LinkHeader
}

// ParseHeader decodes a BF.SCANDUMP header and checks it as LoadHeader does, without allocating
// a chain: errors wrap ErrBadData and say what is wrong.
func ParseHeader(data []byte) (Header, error) {
	if len(data) < headerFixedSize {
		return Header{}, fmt.Errorf("%w: header is %d bytes, shorter than 20", ErrBadData, len(data))
	}
	le := binary.LittleEndian
	h := Header{Items: le.Uint64(data[0:]), Options: le.Uint32(data[12:]), Expansion: le.Uint32(data[16:])}
	nfilters := le.Uint32(data[8:])
	if err := checkChain(uint64(nfilters), h.Options); err != nil {
		return Header{}, err
	}
	if want := headerFixedSize + headerLinkSize*int(nfilters); len(data) != want {
		return Header{}, fmt.Errorf("%w: header is %d bytes, want %d for %d sub-filters", ErrBadData, len(data), want, nfilters)
	}
	h.Links = make([]LinkHeader, nfilters)
	var sum uint64
	for i := range h.Links {
		p := data[headerFixedSize+headerLinkSize*i:]
		l := LinkHeader{
			Bytes:        le.Uint64(p[0:]),
			Bits:         le.Uint64(p[8:]),
			Items:        le.Uint64(p[16:]),
			ErrorRate:    math.Float64frombits(le.Uint64(p[24:])),
			BitsPerEntry: math.Float64frombits(le.Uint64(p[32:])),
			Hashes:       le.Uint32(p[40:]),
			Capacity:     le.Uint64(p[44:]),
			N2:           p[52],
		}
		if err := l.validate(); err != nil {
			return Header{}, fmt.Errorf("%w: sub-filter %d: %s", ErrBadData, i, err)
		}
		if l.Items > math.MaxUint64-sum {
			return Header{}, fmt.Errorf("%w: sub-filter item counts overflow", ErrBadData)
		}
		sum += l.Items
		h.Links[i] = l
	}
	if sum != h.Items {
		return Header{}, fmt.Errorf("%w: header counts %d items, its sub-filters %d", ErrBadData, h.Items, sum)
	}
	return h, nil
}

// Append appends h in the BF.SCANDUMP header layout.
func (h Header) Append(b []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, h.Items)
	b = le.AppendUint32(b, uint32(len(h.Links)))
	b = le.AppendUint32(b, h.Options)
	b = le.AppendUint32(b, h.Expansion)
	for _, l := range h.Links {
		b = le.AppendUint64(b, l.Bytes)
		b = le.AppendUint64(b, l.Bits)
		b = le.AppendUint64(b, l.Items)
		b = le.AppendUint64(b, math.Float64bits(l.ErrorRate))
		b = le.AppendUint64(b, math.Float64bits(l.BitsPerEntry))
		b = le.AppendUint32(b, l.Hashes)
		b = le.AppendUint64(b, l.Capacity)
		b = append(b, l.N2)
	}
	return b
}

// checkChain checks a chain's number of links and its options as LoadHeader does.
func checkChain(nfilters uint64, options uint32) error {
	switch {
	case nfilters == 0:
		return fmt.Errorf("%w: header declares 0 sub-filters", ErrBadData)
	case nfilters > MaxFilters:
		return fmt.Errorf("%w: header declares %d sub-filters (limit %d)", ErrBadData, nfilters, MaxFilters)
	case options&^optAll != 0:
		return fmt.Errorf("%w: unknown option bits %#x", ErrBadData, options)
	case options&^optNoScaling != optForce64|optNoRound:
		return fmt.Errorf("%w: options %d are not supported (want 5, or 13 for NONSCALING: 64-bit hashing without power-of-two rounding)", ErrBadData, options)
	}
	return nil
}

func (l LinkHeader) validate() error {
	h := headerLink{bytes: l.Bytes, bits: l.Bits, size: l.Items, errorRate: l.ErrorRate, bpe: l.BitsPerEntry,
		hashes: l.Hashes, capacity: l.Capacity, n2: l.N2}
	return h.validate()
}

// A Builder makes a chain one sub-filter at a time: each link's record, then its bits, then the
// next link. It serves formats that carry a link's bits right after its record, such as
// RedisBloom's RDB value, so that no link's bits are held twice while the rest is read. It does
// every check LoadHeader does, link by link, and allocates each link only once its record has
// passed them, the memory check and the Reserve hook (called with the link's bytes plus 64, and
// with 32 more for the first). A Builder is not safe for concurrent use; its chain is not
// published until Chain returns it.
type Builder struct {
	c     *Chain
	links []*link
	want  int
	items uint64
}

// NewBuilder starts a chain of links sub-filters holding items items in all, with RedisBloom's
// option bits and expansion, checked as LoadHeader checks them (errors wrap ErrBadData).
// Nothing is allocated until AddLink.
func NewBuilder(items, links uint64, options, expansion uint32, opts *Options) (*Builder, error) {
	if err := checkChain(links, options); err != nil {
		return nil, err
	}
	b := &Builder{c: &Chain{growth: expansion, options: options}, want: int(links), items: items}
	if opts != nil {
		b.c.reserve = opts.Reserve
	}
	b.links = make([]*link, 0, min(links, 64))
	return b, nil
}

// AddLink checks the next link's record and allocates it with zeroed bits, which WriteAt then
// fills. Its errors wrap ErrBadData for a record LoadHeader would refuse, bloom.ErrTooLarge
// when the link cannot fit in memory; the Reserve hook's error is returned unchanged.
func (b *Builder) AddLink(h LinkHeader) error {
	i := len(b.links)
	if i == b.want {
		return fmt.Errorf("%w: more than the %d sub-filters declared", ErrBadData, b.want)
	}
	if err := h.validate(); err != nil {
		return fmt.Errorf("%w: sub-filter %d: %s", ErrBadData, i, err)
	}
	memory := linkOverhead + h.Bytes
	if i == 0 {
		memory += chainOverhead
	}
	if b.c.reserve != nil {
		if err := b.c.reserve(memory); err != nil {
			return err
		}
	}
	if err := bloom.CheckAlloc(h.Bytes); err != nil {
		return fmt.Errorf("redisbloom: loading sub-filter %d: %w", i, err)
	}
	f, err := bloom.NewWithParams(h.Bits, int(h.Hashes), bloom.RedisBloom64)
	if err != nil {
		return fmt.Errorf("redisbloom: loading sub-filter %d: %w", i, err)
	}
	l := &link{f: f, capacity: h.Capacity, errorRate: h.ErrorRate, bpe: h.BitsPerEntry, n2: h.N2}
	l.size.Store(h.Items)
	b.links = append(b.links, l)
	return nil
}

// SetItems sets the item count of the newest link, for formats that store it after the bits
// (RedisBloom's RDB value does).
func (b *Builder) SetItems(items uint64) error {
	if len(b.links) == 0 {
		return fmt.Errorf("%w: an item count before the first sub-filter", ErrBadData)
	}
	b.links[len(b.links)-1].size.Store(items)
	return nil
}

// WriteAt writes p at byte offset off of the newest link's bit array, which it must fit in.
func (b *Builder) WriteAt(p []byte, off int64) error {
	if len(b.links) == 0 {
		return fmt.Errorf("%w: bits before the first sub-filter", ErrBadData)
	}
	l := b.links[len(b.links)-1]
	if off < 0 || uint64(off) > l.bytes() || uint64(len(p)) > l.bytes()-uint64(off) {
		return fmt.Errorf("%w: %d bytes at offset %d of a %d-byte sub-filter", ErrChunkTooBig, len(p), off, l.bytes())
	}
	_, err := l.f.WriteAt(p, off)
	return err
}

// Chain returns the chain once every declared link has been added and their counts add up to the
// declared items (errors wrap ErrBadData), as LoadHeader requires of a header. The Builder must
// not be used after.
func (b *Builder) Chain() (*Chain, error) {
	if len(b.links) != b.want {
		return nil, fmt.Errorf("%w: %d of %d sub-filters", ErrBadData, len(b.links), b.want)
	}
	var sum uint64
	for _, l := range b.links {
		n := l.size.Load()
		if n > math.MaxUint64-sum {
			return nil, fmt.Errorf("%w: sub-filter item counts overflow", ErrBadData)
		}
		sum += n
	}
	if sum != b.items {
		return nil, fmt.Errorf("%w: the chain counts %d items, its sub-filters %d", ErrBadData, b.items, sum)
	}
	links := b.links
	b.c.links.Store(&links)
	return b.c, nil
}

// ReadAt reads len(p) bytes of the chain's bit arrays, thought of as concatenated oldest link
// first (byte off is what BF.SCANDUMP's iterator off+1 starts at), reading across links when p
// spans them. It returns how many bytes it read, fewer than len(p) only at the end, with io.EOF.
// Like ScanDump it is safe during Adds (each word is read atomically) and allocates nothing.
func (c *Chain) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("redisbloom: negative offset %d", off)
	}
	pos := uint64(off)
	n := 0
	for _, l := range *c.links.Load() {
		if len(p) == n {
			break
		}
		if pos >= l.bytes() {
			pos -= l.bytes()
			continue
		}
		k := min(uint64(len(p)-n), l.bytes()-pos)
		l.f.ReadAt(p[n:n+int(k)], int64(pos)) // cannot fail: inside the link
		n += int(k)
		pos = 0
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
