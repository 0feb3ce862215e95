package redisbloom

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"

	"github.com/bloomd/bloom"
)

// The dump file: a complete BF.SCANDUMP of one chain, as `bloom convert --to redisbloom` writes
// it and as BF.LOADCHUNK replays it. Little-endian throughout.
//
//	offset  size  field
//	0       8     magic "\x89BFDUMP\n"
//	8       4     format version, 1
//	12      4     n, the number of chunk records after the header
//	16      4     L, the header length (20 + 53·nfilters)
//	20      L     the header: BF.SCANDUMP's iterator-1 payload
//	20+L    4     CRC-32C (Castagnoli) of bytes 0 .. 20+L-1
//	then n records, in order, together covering every byte of every sub-filter once:
//	        8     int64 iterator, as BF.SCANDUMP returns it and BF.LOADCHUNK takes it
//	        4     uint32 c, the chunk length, 1 .. 16 MiB
//	        c     the chunk
//	end     4     CRC-32C of every byte before it
//
// A reader checks the magic, the version, the header's length and checksum, then the header
// itself (LoadHeader: sizes against limits and the Reserve hook, before allocating), then each
// record's iterator and length against the header before reading its bytes, so that a damaged
// or truncated file never causes an allocation beyond 16 MiB plus the declared filter, and the
// final checksum before returning the chain.

const (
	dumpMagic   = "\x89BFDUMP\n"
	dumpVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteTo writes the chain's complete dump in the dump-file format documented in file.go and
// returns the number of bytes written. It implements io.WriterTo. Like Chunks, the dump
// describes the links the chain had when it began; it is safe to call during Adds.
func (c *Chain) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)

	links := *c.links.Load()
	header := c.appendHeader(nil, links)
	var records uint64
	for _, l := range links {
		records += (l.bytes() + MaxChunkSize - 1) / MaxChunkSize
	}
	if records > math.MaxUint32 { // 64 PiB of bit arrays: unreachable on real machines
		return 0, fmt.Errorf("redisbloom: a chain of %d chunks does not fit the dump format", records)
	}
	le := binary.LittleEndian
	b := []byte(dumpMagic)
	b = le.AppendUint32(b, dumpVersion)
	b = le.AppendUint32(b, uint32(records))
	b = le.AppendUint32(b, uint32(len(header)))
	b = append(b, header...)
	out.Write(b)
	out.Write(le.AppendUint32(nil, crc.Sum32()))

	it := int64(1)
	var buf []byte
	for _, l := range links {
		for off := uint64(0); off < l.bytes(); {
			n := min(MaxChunkSize, l.bytes()-off)
			if uint64(cap(buf)) < n {
				buf = make([]byte, n)
			}
			chunk := buf[:n]
			l.f.ReadAt(chunk, int64(off))
			off += n
			it += int64(n)
			var rec [12]byte
			le.PutUint64(rec[0:], uint64(it))
			le.PutUint32(rec[8:], uint32(n))
			out.Write(rec[:])
			out.Write(chunk)
		}
	}
	bw.Write(le.AppendUint32(nil, crc.Sum32()))
	if err := bw.Flush(); err != nil { // bufio keeps the first write error
		return cw.n, fmt.Errorf("redisbloom: writing dump: %w", err)
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// ReadDump reads a chain written by WriteTo. Damage of any kind (bad magic, unknown version,
// checksum mismatch, truncation, records that do not tile the sub-filters) is reported as an
// error wrapping bloom.ErrCorrupt, and header problems as ErrBadData; a valid dump too large for
// memory fails as LoadHeader does (bloom.ErrTooLarge or the Reserve hook's error). The chain
// is only returned once the whole file, checksum included, has been verified. ReadDump reads
// exactly the dump from r: wrap r in a bufio.Reader for speed if it is unbuffered.
func ReadDump(r io.Reader, opts *Options) (*Chain, error) {
	d := &dumpReader{r: r, crc: crc32.New(castagnoli)}
	fixed := make([]byte, len(dumpMagic)+12)
	if err := d.read(fixed); err != nil {
		return nil, err
	}
	if string(fixed[:len(dumpMagic)]) != dumpMagic {
		return nil, corruptf("not a RedisBloom dump file (bad magic %q)", fixed[:len(dumpMagic)])
	}
	le := binary.LittleEndian
	p := fixed[len(dumpMagic):]
	if v := le.Uint32(p[0:]); v != dumpVersion {
		return nil, corruptf("unsupported dump version %d (want %d)", v, dumpVersion)
	}
	records, hlen := le.Uint32(p[4:]), le.Uint32(p[8:])
	if hlen > MaxHeaderSize {
		return nil, corruptf("header length %d exceeds %d", hlen, MaxHeaderSize)
	}
	header := make([]byte, hlen)
	if err := d.read(header); err != nil {
		return nil, err
	}
	if err := d.checkCRC("header"); err != nil {
		return nil, err
	}
	c, err := LoadHeader(header, opts)
	if err != nil {
		return nil, err
	}

	var total uint64
	for _, l := range *c.links.Load() {
		total += l.bytes()
	}
	var (
		pos uint64 // bytes of the concatenated bit arrays covered so far
		buf []byte
		rec [12]byte
	)
	for i := range records {
		if err := d.read(rec[:]); err != nil {
			return nil, err
		}
		it, n := int64(le.Uint64(rec[0:])), uint64(le.Uint32(rec[8:]))
		if n == 0 || n > MaxChunkSize || n > total-pos || it != int64(1+pos+n) {
			return nil, corruptf("record %d (iterator %d, %d bytes) does not continue the dump at byte %d of %d", i, it, n, pos, total)
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		if err := d.read(buf[:n]); err != nil {
			return nil, err
		}
		if err := c.LoadChunk(it, buf[:n]); err != nil {
			return nil, fmt.Errorf("redisbloom: dump record %d: %w", i, err)
		}
		pos += n
	}
	if pos != total {
		return nil, corruptf("records cover %d of the %d bytes of the sub-filters", pos, total)
	}
	if err := d.checkCRC("dump"); err != nil {
		return nil, err
	}
	return c, nil
}

// dumpReader reads exact amounts and checksums everything it reads.
type dumpReader struct {
	r   io.Reader
	crc hash.Hash32
}

func (d *dumpReader) read(p []byte) error {
	if _, err := io.ReadFull(d.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corruptf("dump truncated")
		}
		return fmt.Errorf("redisbloom: reading dump: %w", err)
	}
	d.crc.Write(p)
	return nil
}

// checkCRC reads a stored CRC-32C and compares it with that of everything read before it.
func (d *dumpReader) checkCRC(what string) error {
	want := d.crc.Sum32()
	var b [4]byte
	if _, err := io.ReadFull(d.r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corruptf("dump truncated")
		}
		return fmt.Errorf("redisbloom: reading dump: %w", err)
	}
	d.crc.Write(b[:])
	if got := binary.LittleEndian.Uint32(b[:]); got != want {
		return corruptf("%s checksum mismatch (stored %#08x, computed %#08x)", what, got, want)
	}
	return nil
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("redisbloom: %w: "+format, append([]any{bloom.ErrCorrupt}, args...)...)
}
