package rdb

import (
	"bytes"
	"encoding/binary"

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
