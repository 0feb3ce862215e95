package bloom

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// The native record of a cuckoo filter (see encoding.go for the common header):
//
//	kind     5
//	scheme   RedisBloom64 (the item is hashed with MurmurHash64A, seed 0, as CF.* does)
//	k        the bucket size, 1..255
//	m        buckets of all sub-filters together
//	count    items inserted and not removed
//	payload  m·k bytes: every sub-filter's slots, oldest first, one byte per slot
//	params   bytes 0-7 buckets of the first sub-filter, 8-15 removals since the last compaction,
//	         16-17 max iterations, 18-19 expansion (all little-endian)
//
// The number of sub-filters is the one whose buckets (buckets·expansion^i each) add up to m;
// a record where no number does is refused.

const kindCuckoo kind = 5

// WriteTo writes c in the native format. It implements io.WriterTo; it holds c's read lock
// while it writes, so insertions and removals wait for it.
func (c *Cuckoo) WriteTo(w io.Writer) (int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	buckets := uint64(0)
	for i := range c.filters {
		buckets += c.filters[i].buckets
	}
	h := fileHeader{kind: kindCuckoo, scheme: RedisBloom64, k: uint32(c.bucketSize), m: buckets,
		count: c.items, payload: c.bytes()}
	le := binary.LittleEndian
	le.PutUint64(h.params[0:], c.numBuckets)
	le.PutUint64(h.params[8:], c.deletes)
	le.PutUint16(h.params[16:], c.maxIter)
	le.PutUint16(h.params[18:], c.expansion)
	n, err := w.Write(h.marshal())
	total := int64(n)
	if err != nil {
		return total, err
	}
	crc := uint32(0)
	for i := range c.filters {
		s := c.filters[i].slots
		crc = crc32.Update(crc, castagnoli, s)
		n, err := w.Write(s)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	var t [4]byte
	le.PutUint32(t[:], crc)
	n, err = w.Write(t[:])
	return total + int64(n), err
}

// ReadFrom replaces c with a cuckoo filter read in the native format. It implements
// io.ReaderFrom and reads exactly one record; on error c is unchanged. Damaged input is refused
// with ErrCorrupt, sizes beyond this machine's memory with ErrTooLarge, before allocation; the
// slots are read in bounded steps, so a truncated stream costs memory in proportion to what it
// delivered. c must not be in use by other goroutines during the call. The new filter grows up
// to CuckooDefaultMaxFilters sub-filters (or as many as it has) and has no Reserve hook.
func (c *Cuckoo) ReadFrom(r io.Reader) (int64, error) {
	cr := &countingReader{r: r}
	h, err := readHeader(cr, kindCuckoo)
	if err != nil {
		return cr.n, err
	}
	d, err := readCuckooBody(cr, h)
	if err != nil {
		return cr.n, err
	}
	c.adopt(d)
	return cr.n, nil
}

// adopt moves d's state into c (whose mutex stays).
func (c *Cuckoo) adopt(d *Cuckoo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.numBuckets, c.items, c.deletes = d.numBuckets, d.items, d.deletes
	c.bucketSize, c.maxIter, c.expansion = d.bucketSize, d.maxIter, d.expansion
	c.maxFilters, c.reserve, c.filters = d.maxFilters, d.reserve, d.filters
}

// MarshalBinary returns c in the native format. It implements encoding.BinaryMarshaler.
func (c *Cuckoo) MarshalBinary() ([]byte, error) { return marshal(c, int64(c.Info().Bytes)) }

// UnmarshalBinary replaces c with the cuckoo filter encoded in data, which must hold exactly one
// native record; on error c is unchanged. It implements encoding.BinaryUnmarshaler.
func (c *Cuckoo) UnmarshalBinary(data []byte) error {
	d, err := unmarshal(data, kindCuckoo, readCuckooBody)
	if err != nil {
		return err
	}
	c.adopt(d)
	return nil
}

func readCuckooBody(r io.Reader, h fileHeader) (*Cuckoo, error) {
	if h.scheme != RedisBloom64 {
		return nil, corruptf("hashing scheme %d for a cuckoo filter (want %d)", h.scheme, RedisBloom64)
	}
	if h.k < 1 || h.k > CuckooMaxBucketSize {
		return nil, corruptf("bucket size %d is not in [1, %d]", h.k, CuckooMaxBucketSize)
	}
	le := binary.LittleEndian
	info := CuckooInfo{Buckets: le.Uint64(h.params[0:]), Items: h.count, Deletes: le.Uint64(h.params[8:]),
		BucketSize: uint16(h.k), MaxIterations: le.Uint16(h.params[16:]), Expansion: le.Uint16(h.params[18:])}
	if info.Buckets == 0 || info.Buckets > CuckooMaxBuckets {
		return nil, corruptf("%d buckets is not in [1, 2^56)", info.Buckets)
	}
	// Find the number of sub-filters whose buckets add up to m.
	sum := uint64(0)
	for i := 0; sum < h.m; i++ {
		b, ok := subBuckets(info.Buckets, info.Expansion, i)
		if !ok || i == CuckooMaxFilters {
			return nil, corruptf("%d buckets is not a whole number of sub-filters", h.m)
		}
		sum += b
		info.Filters = i + 1
	}
	if sum != h.m {
		return nil, corruptf("%d buckets is not a whole number of sub-filters", h.m)
	}
	total, err := CheckCuckooInfo(info)
	if err != nil {
		return nil, err
	}
	if h.payload != total {
		return nil, corruptf("payload of %d bytes does not match %d buckets of %d slots", h.payload, h.m, h.k)
	}
	if err := checkAlloc(total); err != nil {
		return nil, err
	}
	buf, err := readBytes(r, total)
	if err != nil {
		return nil, err
	}
	c := &Cuckoo{numBuckets: info.Buckets, items: info.Items, deletes: info.Deletes, bucketSize: info.BucketSize,
		maxIter: info.MaxIterations, expansion: info.Expansion, maxFilters: max(CuckooDefaultMaxFilters, info.Filters),
		filters: make([]cuckooSub, info.Filters)}
	off := uint64(0)
	for i := range c.filters {
		b, _ := subBuckets(info.Buckets, info.Expansion, i)
		n := b * uint64(info.BucketSize)
		c.filters[i] = cuckooSub{buckets: b, slots: buf[off : off+n : off+n]}
		off += n
	}
	return c, nil
}

// readBytes reads a payload of n bytes followed by its CRC-32C, in steps that start small and
// double, so a header that promises more than the stream holds costs memory in proportion to
// what was actually delivered.
func readBytes(r io.Reader, n uint64) ([]byte, error) {
	const firstStep, maxStep = 1 << 16, 1 << 26
	buf := make([]byte, 0, min(n, firstStep))
	crc := uint32(0)
	for step := uint64(firstStep); uint64(len(buf)) < n; step = min(2*step, maxStep) {
		got := uint64(len(buf))
		want := min(n-got, step)
		if uint64(cap(buf)) < got+want {
			grown := make([]byte, got, min(n, max(2*uint64(cap(buf)), got+want)))
			copy(grown, buf)
			buf = grown
		}
		chunk := buf[got : got+want]
		if c, err := io.ReadFull(r, chunk); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, corruptf("truncated payload: %d of %d bytes", got+uint64(c), n)
			}
			return nil, err
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		buf = buf[:got+want]
	}
	if err := readTrailer(r, crc); err != nil {
		return nil, err
	}
	return buf, nil
}
