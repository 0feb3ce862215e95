package redisfilter

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/bloomd/bloom"
)

// The parameter lines come from Redis, where anyone with access may have written anything: the
// parsers must refuse what they cannot use with an error, never panic, never allocate without
// bound, and accept only lines they would write themselves.

func FuzzParseNative(f *testing.F) {
	o, _ := (*Options)(nil).resolve()
	for _, kind := range []string{"classic", "counting"} {
		f.Add(newNative(nil, "x", o, kind, 9600, 7, 1000, 0.01, MaxPartBits).parts[0].want)
	}
	f.Add(newNative(nil, "x", o, "classic", 95872, 7, 10000, 0.01, 4096).parts[0].want)
	f.Fuzz(func(t *testing.T, line string) {
		for _, kind := range []string{"classic", "counting"} {
			g, err := parseNative(nil, "x", line, kind, o)
			if err != nil {
				continue
			}
			if g.parts[0].want != line || g.m == 0 || g.k < 1 || len(g.parts) > maxParts {
				t.Fatalf("accepted %q as m=%d k=%d parts=%d, which writes %q", line, g.m, g.k, len(g.parts), g.parts[0].want)
			}
			_ = describeMismatch(line, g.parts[0].want)
		}
		_ = describeMismatch(line, "redisfilter/1 kind=classic m=1")
	})
}

func FuzzParseScalable(f *testing.F) {
	o, _ := (*Options)(nil).resolve()
	s, err := newScalable(nil, "x", o, 1000, 0.01, maxChainLinks)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.line)
	f.Fuzz(func(t *testing.T, line string) {
		g, err := parseScalable(nil, "x", line, o)
		if err != nil {
			return
		}
		if g.line != line || len(g.links) == 0 || len(g.links) > maxChainLinks {
			t.Fatalf("accepted %q with %d links, which writes %q", line, len(g.links), g.line)
		}
	})
}

var javaDoubleSyntax = regexp.MustCompile(`^-?(\d+\.\d+|\d\.\d+E-?\d+)$`)

func FuzzJavaDouble(f *testing.F) {
	for _, v := range []float64{0.03, 1e-4, 0.001, 1e7, 123.5, 5e-324, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		s := javaDouble(v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		if !javaDoubleSyntax.MatchString(s) {
			t.Fatalf("javaDouble(%g) = %q, not Java's syntax", v, s)
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v {
			t.Fatalf("javaDouble(%g) = %q parses back as %g, %v", v, s, back, err)
		}
	})
}

// A plain-layout string is whatever the programs sharing the key wrote: DecodePlain must refuse
// one longer than the filter allows, leaving the filter untouched, and otherwise set exactly the
// string's bits (in the given order) within the filter's bytes.
func FuzzDecodePlain(f *testing.F) {
	f.Add([]byte{0x80, 0x01}, uint16(16), uint8(1))
	f.Add([]byte{0xff, 0xff, 0xff}, uint16(17), uint8(2))
	f.Add([]byte{}, uint16(1), uint8(1))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint16(65), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, m16 uint16, order uint8) {
		m := uint64(m16)%4096 + 1
		dst, err := bloom.NewExact(m, 3, bloom.Guava32)
		if err != nil {
			t.Fatal(err)
		}
		orig := append([]byte(nil), raw...)
		err = DecodePlain(dst, raw, BitOrder(order))
		switch {
		case order != 1 && order != 2:
			if err == nil {
				t.Fatalf("bit order %d accepted", order)
			}
			return
		case uint64(len(orig)) > (m+7)/8:
			if err == nil || dst.BitCount() != 0 {
				t.Fatalf("a %d-byte string for m=%d: err %v, %d bits set", len(orig), m, err, dst.BitCount())
			}
			return
		case err != nil:
			t.Fatalf("a %d-byte string for m=%d: %v", len(orig), m, err)
		}
		got := make([]byte, dst.ByteLen())
		dst.ReadAt(got, 0)
		for b := uint64(0); b < uint64(len(got))*8; b++ {
			var want bool
			if byteIdx := b >> 3; byteIdx < uint64(len(orig)) {
				if order == 1 { // SETBIT: offset b is bit 7-(b&7) of byte b>>3
					want = orig[byteIdx]&(0x80>>(b&7)) != 0
				} else {
					want = orig[byteIdx]&(1<<(b&7)) != 0
				}
			}
			if have := got[b>>3]&(1<<(b&7)) != 0; have != want {
				t.Fatalf("bit %d is %v, the string says %v", b, have, want)
			}
		}
	})
}
