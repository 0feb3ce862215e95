package value

import (
	"bytes"
	"math"
	"strconv"

	"github.com/bloomd/bloom/internal/resp"
)

// BITFIELD and BITFIELD_RO, as Redis 7.0's bitops.c: integers of 1 to 64 bits (unsigned up to
// 63) at any bit offset of a string, read, set or incremented with WRAP, SAT or FAIL overflow.

// Bitfield operation codes.
const (
	FieldGet = iota
	FieldSet
	FieldIncr
)

// Overflow behaviours.
const (
	OverflowWrap = iota
	OverflowSat
	OverflowFail
)

// A FieldOp is one operation of a BITFIELD command.
type FieldOp struct {
	Op       int
	Overflow int
	Signed   bool
	Bits     int
	Offset   uint64 // in bits
	Arg      int64  // SET's value or INCRBY's increment
}

// A Bitfield is a parsed BITFIELD command.
type Bitfield struct {
	Ops []FieldOp
	// Writes reports whether any operation writes (SET or INCRBY); Highest is then the last
	// bit they reach, which the string must hold.
	Writes  bool
	Highest uint64
}

// cstr returns b up to its first NUL byte: Redis compares subcommand names and reads type
// widths as C strings.
func cstr(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// ParseBitfield parses the arguments of BITFIELD after the key, in Redis's order of checks;
// limit is proto-max-bulk-len for offsets (negative for none, as for a primary's stream). It
// returns the command, or an error reply.
func ParseBitfield(args [][]byte, limit int64) (*Bitfield, string) {
	bf := &Bitfield{}
	overflow := OverflowWrap
	for j := 0; j < len(args); j++ {
		rem := len(args) - j - 1
		name := cstr(args[j])
		var op int
		switch {
		case equalFold(name, "get") && rem >= 2:
			op = FieldGet
		case equalFold(name, "set") && rem >= 3:
			op = FieldSet
		case equalFold(name, "incrby") && rem >= 3:
			op = FieldIncr
		case equalFold(name, "overflow") && rem >= 1:
			j++
			switch t := cstr(args[j]); {
			case equalFold(t, "wrap"):
				overflow = OverflowWrap
			case equalFold(t, "sat"):
				overflow = OverflowSat
			case equalFold(t, "fail"):
				overflow = OverflowFail
			default:
				return nil, ErrOverflowArg
			}
			continue
		default:
			return nil, ErrSyntax
		}
		signed, bits, ok := parseFieldType(args[j+1])
		if !ok {
			return nil, ErrFieldType
		}
		off, msg := ParseBitOffset(args[j+2], limit, bits)
		if msg != "" {
			return nil, msg
		}
		fo := FieldOp{Op: op, Overflow: overflow, Signed: signed, Bits: bits, Offset: off}
		if op != FieldGet {
			bf.Writes = true
			bf.Highest = max(bf.Highest, off+uint64(bits)-1)
			if fo.Arg, ok = resp.ParseInt(args[j+3]); !ok {
				return nil, ErrNotInt
			}
			j++
		}
		bf.Ops = append(bf.Ops, fo)
		j += 2
	}
	return bf, ""
}

// parseFieldType parses "i1".."i64" and "u1".."u63".
func parseFieldType(arg []byte) (signed bool, bits int, ok bool) {
	t := cstr(arg)
	if len(t) == 0 || t[0] != 'i' && t[0] != 'u' {
		return false, 0, false
	}
	signed = t[0] == 'i'
	n, ok := resp.ParseInt(t[1:])
	if !ok || n < 1 || signed && n > 64 || !signed && n > 63 {
		return false, 0, false
	}
	return signed, int(n), true
}

// A FieldResult is the reply to one operation: a number, or null for an operation that FAIL
// refused.
type FieldResult struct {
	Val  int64
	Null bool
}

// Exec runs the operations on b, which must hold Highest if any operation writes (Grow), and
// returns one result per operation and whether any operation changed a bit. Reads past the end
// of b see zeros. wr, if not nil, is called for each write that was made, with the value written,
// in order, so the caller can record the command as plain SETs (which replay idempotently).
func (bf *Bitfield) Exec(b []byte, res []FieldResult, wr func(op *FieldOp, v uint64)) ([]FieldResult, bool) {
	changed := false
	for i := range bf.Ops {
		op := &bf.Ops[i]
		if op.Op == FieldGet {
			v := getField(b, op.Offset, op.Bits)
			if op.Signed {
				res = append(res, FieldResult{Val: signExtend(v, op.Bits)})
			} else {
				res = append(res, FieldResult{Val: int64(v)})
			}
			continue
		}
		old := getField(b, op.Offset, op.Bits)
		var nv uint64
		var ret int64
		var overflow bool
		if op.Signed {
			o := signExtend(old, op.Bits)
			var n int64
			if op.Op == FieldIncr {
				n, overflow = signedAdd(o, op.Arg, op.Bits, op.Overflow)
				ret = n
			} else {
				n, overflow = signedAdd(op.Arg, 0, op.Bits, op.Overflow)
				ret = o
			}
			nv = uint64(n)
		} else {
			if op.Op == FieldIncr {
				nv, overflow = unsignedAdd(old, op.Arg, op.Bits, op.Overflow)
				ret = int64(nv)
			} else {
				nv, overflow = unsignedAdd(uint64(op.Arg), 0, op.Bits, op.Overflow)
				ret = int64(old)
			}
		}
		if overflow && op.Overflow == OverflowFail {
			res = append(res, FieldResult{Null: true})
			continue
		}
		res = append(res, FieldResult{Val: ret})
		nv &= fieldMask(op.Bits)
		setField(b, op.Offset, op.Bits, nv)
		if nv != old {
			changed = true
		}
		if wr != nil {
			wr(op, nv)
		}
	}
	return res, changed
}

func fieldMask(bits int) uint64 {
	if bits == 64 {
		return math.MaxUint64
	}
	return 1<<bits - 1
}

// getField reads the bits-wide unsigned integer at bit offset off of b (zeros past the end).
func getField(b []byte, off uint64, bits int) uint64 {
	var v uint64
	for range bits {
		bit := uint64(0)
		if i := off >> 3; i < uint64(len(b)) {
			bit = uint64(b[i]>>(7-off&7)) & 1
		}
		v = v<<1 | bit
		off++
	}
	return v
}

// setField writes the low bits bits of v at bit offset off of b.
func setField(b []byte, off uint64, bits int, v uint64) {
	for j := bits - 1; j >= 0; j-- {
		p := &b[off>>3]
		shift := 7 - off&7
		*p = *p&^(1<<shift) | byte(v>>j&1)<<shift
		off++
	}
}

func signExtend(v uint64, bits int) int64 {
	if bits < 64 && v&(1<<(bits-1)) != 0 {
		v |= math.MaxUint64 << bits
	}
	return int64(v)
}

// unsignedAdd returns value+incr as a bits-wide unsigned integer under the overflow mode, and
// whether it overflowed (checkUnsignedBitfieldOverflow).
func unsignedAdd(value uint64, incr int64, bits, mode int) (uint64, bool) {
	maxv := fieldMask(bits)
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	switch {
	case value > maxv || incr > 0 && incr > maxIncr:
		if mode == OverflowSat {
			return maxv, true
		}
		return (value + uint64(incr)) & maxv, true
	case incr < 0 && incr < minIncr:
		if mode == OverflowSat {
			return 0, true
		}
		return (value + uint64(incr)) & maxv, true
	}
	return value + uint64(incr), false
}

// signedAdd is unsignedAdd for signed integers (checkSignedBitfieldOverflow).
func signedAdd(value, incr int64, bits, mode int) (int64, bool) {
	maxv := int64(math.MaxInt64)
	if bits != 64 {
		maxv = 1<<(bits-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	wrap := func() int64 {
		c := uint64(value) + uint64(incr)
		if bits < 64 {
			mask := uint64(math.MaxUint64) << bits
			if c&(1<<(bits-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c)
	}
	switch {
	case value > maxv || bits != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr:
		if mode == OverflowSat {
			return maxv, true
		}
		return wrap(), true
	case value < minv || bits != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr:
		if mode == OverflowSat {
			return minv, true
		}
		return wrap(), true
	}
	return value + incr, false
}

// AppendSetArgs appends to argv the arguments of a BITFIELD SET that writes v as op's type at
// op's offset: what a write is recorded as.
func AppendSetArgs(argv [][]byte, op *FieldOp, v uint64) [][]byte {
	t := byte('u')
	if op.Signed {
		t = 'i'
	}
	typ := strconv.AppendInt([]byte{t}, int64(op.Bits), 10)
	var val []byte
	if op.Signed {
		val = strconv.AppendInt(nil, signExtend(v, op.Bits), 10)
	} else {
		val = strconv.AppendUint(nil, v, 10)
	}
	return append(argv, []byte("SET"), typ, strconv.AppendUint(nil, op.Offset, 10), val)
}
