package persist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/value"
	"github.com/bloomd/bloom/redisbloom"
)

// The snapshot's format. Little-endian throughout; CRC-32C (Castagnoli) everywhere. Every size
// is covered by a checksum and checked against what is left of the file before anything is
// allocated for it, so that no damaged or crafted file makes the reader allocate more than the
// file holds, except for a filter's bit arrays, whose zero blocks take no room in the file and
// which are checked against the memory limit instead.
//
//	header, 44 bytes:
//	0   8  magic "\x89BDSNAP\n"
//	8   4  version, 2 (1 is read too: its pieces are plain, see below)
//	12  4  flags, 0
//	16  8  lineage: a random id shared by a snapshot and the logs that follow it
//	24  8  sequence number of the first log that follows the snapshot
//	32  8  creation time, unix milliseconds
//	40  4  CRC-32C of bytes 0..39
//
//	then one section per key, and an end section. A section header, 32 bytes:
//	0   1  kind: 1 filter, 2 string, 3 cuckoo filter, 4 hash, 255 end
//	1   3  zero
//	4   4  key length K
//	8   4  meta length M: a filter's BF.SCANDUMP header (20 + 53·links), a cuckoo filter's
//	       CF.SCANDUMP header (38), a string's value, a hash's fields (internal/value's
//	       encoding: their number, then each name and value behind its uvarint length)
//	12  8  expiry time, unix milliseconds, 0 for none
//	20  8  data length D: a filter's bit arrays in bytes; for the end section, the number of keys
//	28  4  CRC-32C of bytes 0..27
//	then (not for the end section) the key, the meta, and the CRC-32C of key and meta;
//	then, for a filter, its bit arrays (BF.SCANDUMP's byte layout), link by link, in pieces of
//	at most 16 MiB that never span two links. A piece of n bytes is cut in blocks of 4 KiB (the
//	last one shorter if n is not a multiple); it is written as a bitmap of ceil(n/4096) bits in
//	ceil(n/32768) bytes (bit i of byte i/8 at 1<<(i%8): block i is not all zeros; the bits past
//	the last block are zero), the blocks whose bit is set, in order, and the CRC-32C of bitmap
//	and blocks. An empty filter thus costs a few bytes per 16 MiB, and a sparse one only the
//	blocks its bits are in. (Version 1 wrote each piece's n bytes, then their CRC-32C.) A cuckoo
//	filter's sub-filters' slots are written in plain pieces of at most 16 MiB, each its n bytes
//	and their CRC-32C.
//
// The end section is the last bytes of the file: a snapshot cut short anywhere is refused.
const (
	snapMagic      = "\x89BDSNAP\n"
	snapVersion    = 2 // sparse pieces
	snapVersion1   = 1 // plain pieces
	snapHeaderSize = 44
	sectionSize    = 32

	kindFilter = 1
	kindString = 2
	kindCuckoo = 3
	kindHash   = 4
	kindEnd    = 255

	pieceSize = redisbloom.MaxChunkSize
	slotBlock = 64 << 10 // the unit in which a cuckoo filter's piece is written
	blockSize = 4096     // the unit of a piece's zero runs

	// maxKeyOrValue bounds a key and a string value, like proto-max-bulk-len's largest setting.
	maxKeyOrValue = 1<<31 - 1
)

// A SnapshotHeader is what a snapshot says about itself.
type SnapshotHeader struct {
	Lineage uint64
	LogSeq  uint64 // the first log whose records come after the snapshot
	Created int64  // unix ms
	// AddsNewUntil is, in a primary's full sync, the replication offset up to which the adds of
	// the stream that follows are to be replayed as new (see WriteSync); 0 in data files.
	AddsNewUntil int64
}

func (h SnapshotHeader) append(b []byte, version uint32) []byte {
	start := len(b)
	le := binary.LittleEndian
	b = append(b, snapMagic...)
	b = le.AppendUint32(b, version)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, h.Lineage)
	b = le.AppendUint64(b, h.LogSeq)
	b = le.AppendUint64(b, uint64(h.Created))
	return le.AppendUint32(b, crc(b[start:]))
}

// An Item is one key as a snapshot stores it.
type Item struct {
	Key    string
	Expire int64             // unix ms; 0 for none
	Chain  *redisbloom.Chain // the filter; nil for a string
	Value  []byte            // a string's value, which does not change

	// Str is a string that clients may go on changing in place while the snapshot is written
	// (SETBIT, SETRANGE, ...): its first StrLen bytes, its length at the instant of the
	// snapshot, are copied under its read lock a piece at a time. The server records every such
	// change as an overwrite of the bytes it wrote, so the copy, plus the log after the instant,
	// replays to the exact string, as for a filter's bits.
	Str    *value.String
	StrLen int

	// Hash is a hash's fields at the instant of the snapshot (value.Hash.Snapshot).
	Hash *value.HashView

	// Cuckoo is a cuckoo filter: a copy taken at the instant of the snapshot (cuckoo insertions
	// move fingerprints, so unlike bits they cannot be copied while clients go on).
	Cuckoo *bloom.Cuckoo

	// A filter's links and counts at the instant of the snapshot: either its whole header
	// (Chain.Header), or, cheaper to take while every client waits, its number of links
	// (Chain.NumFilters) and items (Chain.Card), from which the header is rebuilt later (see
	// headerAt).
	Header []byte
	Links  int
	Count  uint64
}

// headerAt returns the BF.SCANDUMP header ch had when it had links links and count items,
// rebuilt from its header now. That is exact because only the newest link counts adds: the
// links older than the newest at that instant have kept their counts since, and the newest
// then held count minus theirs. Links added since are left out.
func headerAt(ch *redisbloom.Chain, links int, count uint64) ([]byte, error) {
	h := ch.Header()
	le := binary.LittleEndian
	if links < 1 || int(le.Uint32(h[8:])) < links {
		return nil, fmt.Errorf("the filter has %d sub-filters, fewer than the %d it had", le.Uint32(h[8:]), links)
	}
	h = h[:20+53*links]
	var older uint64
	for i := range links - 1 {
		older += le.Uint64(h[20+53*i+16:])
	}
	if older > count {
		return nil, fmt.Errorf("its older sub-filters count %d items, more than the %d it had", older, count)
	}
	le.PutUint64(h[0:], count)
	le.PutUint32(h[8:], uint32(links))
	le.PutUint64(h[20+53*(links-1)+16:], count-older)
	return h, nil
}

// A Sink receives the keys of a snapshot being read.
type Sink interface {
	// Filter makes the filter at key from a BF.SCANDUMP header (with zeroed bits, which the
	// reader then loads), as BF.LOADCHUNK does; its errors stop the load (wrapping
	// ErrNoMemory when the filter does not fit in memory).
	Filter(key []byte, expire int64, header []byte) (*redisbloom.Chain, error)
	// String sets key to value. value is the reader's: keep it, it is not reused.
	String(key, value []byte, expire int64) error
	// Cuckoo makes the cuckoo filter at key from a CF.SCANDUMP header (every slot free, which
	// the reader then loads), as CF.LOADCHUNK does; its errors stop the load.
	Cuckoo(key []byte, expire int64, header []byte) (*bloom.Cuckoo, error)
	// Hash sets key to the hash h, which it keeps.
	Hash(key []byte, h *value.Hash, expire int64) error
	// BuildFilter makes the filter at key with build, which decodes it (from an RDB file) into
	// a chain made with the options it is given: their Reserve hook charges each sub-filter
	// before it is allocated, so a filter that does not fit is refused (an error wrapping
	// ErrNoMemory) before its memory is taken. build's own error is returned unchanged.
	BuildFilter(key []byte, expire int64, build func(*redisbloom.Options) (*redisbloom.Chain, error)) error
	// BuildCuckoo is BuildFilter for a cuckoo filter.
	BuildCuckoo(key []byte, expire int64, build func(*bloom.CuckooOptions) (*bloom.Cuckoo, error)) error
}

// SnapshotStats counts what a snapshot held.
type SnapshotStats struct {
	Keys, Filters, Strings, Hashes int
	Bytes                          int64 // the file's length
	BitBytes                       int64 // bytes of bit arrays
}

// linkBytes returns the byte length of each link a BF.SCANDUMP header declares, checking only
// what the snapshot's framing needs (LoadHeader checks the rest).
func linkBytes(h []byte) ([]uint64, error) {
	if len(h) < 20 {
		return nil, errors.New("filter header shorter than 20 bytes")
	}
	n := binary.LittleEndian.Uint32(h[8:])
	if n == 0 || n > redisbloom.MaxFilters || len(h) != 20+53*int(n) {
		return nil, fmt.Errorf("filter header of %d bytes does not hold %d sub-filters", len(h), n)
	}
	sizes := make([]uint64, n)
	for i := range sizes {
		sizes[i] = binary.LittleEndian.Uint64(h[20+53*i:])
		if sizes[i] > 1<<53 {
			return nil, fmt.Errorf("sub-filter %d declares %d bytes", i, sizes[i])
		}
	}
	return sizes, nil
}

// WriteSnapshot writes a snapshot of items to w and returns the bytes written. A filter's bits
// are read from its chain while it is written: they may hold adds made after the items were
// taken (see the package documentation for why that is exact); its links and counts are those of
// Item.Header. WriteSnapshot does not sync or close w.
func WriteSnapshot(w io.Writer, h SnapshotHeader, items []Item) (int64, error) {
	return writeSnapshot(w, h, items, true, nil)
}

// WritePlainSnapshot is WriteSnapshot in version 1, whose pieces are plain (every byte of a
// filter, zero or not): its length, which SnapshotSize gives before it is written, does not
// depend on the bits, so it can be sent behind that length while adds go on (a replica's full
// sync).
func WritePlainSnapshot(w io.Writer, h SnapshotHeader, items []Item) (int64, error) {
	return writeSnapshot(w, h, items, false, nil)
}

// writeSnapshot writes the snapshot; tail, if not nil, is called once the keys are written, for
// the value the end section carries in its expiry field (SnapshotHeader.AddsNewUntil).
func writeSnapshot(w io.Writer, h SnapshotHeader, items []Item, sparse bool, tail func() int64) (int64, error) {
	cw := &countingWriter{w: w}
	// Smaller than the slices of bits (bitCopier), which therefore mostly go straight to w.
	bw := bufio.NewWriterSize(cw, copySlice/4)
	le := binary.LittleEndian
	version := uint32(snapVersion1)
	if sparse {
		version = snapVersion
	}
	b := h.append(make([]byte, 0, 256), version)
	bw.Write(b)
	pace := newPacer()
	defer pace.close()
	var copier *bitCopier // copies filters' bits
	var slotBuf []byte    // a block of a cuckoo filter's slots
	var strBuf []byte     // a piece of a string that clients may change meanwhile
	for _, it := range items {
		var kind byte = kindString
		meta := it.Value
		var data uint64
		var sizes []uint64
		if it.Str != nil {
			if err := writeString(bw, &b, &strBuf, it); err != nil {
				return cw.n, err
			}
			continue
		}
		if it.Hash != nil {
			kind, meta = kindHash, value.AppendHash(nil, *it.Hash)
		}
		if it.Cuckoo != nil {
			kind, meta = kindCuckoo, redisbloom.CFHeader(it.Cuckoo)
			sizes = it.Cuckoo.FilterBytes()
			for _, s := range sizes {
				data += s
			}
		} else if it.Chain != nil {
			kind, meta = kindFilter, it.Header
			var err error
			if meta == nil {
				if meta, err = headerAt(it.Chain, it.Links, it.Count); err != nil {
					return cw.n, fmt.Errorf("persist: key %q: %w", it.Key, err)
				}
			}
			if sizes, err = linkBytes(meta); err != nil {
				return cw.n, fmt.Errorf("persist: key %q: %w", it.Key, err)
			}
			for _, s := range sizes {
				data += s
			}
		}
		if len(it.Key) > maxKeyOrValue || len(meta) > maxKeyOrValue {
			return cw.n, fmt.Errorf("persist: key %q: key or value too long for a snapshot", it.Key[:min(len(it.Key), 64)])
		}
		b = appendSection(b[:0], kind, len(it.Key), len(meta), it.Expire, data)
		bw.Write(b)
		bw.WriteString(it.Key)
		bw.Write(meta)
		sum := crcUpdate(crcUpdate(0, []byte(it.Key)), meta)
		bw.Write(le.AppendUint32(b[:0], sum))
		if it.Cuckoo != nil {
			// The copy does not change while it is written, so a piece is read and checksummed
			// a block at a time: a writer holds one block, not one piece (several replicas may
			// be sent the same snapshot at once).
			if slotBuf == nil {
				slotBuf = make([]byte, slotBlock)
			}
			for i, size := range sizes {
				for off := uint64(0); off < size; {
					n := min(pieceSize, size-off)
					var sum uint32
					for o := uint64(0); o < n; o += slotBlock {
						p := slotBuf[:min(slotBlock, n-o)]
						it.Cuckoo.ReadSlots(i, off+o, p)
						bw.Write(p)
						sum = crcUpdate(sum, p)
						pace.step()
					}
					bw.Write(le.AppendUint32(b[:0], sum))
					off += n
				}
			}
			continue
		}
		if copier == nil {
			copier = copierPool.Get().(*bitCopier)
			copier.pace = pace
			defer func() { copier.pace = nil; copierPool.Put(copier) }()
		}
		if err := copier.writeFilter(bw, it.Chain, sizes, sparse); err != nil {
			if errors.Is(err, errShape) {
				return cw.n, fmt.Errorf("persist: key %q: %w", it.Key, err)
			}
			return cw.n, fmt.Errorf("persist: writing snapshot: %w", err)
		}
	}
	var end int64
	if tail != nil {
		end = tail()
	}
	b = appendSection(b[:0], kindEnd, 0, 0, end, uint64(len(items)))
	bw.Write(b)
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("persist: writing snapshot: %w", err)
	}
	return cw.n, nil
}

// stringPiece is how much of a string is copied per hold of its read lock: a write to the
// string waits at most for one such copy (tens of microseconds).
const stringPiece = 256 << 10

// writeString writes the section of a string that clients may change meanwhile (Item.Str): its
// first StrLen bytes, copied a piece at a time under the string's read lock into buf, and
// written with the lock released, so a slow disk never holds up the string's writers. The
// string only grows while it is in the keyspace (SET replaces the value, and a replaced value
// no longer changes), so it always holds StrLen bytes.
func writeString(bw *bufio.Writer, b, buf *[]byte, it Item) error {
	if len(it.Key) > maxKeyOrValue || it.StrLen > maxKeyOrValue {
		return fmt.Errorf("persist: key %q: key or value too long for a snapshot", it.Key[:min(len(it.Key), 64)])
	}
	le := binary.LittleEndian
	*b = appendSection((*b)[:0], kindString, len(it.Key), it.StrLen, it.Expire, 0)
	bw.Write(*b)
	bw.WriteString(it.Key)
	sum := crcUpdate(0, []byte(it.Key))
	for off := 0; off < it.StrLen; {
		n := min(stringPiece, it.StrLen-off)
		if cap(*buf) < n {
			*buf = make([]byte, n)
		}
		p := (*buf)[:n]
		it.Str.RLock()
		src := it.Str.Bytes()
		if len(src) < off+n {
			it.Str.RUnlock()
			return fmt.Errorf("persist: key %q: the string shrank while being saved", it.Key)
		}
		copy(p, src[off:off+n])
		it.Str.RUnlock()
		bw.Write(p)
		sum = crcUpdate(sum, p)
		off += n
	}
	bw.Write(le.AppendUint32((*b)[:0], sum))
	return nil
}

// pieces returns the number of plain pieces of a sub-filter of the given bytes.
func pieces(bytes uint64) uint64 { return (bytes + pieceSize - 1) / pieceSize }

// zeroBlock is compared with the blocks of a piece.
var zeroBlock [blockSize]byte

// bitmapBytes returns the length of the bitmap of a piece of n bytes.
func bitmapBytes(n uint64) uint64 { return ((n+blockSize-1)/blockSize + 7) / 8 }

func appendSection(b []byte, kind byte, keyLen, metaLen int, expire int64, data uint64) []byte {
	le := binary.LittleEndian
	start := len(b)
	b = append(b, kind, 0, 0, 0)
	b = le.AppendUint32(b, uint32(keyLen))
	b = le.AppendUint32(b, uint32(metaLen))
	b = le.AppendUint64(b, uint64(expire))
	b = le.AppendUint64(b, data)
	return le.AppendUint32(b, crc(b[start:]))
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadSnapshot reads a snapshot of size bytes from r (whose name errors report), handing each key
// to sink, and returns its header. Damage anywhere (a checksum, a size, a truncation, bytes after
// the end) is a *CorruptError naming the offset of the damaged section; the sink's own errors
// are returned wrapped with the key. Either way the keys handed over so far are not a snapshot:
// the caller must discard them.
func ReadSnapshot(r io.Reader, size int64, name string, sink Sink) (SnapshotHeader, SnapshotStats, error) {
	d := &snapReader{r: bufio.NewReaderSize(r, int(min(max(size, 16), 1<<20))), size: size, name: name}
	st := SnapshotStats{Bytes: size}
	var hb [snapHeaderSize]byte
	if size < snapHeaderSize {
		return SnapshotHeader{}, st, corrupt(name, 0, "file of %d bytes is shorter than a snapshot header", size)
	}
	if err := d.read(hb[:]); err != nil {
		return SnapshotHeader{}, st, err
	}
	le := binary.LittleEndian
	switch {
	case string(hb[:8]) != snapMagic:
		if err := otherFormat(name, magicOf(hb[:]), hb[:]); err != nil && magicOf(hb[:]) != "snapshot" {
			return SnapshotHeader{}, st, err
		}
		return SnapshotHeader{}, st, corrupt(name, 0, "not a bloomd snapshot (bad magic)")
	case le.Uint32(hb[40:]) != crc(hb[:40]):
		return SnapshotHeader{}, st, corrupt(name, 0, "snapshot header checksum mismatch")
	case le.Uint32(hb[8:]) != snapVersion && le.Uint32(hb[8:]) != snapVersion1:
		return SnapshotHeader{}, st, corrupt(name, 0, "unsupported snapshot version %d", le.Uint32(hb[8:]))
	}
	sparse := le.Uint32(hb[8:]) == snapVersion
	h := SnapshotHeader{Lineage: le.Uint64(hb[16:]), LogSeq: le.Uint64(hb[24:]), Created: int64(le.Uint64(hb[32:]))}
	ld := newLoader()
	defer ld.stop()
	var sec [sectionSize]byte
	for {
		at := d.off
		if size-at < sectionSize {
			return h, st, corrupt(name, at, "snapshot cut short: %d bytes where a section header (or the end) should be", size-at)
		}
		if err := d.read(sec[:]); err != nil {
			return h, st, err
		}
		if le.Uint32(sec[28:]) != crc(sec[:28]) {
			return h, st, corrupt(name, at, "section %d: header checksum mismatch", st.Keys)
		}
		kind := sec[0]
		keyLen, metaLen := int64(le.Uint32(sec[4:])), int64(le.Uint32(sec[8:]))
		expire, data := int64(le.Uint64(sec[12:])), le.Uint64(sec[20:])
		rest := size - d.off
		if kind == kindEnd {
			if keyLen != 0 || metaLen != 0 || data != uint64(st.Keys) {
				return h, st, corrupt(name, at, "end section counts %d keys, the file holds %d", data, st.Keys)
			}
			if rest != 0 {
				return h, st, corrupt(name, d.off, "%d bytes after the end of the snapshot", rest)
			}
			h.AddsNewUntil = max(expire, 0)
			return h, st, ld.stop()
		}
		if kind != kindFilter && kind != kindString && kind != kindCuckoo && kind != kindHash || sec[1]|sec[2]|sec[3] != 0 {
			return h, st, corrupt(name, at, "section %d: unknown kind %d", st.Keys, kind)
		}
		if keyLen+metaLen+4 > rest || keyLen > maxKeyOrValue || metaLen > maxKeyOrValue {
			return h, st, corrupt(name, at, "section %d: key of %d bytes and value of %d do not fit in the %d bytes left", st.Keys, keyLen, metaLen, rest)
		}
		if kind == kindFilter && metaLen > redisbloom.MaxHeaderSize {
			return h, st, corrupt(name, at, "section %d: filter header of %d bytes (limit %d)", st.Keys, metaLen, redisbloom.MaxHeaderSize)
		}
		body := make([]byte, keyLen+metaLen+4)
		if err := d.read(body); err != nil {
			return h, st, err
		}
		key, meta := body[:keyLen:keyLen], body[keyLen:keyLen+metaLen]
		if le.Uint32(body[keyLen+metaLen:]) != crc(body[:keyLen+metaLen]) {
			return h, st, corrupt(name, at, "section %d (key %q): checksum mismatch", st.Keys, clip(key))
		}
		if kind == kindString {
			if data != 0 {
				return h, st, corrupt(name, at, "section %d (key %q): a string with %d bytes of bits", st.Keys, clip(key), data)
			}
			if err := sink.String(key, meta, expire); err != nil {
				return h, st, fmt.Errorf("persist: %s: key %q: %w", name, clip(key), err)
			}
			st.Keys++
			st.Strings++
			continue
		}
		if kind == kindHash {
			if data != 0 {
				return h, st, corrupt(name, at, "section %d (key %q): a hash with %d bytes of bits", st.Keys, clip(key), data)
			}
			hv, err := value.DecodeHash(meta, value.DefaultLimits)
			if err == nil && hv.Len() == 0 {
				err = errors.New("a hash with no fields") // a key is deleted with its last field
			}
			if err != nil {
				return h, st, corrupt(name, at, "section %d (key %q): %v", st.Keys, clip(key), err)
			}
			if err := sink.Hash(key, hv, expire); err != nil {
				return h, st, fmt.Errorf("persist: %s: key %q: %w", name, clip(key), err)
			}
			st.Keys++
			st.Hashes++
			continue
		}
		if kind == kindCuckoo {
			if err := d.readCuckoo(sink, key, meta, expire, data, at, st.Keys); err != nil {
				return h, st, err
			}
			st.Keys++
			st.Filters++
			st.BitBytes += int64(data)
			continue
		}
		sizes, err := linkBytes(meta)
		if err != nil {
			return h, st, corrupt(name, at, "section %d (key %q): %v", st.Keys, clip(key), err)
		}
		var total, least uint64 // least: the fewest bytes the pieces can take in the file
		for _, s := range sizes {
			total += s
			for off := uint64(0); off < s && least <= uint64(size); off += pieceSize {
				if sparse {
					least += bitmapBytes(min(pieceSize, s-off)) + 4
				} else {
					least += min(pieceSize, s-off) + 4
				}
			}
		}
		if total != data || least > uint64(size-d.off) {
			return h, st, corrupt(name, at, "section %d (key %q): %d bytes of bits declared, %d in the filter header, %d bytes left in the file", st.Keys, clip(key), data, total, size-d.off)
		}
		ch, err := sink.Filter(key, expire, meta)
		if err != nil {
			return h, st, fmt.Errorf("persist: %s: key %q (section at byte offset %d): %w", name, clip(key), at, err)
		}
		iter := int64(1)
		var bm []byte
		for _, s := range sizes {
			for off := uint64(0); off < s; {
				n := min(pieceSize, s-off)
				pieceAt := d.off
				errAt := func(err error) error {
					return corrupt(name, pieceAt, "section %d (key %q): %v", st.Keys, clip(key), err)
				}
				if !sparse {
					buf := ld.buffer(n + 4)
					p := buf[:n+4]
					if err := d.read(p); err != nil {
						return h, st, err
					}
					if le.Uint32(p[n:]) != crc(p[:n]) {
						return h, st, corrupt(name, pieceAt, "section %d (key %q): bits checksum mismatch", st.Keys, clip(key))
					}
					iter += int64(n)
					ld.load(piece{ch: ch, runs: []run{{iter, p[:n]}}, buf: buf, err: errAt})
					off += n
					continue
				}
				bm = bm[:0]
				bm = append(bm, make([]byte, bitmapBytes(n))...)
				if err := d.read(bm); err != nil {
					return h, st, err
				}
				blocks := (n + blockSize - 1) / blockSize
				var stored uint64
				for i := range blocks {
					if bm[i/8]&(1<<(i%8)) != 0 {
						stored += min(blockSize, n-i*blockSize)
					}
				}
				if blocks%8 != 0 && bm[len(bm)-1]>>(blocks%8) != 0 {
					return h, st, corrupt(name, pieceAt, "section %d (key %q): bits set past the last block of a piece", st.Keys, clip(key))
				}
				if stored+4 > uint64(size-d.off) {
					return h, st, corrupt(name, pieceAt, "section %d (key %q): a piece of %d stored bytes, %d bytes left in the file", st.Keys, clip(key), stored, size-d.off)
				}
				buf := ld.buffer(stored + 4)
				p := buf[:stored+4]
				if err := d.read(p); err != nil {
					return h, st, err
				}
				if le.Uint32(p[stored:]) != crcUpdate(crc(bm), p[:stored]) {
					return h, st, corrupt(name, pieceAt, "section %d (key %q): bits checksum mismatch", st.Keys, clip(key))
				}
				// One run per stretch of consecutive stored blocks; the zero blocks are left
				// as the new filter has them (untouched memory stays unallocated by the OS).
				var runs []run
				pos := uint64(0) // in p
				for i := uint64(0); i < blocks; {
					if bm[i/8]&(1<<(i%8)) == 0 {
						i++
						continue
					}
					j := i
					for j < blocks && bm[j/8]&(1<<(j%8)) != 0 {
						j++
					}
					length := min(j*blockSize, n) - i*blockSize
					runs = append(runs, run{iter + int64(min(j*blockSize, n)), p[pos : pos+length]})
					pos += length
					i = j
				}
				iter += int64(n)
				ld.load(piece{ch: ch, runs: runs, buf: buf, err: errAt})
				off += n
			}
		}
		st.Keys++
		st.Filters++
		st.BitBytes += int64(total)
	}
}

// A loader copies verified pieces into their filters on a goroutine of its own, so that reading
// the file (and checksumming it) and copying into the filters (word by word, atomically) overlap:
// loading then goes at the speed of the slower of the two rather than of their sum.
type loader struct {
	free  chan []byte
	work  chan piece
	done  chan struct{}
	first error // the first LoadChunk error, set by the goroutine before done closes
	n     int   // buffers made
}

// A piece is the verified bytes of one piece of a filter, as runs to load, and the buffer that
// holds them, freed once they are loaded.
type piece struct {
	ch   *redisbloom.Chain
	runs []run
	buf  []byte
	err  func(error) error
}

// A run is bytes to load into a filter with LoadChunk: they end at iterator iter.
type run struct {
	iter int64
	data []byte
}

// loaderWorkers copy pieces in parallel (pieces never share a word): loading happens before
// the server serves, so it may use every core.
var loaderWorkers = max(1, runtime.GOMAXPROCS(0))

var loaderBuffers = loaderWorkers + 2

func newLoader() *loader {
	ld := &loader{free: make(chan []byte, loaderBuffers), work: make(chan piece, loaderBuffers), done: make(chan struct{})}
	work := ld.work
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range loaderWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				for _, r := range p.runs {
					if err := p.ch.LoadChunk(r.iter, r.data); err != nil {
						mu.Lock()
						if ld.first == nil {
							ld.first = p.err(err)
						}
						mu.Unlock()
						break
					}
				}
				ld.free <- p.buf
			}
		}()
	}
	go func() { wg.Wait(); close(ld.done) }()
	return ld
}

// buffer returns a free buffer of at least n bytes, making one while fewer than
// loaderBuffers exist.
func (ld *loader) buffer(n uint64) []byte {
	var b []byte
	select {
	case b = <-ld.free:
	default:
		if ld.n < loaderBuffers {
			ld.n++
		} else {
			b = <-ld.free
		}
	}
	if uint64(cap(b)) < n {
		b = make([]byte, n)
	}
	return b
}

func (ld *loader) load(p piece) { ld.work <- p }

// stop waits for the pieces handed over to be loaded and returns the first error.
func (ld *loader) stop() error {
	if ld.work != nil {
		close(ld.work)
		ld.work = nil
		<-ld.done
	}
	return ld.first
}

// clip shortens a key for an error message.
func clip(key []byte) []byte { return key[:min(len(key), 100)] }

type snapReader struct {
	r    *bufio.Reader
	size int64
	off  int64
	name string
}

func (d *snapReader) read(p []byte) error {
	n, err := io.ReadFull(d.r, p)
	d.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corrupt(d.name, d.off, "snapshot cut short (the file is shorter than %d bytes)", d.size)
		}
		return fmt.Errorf("persist: reading %s: %w", d.name, err)
	}
	return nil
}

// readCuckoo reads the slots of a cuckoo filter section whose key and header have been read:
// the header is checked, and the slots declared checked against the header and what is left of
// the file, before the sink allocates the filter.
func (d *snapReader) readCuckoo(sink Sink, key, meta []byte, expire int64, data uint64, at int64, section int) error {
	info, err := redisbloom.ParseCFHeader(meta)
	if err != nil {
		return corrupt(d.name, at, "section %d (key %q): %v", section, clip(key), err)
	}
	if binary.LittleEndian.Uint64(meta[24:]) != uint64(info.Filters) {
		// CF.LOADCHUNK keeps the low 16 bits; a snapshot holds only what Capture wrote.
		return corrupt(d.name, at, "section %d (key %q): %d sub-filters", section, clip(key), binary.LittleEndian.Uint64(meta[24:]))
	}
	if info.Bytes != data || data > uint64(d.size-d.off) {
		return corrupt(d.name, at, "section %d (key %q): %d bytes of slots declared, %d in the header, %d bytes left in the file", section, clip(key), data, info.Bytes, d.size-d.off)
	}
	cf, err := sink.Cuckoo(key, expire, meta)
	if err != nil {
		return fmt.Errorf("persist: %s: key %q (section at byte offset %d): %w", d.name, clip(key), at, err)
	}
	sizes := cf.FilterBytes()
	n := uint64(0)
	for _, s := range sizes {
		n += pieces(s)
	}
	if data+4*n > uint64(d.size-d.off) {
		return corrupt(d.name, at, "section %d (key %q): %d bytes of slots do not fit in the %d bytes left", section, clip(key), data, d.size-d.off)
	}
	var buf []byte
	le := binary.LittleEndian
	for i, s := range sizes {
		for off := uint64(0); off < s; {
			n := min(pieceSize, s-off)
			if uint64(cap(buf)) < n+4 {
				buf = make([]byte, n+4)
			}
			p := buf[:n+4]
			pieceAt := d.off
			if err := d.read(p); err != nil {
				return err
			}
			if le.Uint32(p[n:]) != crc(p[:n]) {
				return corrupt(d.name, pieceAt, "section %d (key %q): slots checksum mismatch", section, clip(key))
			}
			if err := cf.WriteSlots(i, off, p[:n]); err != nil {
				return corrupt(d.name, pieceAt, "section %d (key %q): %v", section, clip(key), err)
			}
			off += n
		}
	}
	return nil
}
