package value

import (
	"sync"
	"sync/atomic"

	"github.com/bloomd/bloom/internal/resp"
)

// A String is a Redis string value: bytes that SET replaces whole and that SETBIT, SETRANGE,
// APPEND and BITFIELD change in place.
//
// A String is not synchronized by itself: the server holds its lock (the embedded RWMutex)
// around every use, the write lock across a change and its journal record, the read lock to
// read. Len, Charge and the reads of Bytes are valid only under one of them. The zero String is
// an empty string.
type String struct {
	sync.RWMutex
	b   []byte
	mem atomic.Int64 // bytes charged for b: its capacity
}

// NewString returns a String holding b, which it keeps.
func NewString(b []byte) *String {
	s := &String{b: b}
	s.mem.Store(int64(cap(b)))
	return s
}

// Bytes returns the string's bytes. They may change, and move, with the next write.
func (s *String) Bytes() []byte { return s.b }

// Len returns the string's length in bytes.
func (s *String) Len() int { return len(s.b) }

// Charge returns the bytes the string has charged to the memory accounting: its allocation.
// It may be called without the lock.
func (s *String) Charge() int64 { return s.mem.Load() }

// smallGrowth is the length below which growing a string doubles its allocation, and above
// which it adds this much (Redis's sds does the same), so that repeated APPENDs cost amortized
// constant time.
const smallGrowth = 1 << 20

// GrowCharge returns the bytes that growing the string to n bytes (Grow) adds to its charge: 0
// if n fits in its allocation. The caller reserves them before calling Grow.
func (s *String) GrowCharge(n int) int64 {
	if n <= cap(s.b) {
		return 0
	}
	return int64(newCap(len(s.b), n)) - int64(cap(s.b))
}

func newCap(old, n int) int {
	switch {
	case old == 0:
		return n // a new string takes what it needs, as sdsnewlen does
	case n < smallGrowth:
		return 2 * n
	default:
		return n + smallGrowth
	}
}

// Grow makes the string at least n bytes long, padding it with zero bytes, and reports whether
// its length changed. Its charge grows by what GrowCharge(n) said.
func (s *String) Grow(n int) bool {
	if n <= len(s.b) {
		return false
	}
	if n > cap(s.b) {
		nb := make([]byte, n, newCap(len(s.b), n))
		copy(nb, s.b)
		s.b = nb
		s.mem.Store(int64(cap(nb)))
		return true
	}
	old := len(s.b)
	s.b = s.b[:n]
	clear(s.b[old:])
	return true
}

// GetBit returns bit off (0 is the most significant bit of the first byte), 0 past the end.
func GetBit(b []byte, off uint64) int {
	if off>>3 >= uint64(len(b)) {
		return 0
	}
	return int(b[off>>3]>>(7-off&7)) & 1
}

// SetBit sets bit off of the string, which must be long enough (Grow), to on (0 or 1) and
// returns its old value.
func (s *String) SetBit(off uint64, on int) int {
	p := &s.b[off>>3]
	shift := 7 - off&7
	old := int(*p>>shift) & 1
	*p = *p&^(1<<shift) | byte(on)<<shift
	return old
}

// SetRange writes p at offset off of the string, which must be long enough (Grow).
func (s *String) SetRange(off int, p []byte) { copy(s.b[off:], p) }

// Append appends p to the string, which must have room (Grow to Len()+len(p) first).
func (s *String) Append(p []byte) { s.SetRange(len(s.b)-len(p), p) }

// GetRange returns the bytes of b from start to end inclusive, with GETRANGE's negative
// indexes (counted from the end) and clamping.
func GetRange(b []byte, start, end int64) []byte {
	n := int64(len(b))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return nil
	}
	return b[start : end+1]
}

// CheckLength reports whether a string of size bytes with append more would stay within
// limit (proto-max-bulk-len), as Redis's checkStringLength does; it returns ErrTooBig if not.
func CheckLength(size, append, limit int64) string {
	total := uint64(size) + uint64(append)
	if total > uint64(limit) || int64(total) < size || int64(total) < append {
		return ErrTooBig
	}
	return ""
}

// ParseBitOffset parses a SETBIT, GETBIT or BITFIELD bit offset as Redis does: a non-negative
// integer whose byte (offset/8) is below limit (proto-max-bulk-len; no limit if limit < 0).
// With bits > 0 (BITFIELD) an offset written "#n" means n·bits. It returns ErrBitOffset when
// the argument is not such an offset.
func ParseBitOffset(arg []byte, limit int64, bits int) (uint64, string) {
	hash := bits > 0 && len(arg) > 0 && arg[0] == '#'
	if hash {
		arg = arg[1:]
	}
	n, ok := resp.ParseInt(arg)
	if !ok {
		return 0, ErrBitOffset
	}
	if hash {
		n *= int64(bits) // wraps as Redis's does; a negative result is refused below
	}
	if n < 0 || limit >= 0 && n>>3 >= limit {
		return 0, ErrBitOffset
	}
	return uint64(n), ""
}
