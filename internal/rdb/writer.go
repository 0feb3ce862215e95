package rdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
)

// WriterOptions configure a Writer and the DUMP payload encoders. A nil *WriterOptions means
// the zero value: RDB version 10 (Redis 7.0), compression and checksum on, as Redis's defaults.
type WriterOptions struct {
	// Version is the RDB version to write, 9 (Redis 6.2) to 12 (Redis 7.4); 0 means 10. It is
	// the number in the header (the footer of a DUMP payload), and it decides the encodings:
	// for 9, hashes are written as hash tables, since Redis 6.2 does not read listpacks.
	Version int

	// NoCompression writes every string as it is (Redis's rdbcompression no). Otherwise a
	// string longer than 20 bytes is LZF-compressed when that saves at least 4 bytes.
	NoCompression bool

	// NoChecksum writes 0 as the file's checksum (Redis's rdbchecksum no), which Redis reads as
	// "not checked". It does not apply to DUMP payloads, which always carry theirs.
	NoChecksum bool

	// HashMaxListpackEntries and HashMaxListpackValue are Redis's hash-max-listpack-entries
	// and hash-max-listpack-value: a hash with at most that many fields, none of whose fields
	// or values is longer, is written as a listpack, as Redis 7.0 keeps it. 0 means Redis's
	// defaults, 512 and 64.
	HashMaxListpackEntries int
	HashMaxListpackValue   int
}

func (o *WriterOptions) orDefault() (WriterOptions, error) {
	var w WriterOptions
	if o != nil {
		w = *o
	}
	if w.Version == 0 {
		w.Version = DefaultVersion
	}
	if w.Version < MinVersion || w.Version > MaxVersion {
		return w, fmt.Errorf("%w: cannot write version %d (only %d to %d)", ErrVersion, w.Version, MinVersion, MaxVersion)
	}
	if w.HashMaxListpackEntries == 0 {
		w.HashMaxListpackEntries = 512
	}
	if w.HashMaxListpackValue == 0 {
		w.HashMaxListpackValue = 64
	}
	return w, nil
}

// KeyMeta is what an RDB file keeps about a key besides its name and value.
type KeyMeta struct {
	Expire int64 // unix ms; 0 for none

	// LRU and LFU information, which Redis writes when its maxmemory-policy is an LRU or an LFU
	// one: Idle seconds (OBJECT IDLETIME) when HasIdle, the frequency Freq when HasFreq.
	HasIdle bool
	Idle    uint64
	HasFreq bool
	Freq    uint8
}

// output encodes RDB data to a writer, keeping its CRC-64 and length. The first write error
// sticks; every later write is dropped and the error returned at the end.
type output struct {
	w    *bufio.Writer
	crc  uint64
	n    int64
	err  error
	opts WriterOptions
	z    *lzfCompressor
	buf  []byte // scratch

	// plain writes every string read in pieces (strFrom) as its length and bytes, whatever
	// its size or content, so that the output's length follows from the lengths alone
	// (DumpChainTo).
	plain bool
}

// crcWriter updates the output's checksum with what goes to the underlying writer, in the
// large blocks bufio hands it.
type crcWriter struct {
	o *output
	w io.Writer
}

func (c crcWriter) Write(p []byte) (int, error) {
	c.o.crc = crcUpdate(c.o.crc, p)
	c.o.n += int64(len(p))
	return c.w.Write(p)
}

func newOutput(w io.Writer, opts WriterOptions) *output {
	o := &output{opts: opts}
	o.w = bufio.NewWriterSize(crcWriter{o, w}, 1<<16)
	return o
}

func (o *output) write(p []byte) {
	if o.err == nil {
		_, o.err = o.w.Write(p)
	}
}

func (o *output) byte(b byte) {
	if o.err == nil {
		o.err = o.w.WriteByte(b)
	}
}

// length writes a length as rdbSaveLen does: 6, 14, 32 or 64 bits.
func (o *output) length(n uint64) {
	var b [9]byte
	o.write(appendLength(b[:0], n))
}

// appendLength appends a length as rdbSaveLen writes it.
func appendLength(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, 0x40|byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

// intString writes s as an integer encoding when it is a canonical decimal that fits 32 bits, as
// rdbTryIntegerEncoding does for strings of at most 11 bytes, and reports whether it did.
func (o *output) intString(s []byte) bool {
	if len(s) > 11 {
		return false
	}
	v, ok := parseInt(s)
	switch {
	case !ok || v < math.MinInt32 || v > math.MaxInt32:
		return false
	case v >= math.MinInt8 && v <= math.MaxInt8:
		o.write([]byte{0xC0 | encInt8, byte(v)})
	case v >= math.MinInt16 && v <= math.MaxInt16:
		o.write([]byte{0xC0 | encInt16, byte(v), byte(v >> 8)})
	default:
		o.write([]byte{0xC0 | encInt32, byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
	}
	return true
}

func (o *output) compressor() *lzfCompressor {
	if o.z == nil {
		o.z = new(lzfCompressor)
	}
	return o.z
}

// lzfBlob writes a compressed string: its marker, lengths and bytes.
func (o *output) lzfBlob(c []byte, n uint64) {
	o.byte(0xC0 | encLZF)
	o.length(uint64(len(c)))
	o.length(n)
	o.write(c)
}

// str writes a string as rdbSaveRawString does: an integer encoding when it is one, else
// LZF-compressed when longer than 20 bytes and at least 4 bytes shorter so, else as it is.
func (o *output) str(s []byte) {
	if o.intString(s) {
		return
	}
	if !o.opts.NoCompression && len(s) > 20 {
		c, ok := o.compressor().compressBytes(o.buf[:0], s, int64(len(s)-4))
		if cap(c) <= 1<<20 {
			o.buf = c
		}
		if ok {
			o.lzfBlob(c, uint64(len(s)))
			return
		}
	}
	o.length(uint64(len(s)))
	o.write(s)
}

// strFrom writes a string of n bytes read with readAt, as str would write those bytes, reading
// them in pieces. When it compresses, it reads every byte once and holds the compressed form
// (at most n bytes); when that is not shorter, it reads them again and writes them as they are
// (the data may have changed in between: a filter's bits, which only gain bits).
func (o *output) strFrom(n uint64, readAt func(p []byte, off int64)) {
	if n <= 20 && !o.plain {
		var b [20]byte
		readAt(b[:n], 0)
		o.str(b[:n])
		return
	}
	window := make([]byte, 0, min(n, lzfWindow)+lzfMaxOff+lzfMaxRef+8)
	if !o.opts.NoCompression && !o.plain && !o.incompressible(n, window, readAt) {
		c, ok := o.compressor().compressFrom(nil, int64(n), int64(n-4), window, readAt)
		if ok {
			o.lzfBlob(c, n)
			return
		}
	}
	o.length(n)
	p := window[:min(n, lzfWindow)]
	for off := uint64(0); off < n; {
		k := min(n-off, uint64(len(p)))
		readAt(p[:k], int64(off))
		o.write(p[:k])
		off += k
	}
}

// incompressible reports whether a string of n bytes read with readAt is not worth trying to
// compress whole: when it is larger than probeFrom and its first lzfWindow bytes do not shrink
// by a 128th. A filter's bits are spread evenly, so its first MiB tells how the rest compresses,
// and a full filter (half its bits set) does not compress at all: Redis finds that out at the
// end of the string, having compressed all of it, which costs most of the time of a save.
func (o *output) incompressible(n uint64, window []byte, readAt func(p []byte, off int64)) bool {
	if n < probeFrom {
		return false
	}
	_, ok := o.compressor().compressFrom(nil, lzfWindow, lzfWindow-lzfWindow/128, window, readAt)
	return !ok
}

// probeFrom is the size from which strFrom compresses a string's first MiB before the whole.
const probeFrom = 4 << 20

func (o *output) flush() error {
	if o.err == nil {
		o.err = o.w.Flush()
	}
	return o.err
}

// A Writer writes an RDB file or stream: the header and aux fields, then keys database by
// database, then the end marker and checksum (Close). Keys are written with their value types
// as Redis 7.0 writes them: strings, hashes (listpack or hash table), RedisBloom's Bloom and
// cuckoo filters as module values of encoding 4. Its memory is a 64 KiB buffer, plus, while a
// value is written, the compressed form of one string (at most its length) and a 1 MiB window;
// filters are read from in pieces, not copied whole. It is not safe for concurrent use.
type Writer struct {
	o      *output
	closed bool
}

// NewWriter writes the header of an RDB file of the version opts asks for, then the aux fields,
// to w (see DefaultAux for those Redis writes). It returns ErrVersion for a version it cannot
// write.
func NewWriter(w io.Writer, aux []AuxField, opts *WriterOptions) (*Writer, error) {
	o, err := opts.orDefault()
	if err != nil {
		return nil, err
	}
	wr := &Writer{o: newOutput(w, o)}
	wr.o.write(fmt.Appendf(nil, "REDIS%04d", o.Version))
	for _, a := range aux {
		wr.o.aux(a)
	}
	return wr, wr.o.err
}

func (o *output) aux(a AuxField) {
	o.byte(opAux)
	o.str([]byte(a.Name))
	o.str([]byte(a.Value))
}

// Aux writes an aux field where the writer is: Redis (and Reader) read aux fields anywhere
// before the end marker, so one whose value is known only once the keys are written can follow
// them.
func (w *Writer) Aux(a AuxField) error {
	if err := w.check(); err != nil {
		return err
	}
	w.o.aux(a)
	return w.o.err
}

// AppendAux appends the bytes of aux fields as a Writer writes them (uncompressed), for a
// caller that adds them to an RDB written elsewhere.
func AppendAux(b []byte, aux ...AuxField) []byte {
	for _, a := range aux {
		b = append(b, opAux)
		for _, s := range []string{a.Name, a.Value} {
			b = appendLength(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// DefaultAux returns the aux fields Redis 7.0 writes at the start of a file it saves (without
// those of a replication full sync: repl-stream-db, repl-id, repl-offset).
func DefaultAux(redisVersion string, ctime int64, usedMem uint64) []AuxField {
	return []AuxField{
		{"redis-ver", redisVersion},
		{"redis-bits", "64"},
		{"ctime", fmt.Sprint(ctime)},
		{"used-mem", fmt.Sprint(usedMem)},
		{"aof-base", "0"},
	}
}

// Written returns the bytes written so far, buffered ones included.
func (w *Writer) Written() int64 { return w.o.n + int64(w.o.w.Buffered()) }

// SelectDB starts database db, with the number of its keys and of those with an expiry time
// (RESIZEDB, a hint for the reader's tables).
func (w *Writer) SelectDB(db int, keys, expires uint64) error {
	if err := w.check(); err != nil {
		return err
	}
	w.o.byte(opSelectDB)
	w.o.length(uint64(db))
	w.o.byte(opResizeDB)
	w.o.length(keys)
	w.o.length(expires)
	return w.o.err
}

func (w *Writer) check() error {
	if w.closed {
		return errors.New("rdb: writer closed")
	}
	return w.o.err
}

// keyHead writes the key's expiry, LRU and LFU opcodes, its type and its name.
func (w *Writer) keyHead(t Type, key []byte, m KeyMeta) {
	o := w.o
	if m.Expire != 0 {
		o.byte(opExpireTimeMs)
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(m.Expire))
		o.write(b[:])
	}
	if m.HasIdle {
		o.byte(opIdle)
		o.length(m.Idle)
	}
	if m.HasFreq {
		o.byte(opFreq)
		o.byte(m.Freq)
	}
	o.byte(byte(t))
	o.str(key)
}

// WriteString writes a string key.
func (w *Writer) WriteString(key, val []byte, m KeyMeta) error {
	if err := w.check(); err != nil {
		return err
	}
	w.keyHead(TypeString, key, m)
	w.o.str(val)
	return w.o.err
}

// WriteHash writes a hash key: as a listpack when it is small enough (see WriterOptions) and
// the version has listpacks, else as a hash table. Fields with an expiry time are refused
// (Redis 7.4's field expiry is not written).
func (w *Writer) WriteHash(key []byte, fields []HashField, m KeyMeta) error {
	if err := w.check(); err != nil {
		return err
	}
	t, err := hashType(fields, &w.o.opts)
	if err != nil {
		return err
	}
	w.keyHead(t, key, m)
	w.o.hash(t, fields)
	return w.o.err
}

// hashType chooses the encoding a hash is written in.
func hashType(fields []HashField, o *WriterOptions) (Type, error) {
	if len(fields) == 0 {
		return 0, ErrEmptyKey
	}
	small := len(fields) <= o.HashMaxListpackEntries && o.Version >= Version70
	for _, f := range fields {
		if f.Expire != 0 {
			return 0, fmt.Errorf("rdb: hash field %q has an expiry time, which this writer does not write", clip(f.Field))
		}
		if len(f.Field) > o.HashMaxListpackValue || len(f.Value) > o.HashMaxListpackValue {
			small = false
		}
	}
	if small {
		return TypeHashListpack, nil
	}
	return TypeHash, nil
}

func (o *output) hash(t Type, fields []HashField) {
	if t == TypeHashListpack {
		elems := make([][]byte, 0, 2*len(fields))
		for _, f := range fields {
			elems = append(elems, f.Field, f.Value)
		}
		o.str(appendListpack(nil, elems))
		return
	}
	o.length(uint64(len(fields)))
	for _, f := range fields {
		o.str(f.Field)
		o.str(f.Value)
	}
}

// module value fields
func (o *output) modUint(v uint64) { o.length(modUInt); o.length(v) }

func (o *output) modDouble(v float64) {
	o.length(modDouble)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
	o.write(b[:])
}

func (o *output) moduleID(name string, encver int) {
	id, _ := ModuleID(name, encver) // constant names: cannot fail
	o.length(id)
}

// chain writes a Bloom filter as RedisBloom 2.6's BFRdbSave does (encoding 4), with the links
// and counts of h and the bits read from ch as they are written.
func (o *output) chain(h redisbloom.Header, ch *redisbloom.Chain) {
	o.moduleID(BloomModule, bloomEncver)
	o.modUint(h.Items)
	o.modUint(uint64(len(h.Links)))
	o.modUint(uint64(h.Options))
	o.modUint(uint64(h.Expansion))
	var base int64
	for _, l := range h.Links {
		o.modUint(l.Capacity)
		o.modDouble(l.ErrorRate)
		o.modUint(uint64(l.Hashes))
		o.modDouble(l.BitsPerEntry)
		o.modUint(l.Bits)
		o.modUint(uint64(l.N2))
		o.length(modString)
		start := base
		o.strFrom(l.Bytes, func(p []byte, off int64) { ch.ReadAt(p, start+off) })
		o.modUint(l.Items)
		base += int64(l.Bytes)
	}
	o.length(modEOF)
}

// cuckoo writes a cuckoo filter as RedisBloom 2.6's CFRdbSave does (encoding 4).
func (o *output) cuckoo(cf *bloom.Cuckoo) {
	info := cf.Info()
	o.moduleID(CuckooModule, cuckooEncver)
	o.modUint(uint64(info.Filters))
	o.modUint(info.Buckets)
	o.modUint(info.Items)
	o.modUint(info.Deletes)
	o.modUint(uint64(info.BucketSize))
	o.modUint(uint64(info.MaxIterations))
	o.modUint(uint64(info.Expansion))
	for i, size := range cf.FilterBytes() {
		o.modUint(size / uint64(info.BucketSize))
		o.length(modString)
		o.strFrom(size, func(p []byte, off int64) { cf.ReadSlots(i, uint64(off), p) })
	}
	o.length(modEOF)
}

// WriteChain writes a RedisBloom Bloom filter key. header is the chain's BF.SCANDUMP header as
// of the instant the file describes (Chain.Header then), or nil for now; the bits are read
// from ch while they are written, in pieces: they may include adds made after that instant,
// which a log replayed after the file sets again (see internal/persist). Links added since
// the header are left out.
func (w *Writer) WriteChain(key []byte, ch *redisbloom.Chain, header []byte, m KeyMeta) error {
	if err := w.check(); err != nil {
		return err
	}
	if header == nil {
		header = ch.Header()
	}
	h, err := redisbloom.ParseHeader(header)
	if err != nil {
		return fmt.Errorf("rdb: key %q: %w", clip(key), err)
	}
	w.keyHead(TypeModule2, key, m)
	w.o.chain(h, ch)
	return w.o.err
}

// WriteCuckoo writes a RedisBloom cuckoo filter key. Cuckoo insertions move fingerprints, so a
// snapshot passes a copy taken at its instant (bloom.Cuckoo.Clone), not a filter in use.
func (w *Writer) WriteCuckoo(key []byte, cf *bloom.Cuckoo, m KeyMeta) error {
	if err := w.check(); err != nil {
		return err
	}
	w.keyHead(TypeModule2, key, m)
	w.o.cuckoo(cf)
	return w.o.err
}

// Close writes the end marker and the checksum and flushes; it does not close the underlying
// writer. It returns the first error of any write.
func (w *Writer) Close() error {
	if w.closed {
		return w.o.err
	}
	w.closed = true
	w.o.byte(opEOF)
	if err := w.o.flush(); err != nil {
		return err
	}
	sum := w.o.crc
	if w.o.opts.NoChecksum {
		sum = 0
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], sum)
	w.o.write(b[:])
	return w.o.flush()
}
