package persist

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// The append-only log's format. A log file is a header and a sequence of records, each a
// command (its argv) framed so that a reader can tell a record cut short by a crash from one
// damaged afterwards. Little-endian throughout; CRC-32C (Castagnoli) everywhere.
//
//	header, 44 bytes:
//	0   8  magic "\x89BDLOG\r\n"
//	8   4  version, 1
//	12  4  flags, 0
//	16  8  lineage: a random id shared by a snapshot and the logs that follow it
//	24  8  sequence number of this log (1, 2, ...)
//	32  8  creation time, unix milliseconds
//	40  4  CRC-32C of bytes 0..39
//
//	record, 12 bytes + payload:
//	0   4  payload length L, 2 .. MaxRecord
//	4   4  CRC-32C of the payload
//	8   4  CRC-32C of bytes 0..7, so a damaged length is known for what it is before it is used
//	12  L  payload: uvarint argc ≥ 1, then for each argument uvarint length and the bytes
const (
	logMagic      = "\x89BDLOG\r\n"
	logVersion    = 1
	logHeaderSize = 44
	recHeaderSize = 12

	// MaxRecord bounds one record's payload: larger than any command bloomd accepts
	// (proto-max-bulk-len is at most 2 GiB), small enough for a uint32.
	MaxRecord = 1<<32 - 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// A LogHeader is what a log file says about itself.
type LogHeader struct {
	Lineage uint64
	Seq     uint64
	Created int64 // unix ms
}

func (h LogHeader) append(b []byte) []byte {
	start := len(b)
	le := binary.LittleEndian
	b = append(b, logMagic...)
	b = le.AppendUint32(b, logVersion)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, h.Lineage)
	b = le.AppendUint64(b, h.Seq)
	b = le.AppendUint64(b, uint64(h.Created))
	return le.AppendUint32(b, crc(b[start:]))
}

// parseLogHeader decodes a log header; the error says what is wrong.
func parseLogHeader(b []byte) (LogHeader, error) {
	le := binary.LittleEndian
	switch {
	case len(b) < logHeaderSize:
		return LogHeader{}, errors.New("file shorter than a log header")
	case string(b[:8]) != logMagic:
		return LogHeader{}, errors.New("not a bloomd append-only log (bad magic)")
	case le.Uint32(b[40:]) != crc(b[:40]):
		return LogHeader{}, errors.New("log header checksum mismatch")
	case le.Uint32(b[8:]) != logVersion:
		return LogHeader{}, errors.New("unsupported log version")
	}
	return LogHeader{Lineage: le.Uint64(b[16:]), Seq: le.Uint64(b[24:]), Created: int64(le.Uint64(b[32:]))}, nil
}

// appendRecord appends argv as one framed record.
func appendRecord(b []byte, argv [][]byte) []byte {
	start := len(b)
	b = append(b, make([]byte, recHeaderSize)...)
	b = binary.AppendUvarint(b, uint64(len(argv)))
	for _, a := range argv {
		b = binary.AppendUvarint(b, uint64(len(a)))
		b = append(b, a...)
	}
	payload := b[start+recHeaderSize:]
	h := b[start : start+recHeaderSize]
	le := binary.LittleEndian
	le.PutUint32(h[0:], uint32(len(payload)))
	le.PutUint32(h[4:], crc(payload))
	le.PutUint32(h[8:], crc(h[:8]))
	return b
}

// parseRecordHeader returns the payload length and checksum of a record header, or ok false if
// the header is damaged.
func parseRecordHeader(h []byte) (n uint32, sum uint32, ok bool) {
	le := binary.LittleEndian
	if le.Uint32(h[8:]) != crc(h[:8]) {
		return 0, 0, false
	}
	n = le.Uint32(h[0:])
	return n, le.Uint32(h[4:]), n >= 2
}

// decodeArgv splits a payload into its arguments, which alias p; argv is reused.
func decodeArgv(p []byte, argv [][]byte) ([][]byte, error) {
	argc, n := binary.Uvarint(p)
	if n <= 0 || argc == 0 || argc > uint64(len(p)) {
		return argv, errors.New("bad argument count")
	}
	p = p[n:]
	argv = argv[:0]
	for range argc {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return argv, errors.New("argument runs past the record")
		}
		argv = append(argv, p[n:n+int(l)])
		p = p[n+int(l):]
	}
	if len(p) != 0 {
		return argv, errors.New("bytes after the last argument")
	}
	return argv, nil
}

func crcUpdate(sum uint32, p []byte) uint32 { return crc32.Update(sum, castagnoli, p) }
