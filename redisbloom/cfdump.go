package redisbloom

import (
	"encoding/binary"
	"fmt"
	"iter"

	"github.com/bloomd/bloom"
)

// The CF.SCANDUMP / CF.LOADCHUNK format of RedisBloom 2.6's cuckoo filters (src/cf.c, src/cf.h).
//
// Position 0 asks for the header, which CF.SCANDUMP returns with the next position 1. The header
// is 38 packed little-endian bytes:
//
//	offset size field
//	0      8    uint64  items inserted and not removed
//	8      8    uint64  buckets of the first sub-filter (a power of two)
//	16     8    uint64  removals since the last compaction
//	24     8    uint64  sub-filters (RedisBloom keeps the low 16 bits)
//	32     2    uint16  bucket size (slots per bucket)
//	34     2    uint16  max iterations
//	36     2    uint16  expansion
//
// Then the sub-filters' slots, oldest first, are thought of as concatenated: position p ≥ 1
// names byte p-1. CF.SCANDUMP at p returns the whole sub-filter holding byte p-1 when it is at
// most MaxChunkSize bytes (from its start, whatever p), else the MaxChunkSize bytes from p-1 (or
// the rest of the sub-filter), with the next position p + length; past the end it returns
// position 0 and no data, and so it does at once for a filter holding no items. CF.LOADCHUNK
// takes each returned pair as it is: at position 1 the header (which makes a filter with every
// slot free), and at position p data that belongs at byte p - len(data) - 1, which must lie
// inside one sub-filter.

// CFHeaderSize is the length of a CF.SCANDUMP header.
const CFHeaderSize = 38

// Errors of the CF.LOADCHUNK format. Both match bloom.ErrCorrupt.
var (
	// ErrCFHeader reports a header RedisBloom refuses: not 38 bytes, or describing a filter its
	// integrity check rejects. RedisBloom answers "Invalid header" for the length and
	// "Couldn't create filter!" for the rest.
	ErrCFHeader error = corruptError("redisbloom: invalid cuckoo filter header")

	// ErrCFChunk reports a chunk that is empty, whose position is not past its length, or that
	// does not fit inside one sub-filter. RedisBloom answers "Couldn't load chunk!".
	ErrCFChunk error = corruptError("redisbloom: cuckoo filter chunk out of bounds")
)

// CFHeader returns the CF.SCANDUMP header of c.
func CFHeader(c *bloom.Cuckoo) []byte { return appendCFHeader(nil, c.Info()) }

func appendCFHeader(b []byte, i bloom.CuckooInfo) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, i.Items)
	b = le.AppendUint64(b, i.Buckets)
	b = le.AppendUint64(b, i.Deletes)
	b = le.AppendUint64(b, uint64(i.Filters))
	b = le.AppendUint16(b, i.BucketSize)
	b = le.AppendUint16(b, i.MaxIterations)
	return le.AppendUint16(b, i.Expansion)
}

// ParseCFHeader decodes and checks a CF.SCANDUMP header as RedisBloom's CF.LOADCHUNK does: 38
// bytes; the number of sub-filters truncated to 16 bits; bucket size 1..255, buckets a power of
// two below 2^56, 1..65535 sub-filters, max iterations at least 1, a single sub-filter when the
// expansion is 0; and every sub-filter's size representable. Failures wrap ErrCFHeader.
func ParseCFHeader(b []byte) (bloom.CuckooInfo, error) {
	if len(b) != CFHeaderSize {
		return bloom.CuckooInfo{}, fmt.Errorf("%w: %d bytes, want %d", ErrCFHeader, len(b), CFHeaderSize)
	}
	le := binary.LittleEndian
	info := bloom.CuckooInfo{
		Items:         le.Uint64(b[0:]),
		Buckets:       le.Uint64(b[8:]),
		Deletes:       le.Uint64(b[16:]),
		Filters:       int(uint16(le.Uint64(b[24:]))), // RedisBloom's numFilters is a uint16_t
		BucketSize:    le.Uint16(b[32:]),
		MaxIterations: le.Uint16(b[34:]),
		Expansion:     le.Uint16(b[36:]),
	}
	total, err := bloom.CheckCuckooInfo(info)
	if err != nil {
		return info, fmt.Errorf("%w: %w", ErrCFHeader, err)
	}
	info.Bytes = total
	return info, nil
}

// LoadCFHeader makes the filter a CF.SCANDUMP header describes, with every slot free, after
// ParseCFHeader's checks and before any allocation the memory check (bloom.ErrTooLarge) and
// opts.Reserve. Of opts only MaxFilters and Reserve are used.
func LoadCFHeader(b []byte, opts *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
	info, err := ParseCFHeader(b)
	if err != nil {
		return nil, err
	}
	return bloom.NewCuckooFromInfo(info, opts)
}

// CFScanDump returns the chunk of c at position pos and the position after it, as CF.SCANDUMP
// does (see the format above); pos must not be negative (RedisBloom answers "Invalid position").
func CFScanDump(c *bloom.Cuckoo, pos int64) (next int64, data []byte) {
	info := c.Info()
	if info.Items == 0 || pos < 0 {
		return 0, nil
	}
	if pos == 0 {
		return 1, appendCFHeader(make([]byte, 0, CFHeaderSize), info)
	}
	off := uint64(pos - 1)
	for i, size := range c.FilterBytes() {
		if off >= size {
			off -= size
			continue
		}
		n, from := size, uint64(0)
		if size > MaxChunkSize {
			n, from = min(MaxChunkSize, size-off), off
		}
		data = make([]byte, n)
		c.ReadSlots(i, from, data)
		return pos + int64(n), data
	}
	return 0, nil
}

// CFLoadChunk writes a chunk that CF.SCANDUMP returned with position pos into c, as
// CF.LOADCHUNK does. It fails with ErrCFChunk, changing nothing, for an empty chunk, a position
// not greater than the chunk's length, or a chunk that does not fit in the sub-filter its start
// falls in (past the last sub-filter, RedisBloom measures the start from the last one's and so
// does this).
func CFLoadChunk(c *bloom.Cuckoo, pos int64, data []byte) error {
	if len(data) == 0 || pos <= 0 || uint64(pos-1) < uint64(len(data)) {
		return fmt.Errorf("%w: %d bytes at position %d", ErrCFChunk, len(data), pos)
	}
	off := uint64(pos) - uint64(len(data)) - 1
	sizes := c.FilterBytes()
	fi := -1
	for i, size := range sizes {
		fi = i
		if off < size {
			break
		}
		off -= size
	}
	if fi < 0 || sizes[fi] < off || sizes[fi]-off < uint64(len(data)) {
		return fmt.Errorf("%w: %d bytes at position %d", ErrCFChunk, len(data), pos)
	}
	if err := c.WriteSlots(fi, off, data); err != nil {
		return fmt.Errorf("%w: %w", ErrCFChunk, err)
	}
	return nil
}

// CFChunks returns c's complete dump in the pairs CF.LOADCHUNK takes: (1, header), then
// (position, chunk) for every chunk, oldest sub-filter first, split as CF.SCANDUMP splits them.
// Unlike CF.SCANDUMP it dumps a filter that holds no items too. The chunks are read into one
// buffer, which the next step reuses: a caller copies what it keeps. c must not change meanwhile.
func CFChunks(c *bloom.Cuckoo) iter.Seq2[int64, []byte] {
	return func(yield func(int64, []byte) bool) {
		if !yield(1, CFHeader(c)) {
			return
		}
		var buf []byte
		pos := int64(1)
		for i, size := range c.FilterBytes() {
			for off := uint64(0); off < size; {
				n := min(MaxChunkSize, size-off)
				if uint64(cap(buf)) < n {
					buf = make([]byte, n)
				}
				data := buf[:n]
				c.ReadSlots(i, off, data)
				off += n
				pos += int64(n)
				if !yield(pos, data) {
					return
				}
			}
		}
	}
}
