package rdb

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
)

// DUMP payloads (Redis's createDumpPayload and verifyDumpPayload, src/cluster.c): a value as an
// RDB file holds it, type byte first, then the RDB version in 2 bytes and the CRC-64 of all
// that in 8, both little-endian.

// dump encodes a payload with body as the value of type t.
func dump(opts *WriterOptions, t Type, body func(o *output)) ([]byte, error) {
	wo, err := opts.orDefault()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	o := newOutput(&buf, wo)
	o.byte(byte(t))
	body(o)
	if err := o.flush(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	b = binary.LittleEndian.AppendUint16(b, uint16(wo.Version))
	return binary.LittleEndian.AppendUint64(b, crcUpdate(0, b)), nil
}

// DumpString returns the DUMP payload of a string.
func DumpString(val []byte, opts *WriterOptions) ([]byte, error) {
	return dump(opts, TypeString, func(o *output) { o.str(val) })
}

// DumpHash returns the DUMP payload of a hash, encoded as WriteHash encodes it.
func DumpHash(fields []HashField, opts *WriterOptions) ([]byte, error) {
	wo, err := opts.orDefault()
	if err != nil {
		return nil, err
	}
	t, err := hashType(fields, &wo)
	if err != nil {
		return nil, err
	}
	return dump(&wo, t, func(o *output) { o.hash(t, fields) })
}

// DumpChain returns the DUMP payload of a RedisBloom Bloom filter, as RedisBloom 2.6's module
// type writes it.
func DumpChain(ch *redisbloom.Chain, opts *WriterOptions) ([]byte, error) {
	h, err := redisbloom.ParseHeader(ch.Header())
	if err != nil {
		return nil, err
	}
	return dump(opts, TypeModule2, func(o *output) { o.chain(h, ch) })
}

// DumpChainLen returns the length of the payload DumpChainTo writes for a chain with the links
// of header (a BF.SCANDUMP header, redisbloom.Chain.Header) in RDB version opts.Version: it
// follows from the links' sizes alone.
func DumpChainLen(header []byte, opts *WriterOptions) (int64, error) {
	if _, err := opts.orDefault(); err != nil {
		return 0, err
	}
	h, err := redisbloom.ParseHeader(header)
	if err != nil {
		return 0, err
	}
	modUint := func(v uint64) int64 { return 1 + lengthLen(v) }
	const modDouble = 1 + 8
	id, _ := ModuleID(BloomModule, bloomEncver)
	n := 1 + lengthLen(id) + modUint(h.Items) + modUint(uint64(len(h.Links))) + modUint(uint64(h.Options)) + modUint(uint64(h.Expansion))
	for _, l := range h.Links {
		n += modUint(l.Capacity) + modDouble + modUint(uint64(l.Hashes)) + modDouble + modUint(l.Bits) + modUint(uint64(l.N2))
		n += 1 + lengthLen(l.Bytes) + int64(l.Bytes) + modUint(l.Items)
	}
	return n + 1 + 10, nil // the module's EOF, then the footer
}

// lengthLen returns the bytes output.length writes for n.
func lengthLen(n uint64) int64 {
	switch {
	case n < 1<<6:
		return 1
	case n < 1<<14:
		return 2
	case n <= 1<<32-1:
		return 5
	}
	return 9
}

// DumpChainTo writes the DUMP payload of ch, with the links and counts of header (nil for
// ch.Header() now), to w, and returns the bytes written: exactly DumpChainLen(header), which is
// known before the first byte, so that the payload can go out as one RESP bulk string behind
// its length without being held in memory (MIGRATE of a large filter). The bits are read from
// ch as they are written, through a 1 MiB window, and written as they are: never compressed,
// and a sub-filter of at most 20 bytes never written as an integer, which RESTORE reads as
// Redis's own encoding; DumpChain writes the smaller payload Redis writes. The bits must not
// change while they are written (hold the filter's writes) unless the payload may carry adds
// made after header.
func DumpChainTo(w io.Writer, ch *redisbloom.Chain, header []byte, opts *WriterOptions) (int64, error) {
	wo, err := opts.orDefault()
	if err != nil {
		return 0, err
	}
	if header == nil {
		header = ch.Header()
	}
	h, err := redisbloom.ParseHeader(header)
	if err != nil {
		return 0, err
	}
	o := newOutput(w, wo)
	o.plain = true
	o.byte(byte(TypeModule2))
	o.chain(h, ch)
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], uint16(wo.Version))
	o.write(b[:])
	if err := o.flush(); err != nil {
		return o.n, err
	}
	var sum [8]byte
	binary.LittleEndian.PutUint64(sum[:], o.crc)
	n, err := w.Write(sum[:])
	return o.n + int64(n), err
}

// DumpCuckoo returns the DUMP payload of a RedisBloom cuckoo filter. cf must not change while
// it is encoded (hold it, or pass a copy).
func DumpCuckoo(cf *bloom.Cuckoo, opts *WriterOptions) ([]byte, error) {
	return dump(opts, TypeModule2, func(o *output) { o.cuckoo(cf) })
}

// ReadDump checks a DUMP payload as RESTORE does (at least 10 bytes, an RDB version not above
// maxVersion, 0 meaning MaxVersion, and its CRC-64; ErrDumpPayload otherwise) and returns its
// value as an Entry without a key, whose Read methods decode it. Bad data, including bytes
// after the value, fails with an error matching ErrCorrupt (Redis's "Bad data format"); a type
// bloomd does not hold, with an *UnsupportedError.
func ReadDump(payload []byte, maxVersion int) (*Entry, error) {
	if maxVersion == 0 {
		maxVersion = MaxVersion
	}
	if len(payload) < 10 {
		return nil, ErrDumpPayload
	}
	body, footer := payload[:len(payload)-10], payload[len(payload)-10:]
	if v := int(binary.LittleEndian.Uint16(footer)); v > maxVersion {
		return nil, ErrDumpPayload
	}
	if binary.LittleEndian.Uint64(footer[2:]) != crcUpdate(0, payload[:len(payload)-8]) {
		return nil, ErrDumpPayload
	}
	in := &input{r: bufioReader(body), size: int64(len(body))}
	t, err := in.ReadByte()
	if err != nil {
		return nil, err
	}
	if !knownType(Type(t)) {
		return nil, corruptf("unknown value type %d", t)
	}
	e := &Entry{Type: Type(t), Idle: -1, Freq: -1}
	e.v = &value{in: in, typ: e.Type, e: e, version: int(binary.LittleEndian.Uint16(footer)), dump: true}
	refuse, err := e.classify()
	if err != nil {
		return nil, err
	}
	if refuse != nil {
		return nil, refuse
	}
	return e, nil
}
