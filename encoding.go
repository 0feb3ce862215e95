package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The native file format: one record per filter, little-endian throughout.
//
//	offset size field
//	0      8    magic "\x89BLOOM\r\n" (a non-ASCII first byte and CRLF catch text-mode mangling)
//	8      2    format version, 1
//	10     1    kind: 1 classic, 2 blocked, 3 scalable, 4 counting, 5 cuckoo (cuckoo_encoding.go)
//	11     1    hashing scheme (Scheme)
//	12     4    k, hash functions per key
//	16     8    m, the modulus in bits (counters for the counting kind); for the classic kind
//	            any m under any scheme, as NewExact allows
//	24     8    count: items added (exact where the kind tracks it, else the estimate at write)
//	32     8    payload length in bytes
//	40     20   kind-specific parameters (zero for the classic kind)
//	60     4    CRC-32C (Castagnoli) of bytes 0..59
//	64     n    payload: for the classic kind, the bit array's words, little-endian
//	64+n   4    CRC-32C of the payload
//
// A reader checks, in order: the magic, the version, the header checksum, the kind, scheme and
// sizes against the kind's rules and the memory limit, and only then allocates; the payload is
// read in bounded steps so a truncated stream never causes an allocation larger than about twice
// what it delivered, and its checksum is verified before the filter is handed out.

const (
	fileMagic   = "\x89BLOOM\r\n"
	fileVersion = 1
	headerSize  = 64
	paramsSize  = 20
)

type kind uint8

const (
	kindClassic  kind = 1
	kindBlocked  kind = 2
	kindScalable kind = 3
	kindCounting kind = 4
)

func (k kind) String() string {
	switch k {
	case kindClassic:
		return "classic"
	case kindBlocked:
		return "blocked"
	case kindScalable:
		return "scalable"
	case kindCounting:
		return "counting"
	case kindCuckoo:
		return "cuckoo"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileHeader is the decoded fixed part of a record.
type fileHeader struct {
	kind    kind
	scheme  Scheme
	k       uint32
	m       uint64
	count   uint64
	payload uint64
	params  [paramsSize]byte
}

func (h *fileHeader) marshal() []byte {
	b := make([]byte, headerSize)
	copy(b, fileMagic)
	binary.LittleEndian.PutUint16(b[8:], fileVersion)
	b[10] = byte(h.kind)
	b[11] = byte(h.scheme)
	binary.LittleEndian.PutUint32(b[12:], h.k)
	binary.LittleEndian.PutUint64(b[16:], h.m)
	binary.LittleEndian.PutUint64(b[24:], h.count)
	binary.LittleEndian.PutUint64(b[32:], h.payload)
	copy(b[40:60], h.params[:])
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

// corruptf returns an ErrCorrupt error with a description of what is wrong.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// readHeader reads and checks the fixed header of one record. want is the kind the caller can
// decode; a record of another kind is refused with a message naming both.
func readHeader(r io.Reader, want kind) (fileHeader, error) {
	h, err := readAnyHeader(r)
	if err != nil {
		return h, err
	}
	if h.kind != want {
		return h, corruptf("file holds a %s filter, not a %s one", h.kind, want)
	}
	return h, nil
}

// readAnyHeader reads and checks the fixed header of one record of any kind.
func readAnyHeader(r io.Reader) (fileHeader, error) {
	var b [headerSize]byte
	if n, err := io.ReadFull(r, b[:]); err != nil {
		if n == 0 && err == io.EOF {
			return fileHeader{}, corruptf("empty input, expected a %d-byte header", headerSize)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fileHeader{}, corruptf("truncated header: %d of %d bytes", n, headerSize)
		}
		return fileHeader{}, err
	}
	if string(b[:8]) != fileMagic {
		return fileHeader{}, corruptf("not a bloom filter file (bad magic % x)", b[:8])
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != fileVersion {
		return fileHeader{}, corruptf("format version %d is not supported (this build reads version %d)", v, fileVersion)
	}
	if got, want := binary.LittleEndian.Uint32(b[60:]), crc32.Checksum(b[:60], castagnoli); got != want {
		return fileHeader{}, corruptf("header checksum mismatch (stored %08x, computed %08x)", got, want)
	}
	h := fileHeader{
		kind:    kind(b[10]),
		scheme:  Scheme(b[11]),
		k:       binary.LittleEndian.Uint32(b[12:]),
		m:       binary.LittleEndian.Uint64(b[16:]),
		count:   binary.LittleEndian.Uint64(b[24:]),
		payload: binary.LittleEndian.Uint64(b[32:]),
	}
	copy(h.params[:], b[40:60])
	return h, nil
}

// checkBits validates the sizes of a record holding one bit array against its payload length
// and the memory limit, before anything is allocated.
func (h *fileHeader) checkBits() error {
	if !h.scheme.Valid() {
		return corruptf("unknown hashing scheme %d", h.scheme)
	}
	if h.k < 1 || h.k > MaxK {
		return corruptf("k=%d is not in [1, %d]", h.k, MaxK)
	}
	if h.m == 0 || float64(h.m) > maxBits {
		return corruptf("size of %d bits is not in [1, 2^56]", h.m)
	}
	if want := (h.m + 63) / 64 * 8; h.payload != want {
		return corruptf("payload of %d bytes does not match %d bits (want %d bytes)", h.payload, h.m, want)
	}
	return checkAlloc(h.payload)
}

// readWords reads a payload of n bytes (a multiple of 8) followed by its CRC-32C. Reads start
// small and double, and the array grows with them, so a header that promises more than the
// stream holds costs memory in proportion to what was actually delivered.
func readWords(r io.Reader, n uint64) (bitArray, error) {
	const firstStep, maxStep = 1 << 16, 1 << 26
	words := n / 8
	a := make(bitArray, 0, min(words, firstStep/8))
	var buf []byte
	crc := uint32(0)
	for step := uint64(firstStep); uint64(len(a))*8 < n; step = min(2*step, maxStep) {
		got := uint64(len(a)) * 8
		want := min(n-got, step)
		if uint64(cap(buf)) < want {
			buf = make([]byte, want)
		}
		chunk := buf[:want]
		if c, err := io.ReadFull(r, chunk); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, corruptf("truncated payload: %d of %d bytes", got+uint64(c), n)
			}
			return nil, err
		}
		crc = crc32.Update(crc, castagnoli, chunk)
		if need := uint64(len(a)) + want/8; uint64(cap(a)) < need {
			grown := make(bitArray, len(a), min(words, max(2*uint64(cap(a)), need)))
			copy(grown, a)
			a = grown
		}
		for i := 0; i < len(chunk); i += 8 {
			a = append(a, binary.LittleEndian.Uint64(chunk[i:]))
		}
	}
	if err := readTrailer(r, crc); err != nil {
		return nil, err
	}
	return a, nil
}

func readTrailer(r io.Reader, crc uint32) error {
	var t [4]byte
	if n, err := io.ReadFull(r, t[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corruptf("truncated payload checksum: %d of 4 bytes", n)
		}
		return err
	}
	if stored := binary.LittleEndian.Uint32(t[:]); stored != crc {
		return corruptf("payload checksum mismatch (stored %08x, computed %08x)", stored, crc)
	}
	return nil
}

// writeWords writes the array's words little-endian followed by their CRC-32C, reading each word
// atomically so the filter may be written while other goroutines add to it.
func writeWords(w io.Writer, a bitArray) (int64, error) {
	const step = 1 << 16
	buf := make([]byte, min(a.byteLen(), step))
	crc := uint32(0)
	total := int64(0)
	for off := int64(0); off < a.byteLen(); {
		n, _ := a.readAt(buf[:min(int64(len(buf)), a.byteLen()-off)], off)
		crc = crc32.Update(crc, castagnoli, buf[:n])
		c, err := w.Write(buf[:n])
		total += int64(c)
		if err != nil {
			return total, err
		}
		off += int64(n)
	}
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], crc)
	c, err := w.Write(t[:])
	return total + int64(c), err
}

// countingReader counts the bytes read through it, for io.ReaderFrom's return value.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// WriteTo writes f in the native format (see the package documentation). It implements
// io.WriterTo and may run while other goroutines add to f; each word is read atomically.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	h := fileHeader{kind: kindClassic, scheme: f.scheme, k: uint32(f.k), m: f.m,
		count: f.ApproximateCount(), payload: uint64(f.bits.byteLen())}
	n, err := w.Write(h.marshal())
	if err != nil {
		return int64(n), err
	}
	c, err := writeWords(w, f.bits)
	return int64(n) + c, err
}

// ReadFrom replaces f with a classic filter read in the native format. It implements
// io.ReaderFrom and reads exactly one record, leaving r positioned after it. On any error f is
// unchanged; errors caused by the bytes wrap ErrCorrupt, and sizes beyond this machine's memory
// are refused with ErrTooLarge before allocation.
func (f *Filter) ReadFrom(r io.Reader) (int64, error) {
	cr := &countingReader{r: r}
	g, err := readClassic(cr)
	if err != nil {
		return cr.n, err
	}
	*f = *g
	return cr.n, nil
}

func readClassic(r io.Reader) (*Filter, error) {
	h, err := readHeader(r, kindClassic)
	if err != nil {
		return nil, err
	}
	return readClassicBody(r, h)
}

// readClassicBody reads the payload of a classic record whose header h has been read.
func readClassicBody(r io.Reader, h fileHeader) (*Filter, error) {
	if err := h.checkBits(); err != nil {
		return nil, err
	}
	bits, err := readWords(r, h.payload)
	if err != nil {
		return nil, err
	}
	adviseHugePages(bits)
	return newFilter(bits, h.m, int(h.k), h.scheme), nil
}

// MarshalBinary returns f in the native format. It implements encoding.BinaryMarshaler.
func (f *Filter) MarshalBinary() ([]byte, error) {
	var b sliceWriter
	b.buf = make([]byte, 0, headerSize+f.bits.byteLen()+4)
	if _, err := f.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.buf, nil
}

// UnmarshalBinary replaces f with the filter encoded in data, which must hold exactly one native
// record. It implements encoding.BinaryUnmarshaler; on error f is unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	r := &byteReader{b: data}
	g, err := readClassic(r)
	if err != nil {
		return err
	}
	if len(r.b) != 0 {
		return corruptf("%d unexpected bytes after the filter", len(r.b))
	}
	*f = *g
	return nil
}

type sliceWriter struct{ buf []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.buf = append(w.buf, p...); return len(p), nil }

// byteReader is a bytes.Reader that exposes what it has not read yet.
type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// marshal returns the record w writes, with room reserved for a payload of the given size.
func marshal(w io.WriterTo, payload int64) ([]byte, error) {
	var b sliceWriter
	b.buf = make([]byte, 0, headerSize+payload+4)
	if _, err := w.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.buf, nil
}

// unmarshal decodes data, which must hold exactly one record of kind want, with body.
func unmarshal[T any](data []byte, want kind, body func(io.Reader, fileHeader) (T, error)) (T, error) {
	var zero T
	r := &byteReader{b: data}
	h, err := readHeader(r, want)
	if err != nil {
		return zero, err
	}
	v, err := body(r, h)
	if err != nil {
		return zero, err
	}
	if len(r.b) != 0 {
		return zero, corruptf("%d unexpected bytes after the filter", len(r.b))
	}
	return v, nil
}
