package value

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// refField is BITFIELD's arithmetic done with exact integers: the result is in range, or it
// overflowed and WRAP takes it modulo 2^bits, SAT clamps it, FAIL leaves the field alone.
func refField(b []byte, op FieldOp) (FieldResult, []byte) {
	b = bytes.Clone(b)
	get := func() *big.Int {
		v := new(big.Int)
		for i := range op.Bits {
			v.Lsh(v, 1)
			off := op.Offset + uint64(i)
			if off>>3 < uint64(len(b)) && b[off>>3]>>(7-off&7)&1 == 1 {
				v.SetBit(v, 0, 1)
			}
		}
		if op.Signed && v.Bit(op.Bits-1) == 1 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(op.Bits)))
		}
		return v
	}
	lo, hi := big.NewInt(0), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(op.Bits)), big.NewInt(1))
	if op.Signed {
		hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(op.Bits-1)), big.NewInt(1))
		lo = new(big.Int).Neg(new(big.Int).Add(hi, big.NewInt(1)))
	}
	old := get()
	if op.Op == FieldGet {
		return FieldResult{Val: old.Int64()}, b
	}
	r := new(big.Int)
	if op.Op == FieldIncr {
		r.Add(old, big.NewInt(op.Arg))
	} else if op.Signed {
		r.SetInt64(op.Arg)
	} else {
		r.SetUint64(uint64(op.Arg)) // an unsigned SET takes the value's 64 bits
	}
	// Redis 7.0's check of a signed SET computes max - value in 64 bits, which wraps for a
	// value below max - 2^63 + 1: such a value counts as too large, and SAT stores the maximum.
	if op.Signed && op.Op == FieldSet && op.Bits < 64 && op.Arg < hi.Int64()-(1<<63-1) && op.Overflow == OverflowSat {
		r.Set(hi)
	}
	if r.Cmp(lo) < 0 || r.Cmp(hi) > 0 {
		switch op.Overflow {
		case OverflowFail:
			return FieldResult{Null: true}, b
		case OverflowSat:
			if r.Cmp(lo) < 0 {
				r.Set(lo)
			} else {
				r.Set(hi)
			}
		default:
			m := new(big.Int).Lsh(big.NewInt(1), uint(op.Bits))
			r.Mod(r, m)
			if op.Signed && r.Cmp(hi) > 0 {
				r.Sub(r, m)
			}
		}
	}
	ret := r.Int64()
	if op.Op == FieldSet {
		ret = old.Int64()
	}
	u := new(big.Int).Set(r)
	if u.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), uint(op.Bits)))
	}
	for i := range op.Bits {
		off := op.Offset + uint64(i)
		bit := byte(u.Bit(op.Bits - 1 - i))
		b[off>>3] = b[off>>3]&^(1<<(7-off&7)) | bit<<(7-off&7)
	}
	return FieldResult{Val: ret}, b
}

func TestBitfieldArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	edges := []int64{0, 1, -1, 2, 127, 128, -128, 255, 1 << 62, -1 << 63, 1<<63 - 1, 1<<62 + 7}
	for range 20000 {
		op := FieldOp{Op: rng.IntN(3), Overflow: rng.IntN(3), Signed: rng.IntN(2) == 0}
		op.Bits = 1 + rng.IntN(64)
		if !op.Signed && op.Bits == 64 {
			op.Bits = 63
		}
		if rng.IntN(2) == 0 {
			op.Arg = edges[rng.IntN(len(edges))]
		} else {
			op.Arg = int64(rng.Uint64()) >> rng.IntN(64)
		}
		op.Offset = uint64(rng.IntN(40))
		b := randomBits(rng, int(op.Offset+uint64(op.Bits)+7)/8+rng.IntN(3))
		want, wantB := refField(b, op)
		bf := &Bitfield{Ops: []FieldOp{op}}
		got := bytes.Clone(b)
		res, _ := bf.Exec(got, nil, nil)
		if res[0] != want || !bytes.Equal(got, wantB) {
			t.Fatalf("%+v on %x: %+v %x, want %+v %x", op, b, res[0], got, want, wantB)
		}
	}
}

// TestBitfieldRecordReplays checks what BITFIELD is recorded as: the SETs of the values it
// wrote give the same string when replayed, over the string before or over the string after.
func TestBitfieldRecordReplays(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		var args [][]byte
		for range 1 + rng.IntN(5) {
			typ := fmt.Sprint([]string{"u", "i"}[rng.IntN(2)], 1+rng.IntN(20))
			off := fmt.Sprint(rng.IntN(64))
			switch rng.IntN(4) {
			case 0:
				args = append(args, []byte("GET"), []byte(typ), []byte(off))
			case 1:
				args = append(args, []byte("SET"), []byte(typ), []byte(off), []byte(fmt.Sprint(rng.IntN(2000)-1000)))
			case 2:
				args = append(args, []byte("INCRBY"), []byte(typ), []byte(off), []byte(fmt.Sprint(rng.IntN(2000)-1000)))
			case 3:
				args = append(args, []byte("OVERFLOW"), []byte([]string{"WRAP", "SAT", "FAIL"}[rng.IntN(3)]))
			}
		}
		bf, msg := ParseBitfield(args, 512<<20)
		if msg != "" {
			t.Fatalf("%q: %s", args, msg)
		}
		before := randomBits(rng, 12)
		after := bytes.Clone(before)
		var rec [][]byte
		bf.Exec(after, nil, func(op *FieldOp, v uint64) { rec = AppendSetArgs(rec, op, v) })
		if len(rec) == 0 {
			continue
		}
		replayed, msg := ParseBitfield(rec, 512<<20)
		if msg != "" {
			t.Fatalf("record %q: %s", rec, msg)
		}
		for _, base := range [][]byte{before, after} {
			b := bytes.Clone(base)
			replayed.Exec(b, nil, nil)
			if !bytes.Equal(b, after) {
				t.Fatalf("%q recorded as %q: replayed over %x gives %x, want %x", args, rec, base, b, after)
			}
		}
	}
}

func TestParseBitfieldErrors(t *testing.T) {
	for _, c := range []struct {
		args string
		msg  string
	}{
		{"GET u8 0", ""},
		{"get u8 0 set i8 #1 -1 incrby u63 100 5 overflow fail", ""},
		{"GET u64 0", ErrFieldType},
		{"GET U8 0", ErrFieldType},
		{"GET u8", ErrSyntax},
		{"SET u8 0", ErrSyntax},
		{"SET u8 0 x", ErrNotInt},
		{"SET u8 x 1", ErrBitOffset},
		{"OVERFLOW", ErrSyntax},
		{"OVERFLOW sometimes GET u8 0", ErrOverflowArg},
		{"GET u8 0 FOO", ErrSyntax},
		{"GET u8 4294967296", ErrBitOffset},
		{"GET i8 #536870912", ErrBitOffset},
	} {
		_, msg := ParseBitfield(bytes.Fields([]byte(c.args)), 512<<20)
		if msg != c.msg {
			t.Errorf("%q: %q, want %q", c.args, msg, c.msg)
		}
	}
}

// FuzzParseBitfield: any arguments parse or are refused with an error reply, never a panic; a
// parsed command runs on a string that holds what it writes.
func FuzzParseBitfield(f *testing.F) {
	for _, s := range []string{"GET u8 0", "OVERFLOW SAT INCRBY i64 #3 -9223372036854775808", "SET u63 63 -1 GET i1 0",
		"OVERFLOW", "GET u8 #-1", "SET i64 #1152921504606846976 5", "get\x00x u8 0", "GET u8\x00z 0"} {
		f.Add([]byte(s), int64(512<<20))
	}
	f.Fuzz(func(t *testing.T, line []byte, limit int64) {
		args := bytes.Split(line, []byte(" "))
		limit = limit%(1<<20) + 1 // keep what a write may allocate small
		bf, msg := ParseBitfield(args, limit)
		if msg != "" {
			if bf != nil {
				t.Fatal("an error with a command")
			}
			return
		}
		var b []byte
		if bf.Writes {
			if bf.Highest>>3 >= uint64(limit)+8 {
				t.Fatalf("a write reaches bit %d past the limit of %d bytes", bf.Highest, limit)
			}
			b = make([]byte, bf.Highest>>3+1)
		}
		res, _ := bf.Exec(b, nil, nil)
		if len(res) != len(bf.Ops) {
			t.Fatalf("%d results for %d operations", len(res), len(bf.Ops))
		}
	})
}
