package persist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// A LogScanner reads the records of one log file in order, checking every checksum, and tells
// the trace of a crash from damage: see Next.
type LogScanner struct {
	name    string
	r       *bufio.Reader
	size    int64
	off     int64 // offset of the next record
	recOff  int64 // offset of the record Next returned
	header  LogHeader
	hdrBuf  [recHeaderSize]byte
	payload []byte
	argv    [][]byte
	records int
	err     error
	torn    *Torn
}

// Torn describes a damaged record at the end of a log, followed by nothing but zero bytes: what
// a crash in the middle of a write leaves. Such a record was never acknowledged as durable (or
// was damaged after it was, which a reader cannot tell apart); it is dropped and the log is
// truncated at Offset.
type Torn struct {
	Offset int64  // where the damaged record starts: the length of the good part
	Bytes  int64  // bytes dropped, from Offset to the end of the file
	Reason string // what was wrong with the record
}

func (t *Torn) String() string {
	return fmt.Sprintf("%s at byte offset %d (%d bytes dropped)", t.Reason, t.Offset, t.Bytes)
}

// NewLogScanner reads the header of a log file of size bytes from r, whose name errors report.
// A file shorter than a header, or holding only zero bytes, has a torn header (Torn reports it
// at offset 0, and there are no records): the crash came while the file was being created. A
// damaged or foreign header is a *CorruptError.
func NewLogScanner(r io.Reader, size int64, name string) (*LogScanner, error) {
	s := &LogScanner{name: name, r: bufio.NewReaderSize(r, int(min(max(size, 16), 1<<20))), size: size}
	if size < logHeaderSize {
		if err := s.discard(size); err != nil {
			return nil, err
		}
		s.torn = &Torn{Offset: 0, Bytes: size, Reason: "incomplete log header"}
		s.off = size
		return s, nil
	}
	var b [logHeaderSize]byte
	if err := s.read(b[:]); err != nil {
		return nil, err
	}
	h, err := parseLogHeader(b[:])
	if err != nil {
		if allZero(b[:]) {
			zeros, rerr := s.restIsZero(logHeaderSize)
			if rerr != nil {
				return nil, rerr
			}
			if zeros {
				s.torn = &Torn{Offset: 0, Bytes: size, Reason: "zero-filled log header"}
				s.off = size
				return s, nil
			}
		}
		return nil, corrupt(name, 0, "%v", err)
	}
	s.header = h
	s.off = logHeaderSize
	return s, nil
}

// Header returns the log's header.
func (s *LogScanner) Header() LogHeader { return s.header }

// Next reads the next record and reports whether there is one. It returns false at the end of
// the file, at a torn tail (Torn), and at damage (Err, a *CorruptError).
//
// A record is damaged if its header's checksum fails, its length is impossible, its payload's
// checksum fails or its payload does not decode. If nothing but zero bytes follows the damaged
// record (or it is cut short by the end of the file), it is a torn tail; otherwise the log is
// corrupt at the record's offset, and no record after it is returned: a record that comes after
// a damaged one could depend on it, so loading it would be a silent partial load.
func (s *LogScanner) Next() bool {
	if s.err != nil || s.torn != nil {
		return false
	}
	rem := s.size - s.off
	if rem == 0 {
		return false
	}
	s.recOff = s.off
	if rem < recHeaderSize {
		return s.tornAt(rem, "incomplete record header")
	}
	h := s.hdrBuf[:]
	if err := s.read(h); err != nil {
		s.err = err
		return false
	}
	n, sum, ok := parseRecordHeader(h)
	if !ok {
		return s.damaged(recHeaderSize, "damaged record header")
	}
	if int64(n) > rem-recHeaderSize {
		return s.tornAt(recHeaderSize, fmt.Sprintf("record of %d bytes cut short by the end of the file after %d", n, rem-recHeaderSize))
	}
	if cap(s.payload) < int(n) {
		s.payload = make([]byte, n) // at most the file's remaining size
	}
	p := s.payload[:n]
	if err := s.read(p); err != nil {
		s.err = err
		return false
	}
	if crc(p) != sum {
		return s.damaged(recHeaderSize+int64(n), "record checksum mismatch")
	}
	argv, err := decodeArgv(p, s.argv)
	s.argv = argv
	if err != nil {
		return s.damaged(recHeaderSize+int64(n), "malformed record: "+err.Error())
	}
	s.off += recHeaderSize + int64(n)
	s.records++
	return true
}

// Argv returns the arguments of the record Next read. They are valid until the next call.
func (s *LogScanner) Argv() [][]byte { return s.argv }

// Offset returns the byte offset of the record Next read.
func (s *LogScanner) Offset() int64 { return s.recOff }

// End returns the offset just past the last good record (after a torn tail: the offset at which
// the log is to be truncated).
func (s *LogScanner) End() int64 {
	if s.torn != nil {
		return s.torn.Offset
	}
	return s.off
}

// Records returns the number of good records read.
func (s *LogScanner) Records() int { return s.records }

// Err returns the damage (a *CorruptError) or read error that stopped the scan, if any.
func (s *LogScanner) Err() error { return s.err }

// Torn returns the torn tail that ended the scan, if any.
func (s *LogScanner) Torn() *Torn { return s.torn }

// tornAt records a torn tail at the current record after consumed of its bytes were read.
func (s *LogScanner) tornAt(consumed int64, reason string) bool {
	rest := s.size - s.recOff
	if err := s.discard(rest - consumed); err != nil {
		s.err = err
		return false
	}
	s.torn = &Torn{Offset: s.recOff, Bytes: rest, Reason: reason}
	return false
}

// damaged classifies a damaged record of which consumed bytes were read: a torn tail if only
// zero bytes follow, corruption otherwise.
func (s *LogScanner) damaged(consumed int64, reason string) bool {
	zeros, err := s.restIsZero(s.recOff + consumed)
	if err != nil {
		s.err = err
		return false
	}
	if zeros {
		return s.tornAt(s.size-s.recOff, reason)
	}
	s.err = corrupt(s.name, s.recOff, "%s (%d bytes from there to the end of the log)", reason, s.size-s.recOff)
	return false
}

// restIsZero reads the file from offset from (the current position) to its end and reports
// whether every byte is zero.
func (s *LogScanner) restIsZero(from int64) (bool, error) {
	zeros := true
	for left := s.size - from; left > 0; {
		b, err := s.r.Peek(int(min(left, int64(s.r.Size()))))
		if err != nil {
			return false, s.readErr(err)
		}
		if zeros && !allZero(b) {
			zeros = false
		}
		s.r.Discard(len(b))
		left -= int64(len(b))
	}
	return zeros, nil
}

func (s *LogScanner) discard(n int64) error {
	for n > 0 {
		d, err := s.r.Discard(int(min(n, 1<<30)))
		n -= int64(d)
		if err != nil {
			return s.readErr(err)
		}
	}
	return nil
}

func (s *LogScanner) read(p []byte) error {
	if _, err := io.ReadFull(s.r, p); err != nil {
		return s.readErr(err)
	}
	return nil
}

func (s *LogScanner) readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("persist: %s: the file is shorter than its size of %d bytes (changed while being read?)", s.name, s.size)
	}
	return fmt.Errorf("persist: reading %s: %w", s.name, err)
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// countRecordsAfter counts the well-formed records (header and payload checksums correct) that
// can be found in r between from and size by sliding over damage byte by byte: how many records
// are lost when a log is cut at from.
func countRecordsAfter(r io.ReaderAt, from, size int64) (int, error) {
	const window = 1 << 20
	buf := make([]byte, window+recHeaderSize)
	count := 0
	var payload []byte
	for p := from; p+recHeaderSize <= size; {
		n := int(min(int64(len(buf)), size-p))
		if _, err := r.ReadAt(buf[:n], p); err != nil && !errors.Is(err, io.EOF) {
			return count, err
		}
		advanced := false
		i := 0
		for ; i+recHeaderSize <= n; i++ {
			l, sum, ok := parseRecordHeader(buf[i : i+recHeaderSize])
			at := p + int64(i)
			if !ok || int64(l) > size-at-recHeaderSize {
				continue
			}
			if cap(payload) < int(l) {
				payload = make([]byte, l)
			}
			if _, err := r.ReadAt(payload[:l], at+recHeaderSize); err != nil && !errors.Is(err, io.EOF) {
				return count, err
			}
			if crc(payload[:l]) != sum {
				continue
			}
			if _, err := decodeArgv(payload[:l], nil); err != nil {
				continue
			}
			count++
			p = at + recHeaderSize + int64(l)
			advanced = true
			break
		}
		if !advanced {
			p += int64(max(i, 1))
		}
	}
	return count, nil
}
