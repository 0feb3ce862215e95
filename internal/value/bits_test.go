package value

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The bit commands against a plain bit-by-bit reading of Redis's definitions, over random
// strings and ranges (fixed seeds). The transcripts (internal/server/testdata) check the same
// commands, with their errors, against redis-server itself.

func bitAt(b []byte, i int64) int { return int(b[i>>3]>>(7-i&7)) & 1 }

func naiveCount(b []byte, lo, hi int64) int64 {
	n := int64(0)
	for i := lo; i <= hi; i++ {
		n += int64(bitAt(b, i))
	}
	return n
}

func randomBits(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		switch rng.IntN(4) {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 0xff
		default:
			b[i] = byte(rng.Uint32())
		}
	}
	return b
}

func itoa(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

func TestBitCountRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		b := randomBits(rng, rng.IntN(70))
		isBit := rng.IntN(2) == 0
		total := int64(len(b))
		if isBit {
			total *= 8
		}
		start, end := rng.Int64N(2*total+3)-total-1, rng.Int64N(2*total+3)-total-1
		args := [][]byte{itoa(start), itoa(end), []byte("BYTE")}
		if isBit {
			args[2] = []byte("bit")
		}
		got, msg := BitCount(b, args)
		if msg != "" {
			t.Fatal(msg)
		}
		var want int64
		if !(start < 0 && end < 0 && start > end) {
			lo, hi := clampRange(start, end, total)
			if !isBit {
				lo, hi = lo*8, hi*8+7
			}
			if lo <= hi {
				want = naiveCount(b, lo, hi)
			}
		}
		if got != want {
			t.Fatalf("BITCOUNT %x %d %d bit=%v: %d, want %d", b, start, end, isBit, got, want)
		}
	}
}

func TestBitPosRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		b := randomBits(rng, 1+rng.IntN(40))
		bit := rng.IntN(2)
		isBit := rng.IntN(2) == 0
		total := int64(len(b))
		if isBit {
			total *= 8
		}
		start, end := rng.Int64N(2*total+3)-total-1, rng.Int64N(2*total+3)-total-1
		args := [][]byte{itoa(int64(bit))}
		endGiven := rng.IntN(3) > 0
		switch {
		case endGiven && isBit:
			args = append(args, itoa(start), itoa(end), []byte("BIT"))
		case endGiven:
			args = append(args, itoa(start), itoa(end))
		case isBit:
			// BIT needs an end; the form without one is BYTE.
			isBit, total = false, int64(len(b))
			start = rng.Int64N(2*total+3) - total - 1
			args = append(args, itoa(start))
		default:
			args = append(args, itoa(start))
		}
		if !endGiven {
			end = total - 1
		}
		got, msg := BitPos(b, true, args)
		if msg != "" {
			t.Fatal(msg)
		}
		lo, hi := clampRange(start, end, total)
		if !isBit {
			lo, hi = lo*8, hi*8+7
		}
		want := int64(-1)
		if lo <= hi {
			for i := lo; i <= hi; i++ {
				if bitAt(b, i) == bit {
					want = i
					break
				}
			}
			if want < 0 && bit == 0 && !endGiven {
				want = hi + 1
			}
		}
		if got != want {
			t.Fatalf("BITPOS %x %s: %d, want %d", b, bytes.Join(args, []byte(" ")), got, want)
		}
	}
}

func TestBitOp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		op := rng.IntN(4)
		n := 1 + rng.IntN(4)
		if op == OpNot {
			n = 1
		}
		srcs := make([][]byte, n)
		maxLen := 0
		for i := range srcs {
			if rng.IntN(5) > 0 {
				srcs[i] = randomBits(rng, rng.IntN(40))
			}
			maxLen = max(maxLen, len(srcs[i]))
		}
		got := BitOp(op, srcs)
		if maxLen == 0 {
			if got != nil {
				t.Fatal("empty sources give a result")
			}
			continue
		}
		for j := range maxLen {
			at := func(s []byte) byte {
				if j < len(s) {
					return s[j]
				}
				return 0
			}
			w := at(srcs[0])
			for _, s := range srcs[1:] {
				switch op {
				case OpAnd:
					w &= at(s)
				case OpOr:
					w |= at(s)
				case OpXor:
					w ^= at(s)
				}
			}
			if op == OpNot {
				w = ^w
			}
			if got[j] != w {
				t.Fatalf("op %d byte %d: %x, want %x", op, j, got[j], w)
			}
		}
	}
}

func TestStringGrowCharge(t *testing.T) {
	s := NewString(nil)
	if c := s.GrowCharge(100); c != 100 {
		t.Fatalf("a new string of 100 bytes charges %d", c)
	}
	s.Grow(100)
	if s.Charge() != 100 || s.Len() != 100 {
		t.Fatalf("charge %d len %d", s.Charge(), s.Len())
	}
	c := s.GrowCharge(150) // doubles the allocation, as Redis's sds does
	s.Grow(150)
	if s.Charge() != 300 || c != 200 {
		t.Fatalf("charge %d after growing by %d", s.Charge(), c)
	}
	if s.GrowCharge(300) != 0 {
		t.Fatal("growth within the allocation charges")
	}
	s.Grow(300)
	for _, x := range s.Bytes() {
		if x != 0 {
			t.Fatal("growth is not zero-filled")
		}
	}
	// The charge is known before the allocation: a 512 MiB SETBIT costs that, asked first.
	big := NewString([]byte{1})
	if c := big.GrowCharge(512 << 20); c != 512<<20+smallGrowth-1 {
		t.Fatalf("charge %d for 512 MiB", c)
	}
}

func TestParseBitOffset(t *testing.T) {
	for _, c := range []struct {
		arg   string
		limit int64
		bits  int
		want  uint64
		ok    bool
	}{
		{"0", 512 << 20, 0, 0, true},
		{"4294967295", 512 << 20, 0, 4294967295, true},
		{"4294967296", 512 << 20, 0, 0, false},
		{"4294967296", -1, 0, 4294967296, true}, // the primary's stream: no limit
		{"-1", -1, 0, 0, false},
		{"#3", 512 << 20, 8, 24, true},
		{"#3", 512 << 20, 0, 0, false}, // '#' only for BITFIELD
		{"#-1", 512 << 20, 8, 0, false},
		{"#1152921504606846976", 512 << 20, 64, 0, true}, // 2^66 wraps to 0, as in Redis
		{"07", 512 << 20, 0, 0, false},
		{"", 512 << 20, 0, 0, false},
	} {
		got, msg := ParseBitOffset([]byte(c.arg), c.limit, c.bits)
		if (msg == "") != c.ok || c.ok && got != c.want {
			t.Errorf("%q limit %d bits %d: %d %q", c.arg, c.limit, c.bits, got, msg)
		}
	}
}
