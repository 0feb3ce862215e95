package bloom

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"sync/atomic"
)

// Scalable is a Bloom filter that grows: a chain of filters ("links") where each new link is
// created when the newest one reaches its capacity (Almeida et al., "Scalable Bloom filters",
// 2007). Link i holds n·g^i keys (g the growth factor) at false-positive rate p·(1−r)·r^i
// (r the tightening ratio), so however many keys arrive the compound false-positive rate stays
// below the sum of the links' rates:
//
//	P(false positive) ≤ Σ p·(1−r)·r^i = p·(1−r)/(1−r) = p
//
// Each link is sized with a 3% margin (an expected rate of 0.97 of its share at capacity, as
// BlockedSize does), so that measured rates, which scatter around their expectation, stay below
// p too: the expected compound rate is at most 0.97·p, and lower while the newest link is not
// full. Links are never tighter than 1e-12, which adds at most 1e-12 per such link to the bound;
// with the defaults that takes more than 30 links, 2^30 times the initial capacity.
//
// A key is added to the newest link only when no link reports it present, so each key costs
// bits in one link, and Count is the exact number of keys Add reported new.
//
// Growth costs memory. Each link is sized for a rate r times its predecessor's, which costs
// log2(1/r)/ln 2 = 1.44 more bits per key at the defaults, and the newest link is only partly
// full. At p = 0.01 with the defaults, a chain grown to 10 times its initial capacity holds
// about 21.5 bits per key and one grown 100-fold about 23.4 (measured in the tests), where a
// classic filter sized for the final count needs 9.6: when the count is known, use Filter or
// Blocked.
//
// A Scalable filter is safe for concurrent use. Adds and tests are lock-free; creating a link
// and Union take a mutex. Concurrent Adds of the same key while the chain grows may add it to
// two links; it is then counted twice. ReadFrom and UnmarshalBinary replace the whole filter
// and must not run concurrently with other methods. Use NewScalable to create one; the zero
// Scalable is only useful as the target of ReadFrom or UnmarshalBinary.
type Scalable struct {
	mu      sync.Mutex // serialises growth and Union
	links   atomic.Pointer[[]*scalableLink]
	n       uint64  // capacity of the first link
	p       float64 // bound of the compound false-positive rate
	growth  int
	r       float64
	blocked bool
	err     atomic.Pointer[error] // the last failure to grow
}

// ScalableOptions configures a Scalable filter; a nil *ScalableOptions means the defaults.
type ScalableOptions struct {
	// Growth multiplies the capacity of each new link over the previous one: 1 keeps every link
	// at the initial capacity, larger factors make fewer, larger links. Zero means 2.
	Growth int

	// Tightening is the ratio r between the false-positive rates of consecutive links, in (0, 1).
	// Smaller r makes later links tighter and the first looser; zero means 0.5.
	Tightening float64

	// Blocked makes the links blocked filters (see Blocked): faster, and 10 to 20% larger.
	Blocked bool
}

const (
	defaultGrowth     = 2
	defaultTightening = 0.5
	maxGrowth         = 1 << 16
	maxLinks          = 1 << 16
	minLinkRate       = 1e-12
)

// Validate reports whether the options are usable.
func (o *ScalableOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.Growth < 0 || o.Growth > maxGrowth {
		return fmt.Errorf("%w: growth factor %d is not in [1, %d]", ErrInvalidParameter, o.Growth, maxGrowth)
	}
	if o.Tightening != 0 && !(o.Tightening > 0 && o.Tightening < 1) {
		return fmt.Errorf("%w: tightening ratio %g is not in (0, 1)", ErrInvalidParameter, o.Tightening)
	}
	return nil
}

// scalableLink is one filter of the chain.
type scalableLink struct {
	f        linkFilter
	capacity uint64
	count    uint64 // keys added to this link, updated atomically
}

// linkFilter is what the chain needs of its links: *Filter and *Blocked.
type linkFilter interface {
	add(h1, h2 uint64) bool
	test(h1, h2 uint64) bool
	probe(h1, h2 uint64) bool
	M() uint64
	K() int
	ByteLen() int64
	EstimatedFPP() float64
	WriteTo(io.Writer) (int64, error)
}

// NewScalable returns an empty scalable filter whose first link holds n keys and whose compound
// false-positive rate stays below p however many keys are added. opts may be nil.
func NewScalable(n uint64, p float64, opts *ScalableOptions) (*Scalable, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := checkRate(p); err != nil {
		return nil, err
	}
	s := &Scalable{n: max(n, 1), p: p, growth: defaultGrowth, r: defaultTightening}
	if opts != nil {
		if opts.Growth != 0 {
			s.growth = opts.Growth
		}
		if opts.Tightening != 0 {
			s.r = opts.Tightening
		}
		s.blocked = opts.Blocked
	}
	first, err := s.newLink(0)
	if err != nil {
		return nil, err
	}
	s.links.Store(&[]*scalableLink{first})
	return s, nil
}

// linkCapacity returns n·growth^i, saturating instead of overflowing.
func (s *Scalable) linkCapacity(i int) uint64 {
	c := s.n
	for range i {
		if c > math.MaxUint64/uint64(s.growth) {
			return math.MaxUint64
		}
		c *= uint64(s.growth)
	}
	return c
}

// linkRate returns p·(1−r)·r^i, never below minLinkRate.
func (s *Scalable) linkRate(i int) float64 {
	return max(s.p*(1-s.r)*math.Pow(s.r, float64(i)), minLinkRate)
}

func (s *Scalable) newLink(i int) (*scalableLink, error) {
	capacity, p := s.linkCapacity(i), s.linkRate(i)
	var f linkFilter
	var err error
	if s.blocked {
		f, err = NewBlocked(capacity, p) // BlockedSize keeps its own 3% margin
	} else {
		f, err = New(capacity, p*blockedMargin)
	}
	if err != nil {
		return nil, fmt.Errorf("link %d (%d keys at p=%g): %w", i, capacity, p, err)
	}
	return &scalableLink{f: f, capacity: capacity}, nil
}

// grow appends a link if the chain still has n links, and reports whether it now has more.
func (s *Scalable) grow(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	links := *s.links.Load()
	if len(links) > n {
		return true
	}
	if len(links) >= maxLinks {
		err := fmt.Errorf("%w: the chain has reached %d links", ErrTooLarge, maxLinks)
		s.err.Store(&err)
		return false
	}
	l, err := s.newLink(len(links))
	if err != nil {
		s.err.Store(&err)
		return false
	}
	grown := append(links[:len(links):len(links)], l)
	s.links.Store(&grown)
	return true
}

// Err returns the last failure to add a link (a chain beyond this machine's memory), or nil.
// Adds never fail: when the chain cannot grow, keys go to the newest link beyond its capacity,
// and the false-positive rate rises above p (it is still reported by EstimatedFPP).
func (s *Scalable) Err() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Add adds key unless some link reports it present, and reports whether it did: true means
// the key was definitely new.
func (s *Scalable) Add(key []byte) bool {
	h1, h2 := Guava64.Hash(key)
	return s.add(h1, h2)
}

// Test reports whether key may be in the filter: false means it was definitely never added.
func (s *Scalable) Test(key []byte) bool {
	h1, h2 := Guava64.Hash(key)
	return s.test(h1, h2)
}

// AddString adds the UTF-8 bytes of s.
func (s *Scalable) AddString(v string) bool { return s.Add(stringBytes(v)) }

// TestString tests the UTF-8 bytes of s.
func (s *Scalable) TestString(v string) bool { return s.Test(stringBytes(v)) }

func (s *Scalable) add(h1, h2 uint64) bool {
	for {
		links := *s.links.Load()
		for i := len(links) - 1; i >= 0; i-- {
			if links[i].f.test(h1, h2) {
				return false
			}
		}
		last := links[len(links)-1]
		if atomic.LoadUint64(&last.count) >= last.capacity && s.grow(len(links)) {
			continue // test the new link too (it may have received the key meanwhile)
		}
		if !last.f.add(h1, h2) {
			return false // a concurrent Add of the same key won
		}
		atomic.AddUint64(&last.count, 1)
		return true
	}
}

func (s *Scalable) test(h1, h2 uint64) bool {
	links := *s.links.Load()
	for i := len(links) - 1; i >= 0; i-- {
		if links[i].f.test(h1, h2) {
			return true
		}
	}
	return false
}

// Count returns the number of keys Add reported new: exact, except that concurrent Adds of one
// key during growth may count it twice.
func (s *Scalable) Count() uint64 {
	var n uint64
	for _, l := range *s.links.Load() {
		n += atomic.LoadUint64(&l.count)
	}
	return n
}

// ApproximateCount returns Count.
func (s *Scalable) ApproximateCount() uint64 { return s.Count() }

// Capacity returns the number of keys the links created so far hold at their rates; the chain
// grows when the newest link is full.
func (s *Scalable) Capacity() uint64 {
	var n uint64
	for _, l := range *s.links.Load() {
		n += l.capacity
	}
	return n
}

// Links returns the number of filters in the chain.
func (s *Scalable) Links() int { return len(*s.links.Load()) }

// EstimatedFPP returns the probability that Test reports a never-added key as present given the
// links' bits now: 1 − Π(1 − rate of link i). It reads every link: O(m).
func (s *Scalable) EstimatedFPP() float64 {
	q := 1.0
	for _, l := range *s.links.Load() {
		q *= 1 - l.f.EstimatedFPP()
	}
	return 1 - q
}

// ByteLen returns the memory held by the links' bit arrays.
func (s *Scalable) ByteLen() int64 {
	var n int64
	for _, l := range *s.links.Load() {
		n += l.f.ByteLen()
	}
	return n
}

// Info describes s.
func (s *Scalable) Info() Info {
	links := *s.links.Load()
	info := Info{Kind: kindScalable.String(), Scheme: Guava64, K: links[0].f.K(), Links: len(links),
		Bytes: s.ByteLen(), Count: s.Count(), FPP: s.EstimatedFPP()}
	for _, l := range links {
		info.M += l.f.M()
	}
	if b, ok := links[0].f.(*Blocked); ok {
		info.Sectors = b.sectors
	}
	return info
}

// Compatible reports whether s and t can be combined: same initial capacity, rate, growth factor,
// tightening ratio and engine, so that their links of the same index have the same size.
func (s *Scalable) Compatible(t *Scalable) error {
	if s.n != t.n || s.p != t.p || s.growth != t.growth || s.r != t.r || s.blocked != t.blocked {
		return fmt.Errorf("%w: scalable n=%d p=%g growth=%d r=%g blocked=%v and n=%d p=%g growth=%d r=%g blocked=%v",
			ErrIncompatible, s.n, s.p, s.growth, s.r, s.blocked, t.n, t.p, t.growth, t.r, t.blocked)
	}
	return nil
}

// Union adds every key of t to s: links present in both are ORed together, links only t has
// are copied. A link then holds the keys of both inputs, up to twice its capacity when both
// had filled it, so the union's false-positive rate can exceed p, as for any Bloom filter union;
// EstimatedFPP reports it. The count of an ORed link is estimated from its bits (and is at least
// either input's count). It fails with ErrIncompatible unless Compatible(t) is nil.
func (s *Scalable) Union(t *Scalable) error {
	if err := s.Compatible(t); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mine, theirs := *s.links.Load(), *t.links.Load()
	out := append([]*scalableLink(nil), mine...)
	for i, tl := range theirs {
		tc := atomic.LoadUint64(&tl.count)
		if i >= len(out) {
			out = append(out, &scalableLink{f: cloneLink(tl.f), capacity: tl.capacity, count: tc})
			continue
		}
		l := out[i]
		var err error
		var estimate uint64
		switch f := l.f.(type) {
		case *Filter:
			err = f.Union(tl.f.(*Filter))
			estimate = f.ApproximateCount()
		case *Blocked:
			err = f.Union(tl.f.(*Blocked))
			estimate = f.ApproximateCount()
		}
		if err != nil {
			return err
		}
		for {
			c := atomic.LoadUint64(&l.count)
			if atomic.CompareAndSwapUint64(&l.count, c, max(c, tc, estimate)) {
				break
			}
		}
	}
	s.links.Store(&out)
	return nil
}

func cloneLink(f linkFilter) linkFilter {
	switch f := f.(type) {
	case *Filter:
		return f.Clone()
	case *Blocked:
		return f.Clone()
	}
	panic("bloom: unknown link type")
}

// Reset empties s: it keeps only the first link, cleared. Keys added while Reset runs may or may
// not remain.
func (s *Scalable) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := (*s.links.Load())[0]
	switch f := first.f.(type) {
	case *Filter:
		f.Reset()
	case *Blocked:
		f.Reset()
	}
	s.links.Store(&[]*scalableLink{{f: first.f, capacity: first.capacity}})
	s.err.Store(nil)
}

// Clone returns an independent copy of s.
func (s *Scalable) Clone() *Scalable {
	c := &Scalable{n: s.n, p: s.p, growth: s.growth, r: s.r, blocked: s.blocked}
	var links []*scalableLink
	for _, l := range *s.links.Load() {
		links = append(links, &scalableLink{f: cloneLink(l.f), capacity: l.capacity, count: atomic.LoadUint64(&l.count)})
	}
	c.links.Store(&links)
	return c
}

// The native record of a scalable filter: kind 3, scheme Guava64, k of the first link, m the sum
// of the links' sizes, count the exact count. The kind-specific parameters are
//
//	offset size field
//	0      1    engine: the kind of the links, 1 classic or 2 blocked
//	1      3    zero
//	4      4    growth factor
//	8      8    capacity of the first link
//	16     4    number of links
//
// and the payload is p and r (float64, IEEE 754 bits), then for each link its count (8 bytes)
// followed by the link's own complete native record (header, payload and checksum).

// WriteTo writes s in the native format. It implements io.WriterTo and may run while other
// goroutines add to s; links created after it starts are not written.
func (s *Scalable) WriteTo(w io.Writer) (int64, error) {
	links := *s.links.Load()
	payload := uint64(16)
	var count uint64
	var m uint64
	counts := make([]uint64, len(links))
	for i, l := range links {
		payload += 8 + headerSize + uint64(l.f.ByteLen()) + 4
		counts[i] = atomic.LoadUint64(&l.count)
		count += counts[i]
		m += l.f.M()
	}
	h := fileHeader{kind: kindScalable, scheme: Guava64, k: uint32(links[0].f.K()), m: m, count: count, payload: payload}
	h.params[0] = byte(kindClassic)
	if s.blocked {
		h.params[0] = byte(kindBlocked)
	}
	binary.LittleEndian.PutUint32(h.params[4:], uint32(s.growth))
	binary.LittleEndian.PutUint64(h.params[8:], s.n)
	binary.LittleEndian.PutUint32(h.params[16:], uint32(len(links)))
	n0, err := w.Write(h.marshal())
	if err != nil {
		return int64(n0), err
	}
	cw := &crcWriter{w: w, n: int64(n0)}
	var head [16]byte
	binary.LittleEndian.PutUint64(head[0:], math.Float64bits(s.p))
	binary.LittleEndian.PutUint64(head[8:], math.Float64bits(s.r))
	if _, err := cw.Write(head[:]); err != nil {
		return cw.n, err
	}
	for i, l := range links {
		var c [8]byte
		binary.LittleEndian.PutUint64(c[:], counts[i])
		if _, err := cw.Write(c[:]); err != nil {
			return cw.n, err
		}
		if _, err := l.f.WriteTo(cw); err != nil {
			return cw.n, err
		}
	}
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], cw.crc)
	n, err := w.Write(t[:])
	return cw.n + int64(n), err
}

// crcWriter checksums and counts what it writes.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// ReadFrom replaces s with a scalable filter read in the native format. It implements
// io.ReaderFrom and reads exactly one record; on error s is unchanged. Damaged input is refused
// with ErrCorrupt, sizes beyond this machine's memory with ErrTooLarge, before allocation.
func (s *Scalable) ReadFrom(r io.Reader) (int64, error) {
	cr := &countingReader{r: r}
	h, err := readHeader(cr, kindScalable)
	if err != nil {
		return cr.n, err
	}
	t, err := readScalableBody(cr, h)
	if err != nil {
		return cr.n, err
	}
	s.replace(t)
	return cr.n, nil
}

// replace makes s a copy of t, field by field (s's mutex is not copied).
func (s *Scalable) replace(t *Scalable) {
	s.n, s.p, s.growth, s.r, s.blocked = t.n, t.p, t.growth, t.r, t.blocked
	s.links.Store(t.links.Load())
	s.err.Store(nil)
}

// MarshalBinary returns s in the native format.
func (s *Scalable) MarshalBinary() ([]byte, error) {
	return marshal(s, s.ByteLen()+int64(s.Links())*84+16)
}

// UnmarshalBinary replaces s with the scalable filter encoded in data, which must hold exactly
// one native record; on error s is unchanged.
func (s *Scalable) UnmarshalBinary(data []byte) error {
	t, err := unmarshal(data, kindScalable, readScalableBody)
	if err != nil {
		return err
	}
	s.replace(t)
	return nil
}

// payloadReader reads at most left bytes of r and checksums them.
type payloadReader struct {
	r    io.Reader
	left uint64
	crc  uint32
}

func (p *payloadReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if uint64(len(b)) > p.left {
		b = b[:p.left]
	}
	n, err := p.r.Read(b)
	p.left -= uint64(n)
	p.crc = crc32.Update(p.crc, castagnoli, b[:n])
	return n, err
}

func readScalableBody(r io.Reader, h fileHeader) (*Scalable, error) {
	if h.scheme != Guava64 {
		return nil, corruptf("scalable filter with hashing scheme %s (links hash with guava64)", h.scheme)
	}
	engine := kind(h.params[0])
	if engine != kindClassic && engine != kindBlocked {
		return nil, corruptf("scalable filter over links of kind %s", engine)
	}
	if h.params[1] != 0 || h.params[2] != 0 || h.params[3] != 0 {
		return nil, corruptf("reserved parameter bytes are not zero")
	}
	growth := binary.LittleEndian.Uint32(h.params[4:])
	n := binary.LittleEndian.Uint64(h.params[8:])
	links := binary.LittleEndian.Uint32(h.params[16:])
	if growth < 1 || growth > maxGrowth {
		return nil, corruptf("growth factor %d is not in [1, %d]", growth, maxGrowth)
	}
	if n == 0 {
		return nil, corruptf("first link capacity is zero")
	}
	if links < 1 || links > maxLinks {
		return nil, corruptf("%d links is not in [1, %d]", links, maxLinks)
	}
	if minPayload := 16 + uint64(links)*(8+headerSize+8+4); h.payload < minPayload {
		return nil, corruptf("payload of %d bytes cannot hold %d links", h.payload, links)
	}
	if err := checkAlloc(h.payload); err != nil {
		return nil, err
	}
	pr := &payloadReader{r: r, left: h.payload}
	var head [16]byte
	if err := readFullCorrupt(pr, head[:], "chain parameters"); err != nil {
		return nil, err
	}
	s := &Scalable{n: n, growth: int(growth), blocked: engine == kindBlocked,
		p: math.Float64frombits(binary.LittleEndian.Uint64(head[0:])),
		r: math.Float64frombits(binary.LittleEndian.Uint64(head[8:]))}
	if !(s.p > 0 && s.p < 1) || !(s.r > 0 && s.r < 1) {
		return nil, corruptf("rate %g or tightening ratio %g is not in (0, 1)", s.p, s.r)
	}
	chain := make([]*scalableLink, 0, min(links, 64))
	var total, m uint64
	for i := range int(links) {
		var c [8]byte
		if err := readFullCorrupt(pr, c[:], fmt.Sprintf("count of link %d", i)); err != nil {
			return nil, err
		}
		lh, err := readHeader(pr, engine)
		if err != nil {
			return nil, fmt.Errorf("link %d: %w", i, err)
		}
		if lh.payload > pr.left || pr.left-lh.payload < 4 {
			return nil, corruptf("link %d claims %d bytes, %d remain in the chain", i, lh.payload, pr.left)
		}
		if lh.scheme != Guava64 {
			return nil, corruptf("link %d has hashing scheme %s (links hash with guava64)", i, lh.scheme)
		}
		var f linkFilter
		if engine == kindBlocked {
			f, err = readBlockedBody(pr, lh)
		} else {
			f, err = readClassicBody(pr, lh)
		}
		if err != nil {
			return nil, fmt.Errorf("link %d: %w", i, err)
		}
		count := binary.LittleEndian.Uint64(c[:])
		chain = append(chain, &scalableLink{f: f, capacity: s.linkCapacity(i), count: count})
		total += count
		m += f.M()
	}
	if pr.left != 0 {
		return nil, corruptf("%d bytes of the chain's payload follow its last link", pr.left)
	}
	if err := readTrailer(r, pr.crc); err != nil {
		return nil, err
	}
	if total != h.count || m != h.m || uint64(chain[0].f.K()) != uint64(h.k) {
		return nil, corruptf("header (count %d, m %d, k %d) disagrees with the links (count %d, m %d, k %d)",
			h.count, h.m, h.k, total, m, chain[0].f.K())
	}
	s.links.Store(&chain)
	return s, nil
}

// readFullCorrupt fills b from r, reporting a short read as corruption of what.
func readFullCorrupt(r io.Reader, b []byte, what string) error {
	if n, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return corruptf("truncated %s: %d of %d bytes", what, n, len(b))
		}
		return err
	}
	return nil
}
