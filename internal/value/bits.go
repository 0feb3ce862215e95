package value

import (
	"encoding/binary"
	"math/bits"

	"github.com/bloomd/bloom/internal/resp"
)

// Redis numbers the bits of a string from the most significant bit of its first byte: bit i is
// in byte i/8 at 1<<(7-i%8). BITCOUNT, BITPOS and BITOP work on that numbering, byte ranges or
// bit ranges alike.

// popcount counts the set bits of p, eight bytes at a time.
func popcount(p []byte) int64 {
	var n int
	for len(p) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	for _, c := range p {
		n += bits.OnesCount8(c)
	}
	return int64(n)
}

// rangeArgs parses BITCOUNT's and BITPOS's start, end and unit arguments: end (nil if not
// given), unit (nil for BYTE).
type rangeArgs struct {
	start, end int64
	endGiven   bool
	isBit      bool
}

func parseUnit(arg []byte) (isBit bool, errReply string) {
	switch {
	case equalFold(arg, "bit"):
		return true, ""
	case equalFold(arg, "byte"):
		return false, ""
	}
	return false, ErrSyntax
}

// BitCount answers BITCOUNT key [start end [BYTE|BIT]] for the string b, given the arguments
// after the key; it returns the count, or an error reply.
func BitCount(b []byte, args [][]byte) (int64, string) {
	var r rangeArgs
	switch len(args) {
	case 0:
		return popcount(b), ""
	case 2, 3:
	default:
		return 0, ErrSyntax
	}
	var ok bool
	if r.start, ok = resp.ParseInt(args[0]); !ok {
		return 0, ErrNotInt
	}
	if r.end, ok = resp.ParseInt(args[1]); !ok {
		return 0, ErrNotInt
	}
	if r.start < 0 && r.end < 0 && r.start > r.end {
		return 0, ""
	}
	if len(args) == 3 {
		var msg string
		if r.isBit, msg = parseUnit(args[2]); msg != "" {
			return 0, msg
		}
	}
	total := int64(len(b))
	if r.isBit {
		total <<= 3
	}
	start, end := clampRange(r.start, r.end, total)
	if start > end {
		return 0, ""
	}
	if !r.isBit {
		return popcount(b[start : end+1]), ""
	}
	// Count the whole bytes, then take away the bits of the first and last byte outside the
	// range.
	n := popcount(b[start>>3 : end>>3+1])
	n -= int64(bits.OnesCount8(b[start>>3] & ^byte(0xff>>(start&7))))
	n -= int64(bits.OnesCount8(b[end>>3] & byte(0xff>>(end&7+1))))
	return n, ""
}

// clampRange converts negative indexes (counted from the end of total) and clamps start and
// end into [0, total-1]; start > end means an empty range.
func clampRange(start, end, total int64) (int64, int64) {
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	return start, end
}

// BitPos answers BITPOS key bit [start [end [BYTE|BIT]]] for the string b (exists false for a
// missing key), given the arguments after the key; it returns the position, or an error reply.
// A missing key is all zeros: the first 0 is at 0, and there is no 1.
func BitPos(b []byte, exists bool, args [][]byte) (int64, string) {
	bit, ok := resp.ParseInt(args[0])
	if !ok {
		return 0, ErrNotInt
	}
	if bit != 0 && bit != 1 {
		return 0, ErrBitArg
	}
	if !exists {
		return -bit, ""
	}
	var r rangeArgs
	total := int64(len(b))
	switch len(args) {
	case 1:
		r.start, r.end = 0, total-1
	case 2, 3, 4:
		if r.start, ok = resp.ParseInt(args[1]); !ok {
			return 0, ErrNotInt
		}
		if len(args) == 4 {
			var msg string
			if r.isBit, msg = parseUnit(args[3]); msg != "" {
				return 0, msg
			}
		}
		if len(args) >= 3 {
			if r.end, ok = resp.ParseInt(args[2]); !ok {
				return 0, ErrNotInt
			}
			r.endGiven = true
		} else if r.isBit {
			r.end = total<<3 + 7
		} else {
			r.end = total - 1
		}
		if r.isBit {
			total <<= 3
		}
		r.start, r.end = clampRange(r.start, r.end, total)
	default:
		return 0, ErrSyntax
	}
	if r.start > r.end {
		return -1, ""
	}
	// Work in bits from here: [lo, hi] inclusive.
	lo, hi := r.start, r.end
	if !r.isBit {
		lo, hi = lo<<3, hi<<3+7
	}
	pos := findBit(b, lo, hi, byte(bit))
	if pos >= 0 {
		return pos, ""
	}
	if bit == 0 && !r.endGiven {
		// Looking for a clear bit with no end given: the string is followed by zeros.
		return hi + 1, ""
	}
	return -1, ""
}

// findBit returns the first bit position in [lo, hi] of b whose value is bit, or -1.
func findBit(b []byte, lo, hi int64, bit byte) int64 {
	skip := byte(0)
	if bit == 0 {
		skip = 0xff
	}
	skipWord := uint64(skip) * 0x0101010101010101
	for i := lo; i <= hi; {
		if i&7 != 0 || i+7 > hi {
			// A byte only partly in the range: bit by bit.
			if b[i>>3]>>(7-i&7)&1 == bit {
				return i
			}
			i++
			continue
		}
		// Whole bytes: skip those that hold no candidate, eight at a time when aligned.
		for (i>>3)&7 == 0 && i+63 <= hi && binary.BigEndian.Uint64(b[i>>3:]) == skipWord {
			i += 64
		}
		if i > hi || i+7 > hi {
			continue
		}
		c := b[i>>3]
		if c == skip {
			i += 8
			continue
		}
		if bit == 0 {
			c = ^c
		}
		return i + int64(bits.LeadingZeros8(c))
	}
	return -1
}

// BitOp operations.
const (
	OpAnd = iota
	OpOr
	OpXor
	OpNot
)

// ParseBitOp parses BITOP's operation name; ok is false for an unknown one.
func ParseBitOp(name []byte) (op int, ok bool) {
	switch {
	case equalFold(name, "and"):
		return OpAnd, true
	case equalFold(name, "or"):
		return OpOr, true
	case equalFold(name, "xor"):
		return OpXor, true
	case equalFold(name, "not"):
		return OpNot, true
	}
	return 0, false
}

// BitOp computes BITOP op over the source strings (nil for a missing key, which counts as
// empty): a string as long as the longest, shorter ones padded with zeros. It returns nil when
// every source is empty.
func BitOp(op int, srcs [][]byte) []byte {
	maxLen := 0
	for _, s := range srcs {
		maxLen = max(maxLen, len(s))
	}
	if maxLen == 0 {
		return nil
	}
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	if op == OpNot {
		for i := range res {
			res[i] = ^res[i]
		}
		return res
	}
	for _, s := range srcs[1:] {
		switch op {
		case OpAnd:
			for i, c := range s {
				res[i] &= c
			}
			clear(res[len(s):])
		case OpOr:
			for i, c := range s {
				res[i] |= c
			}
		case OpXor:
			for i, c := range s {
				res[i] ^= c
			}
		}
	}
	return res
}

// equalFold is resp.EqualFold.
func equalFold(b []byte, s string) bool { return resp.EqualFold(b, s) }
