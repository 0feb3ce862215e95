package value

import (
	"bytes"
	"math/big"
)

// HINCRBYFLOAT adds in C's long double, which on x86-64 (where Redis is built) is the x87
// 80-bit extended format: a 64-bit significand and exponents down to -16382 (-16445 for
// subnormals). Go has no such type, so the arithmetic runs in math/big at 64 bits of precision,
// rounding to nearest-even as the x87 unit does, with the format's range checked by hand: the
// results are the same bits as Redis's, and are printed the same way ("%.17Lf", then trailing
// zeros removed). The difference left is in subnormal results (below 3.4e-4932), whose lost
// precision is not emulated; they print as 0 either way.

const ldPrec = 64

var (
	// ldMax is LDBL_MAX, (2 - 2^-63)·2^16383.
	ldMax = func() *big.Float {
		f := new(big.Float).SetPrec(ldPrec).SetMantExp(big.NewFloat(1), 16384)
		ulp := new(big.Float).SetPrec(ldPrec).SetMantExp(big.NewFloat(1), 16384-64)
		return f.Sub(f, ulp)
	}()
	// ldUnderflow is half the smallest subnormal, 2^-16446: strtold rounds anything not above
	// it to zero and reports a range error, which Redis refuses.
	ldUnderflow = new(big.Float).SetMantExp(big.NewFloat(1), -16446)
)

// parseLongDouble parses s as Redis's string2ld does with glibc's strtold: an optional sign,
// then a decimal number with an optional exponent, a hexadecimal one ("0x1.8p3"), or "inf" /
// "infinity" (any case); the whole string, with no leading space, at most 5 KiB; NaN and values
// out of the long double's range are refused. The result has 64 bits of precision.
func parseLongDouble(s []byte) (*big.Float, bool) {
	if len(s) == 0 || len(s) >= 5*1024 {
		return nil, false
	}
	body := s
	neg := false
	if body[0] == '+' || body[0] == '-' {
		neg = body[0] == '-'
		body = body[1:]
	}
	f := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	switch {
	case equalFold(body, "inf") || equalFold(body, "infinity"):
		f.SetInf(neg)
		return f, true
	case len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X'):
		if !numberSyntax(body[2:], true) {
			return nil, false
		}
	default:
		if !numberSyntax(body, false) {
			return nil, false
		}
	}
	base := 10
	if len(body) > 1 && (body[1] == 'x' || body[1] == 'X') {
		base = 0
	}
	if _, _, err := f.Parse(string(s), base); err != nil {
		return nil, false
	}
	a := new(big.Float).Abs(f)
	if a.Cmp(ldMax) > 0 || f.Sign() != 0 && a.Cmp(ldUnderflow) <= 0 {
		return nil, false // strtold's ERANGE with HUGE_VAL or zero
	}
	return f, true
}

// numberSyntax reports whether s is digits with at most one '.' and at least one digit,
// optionally followed by an exponent: 'e' and decimal digits, or for hex 'p' and decimal
// digits, each with an optional sign.
func numberSyntax(s []byte, hex bool) bool {
	digits, dot := 0, false
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', hex && (c|0x20 >= 'a' && c|0x20 <= 'f'):
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			goto exponent
		}
	}
exponent:
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if e := s[i] | 0x20; hex && e != 'p' || !hex && e != 'e' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatLongDouble writes f as Redis's ld2string does in LD_STR_HUMAN mode: "%.17Lf", trailing
// zeros (and a trailing '.') removed, "-0" written "0".
func formatLongDouble(f *big.Float) []byte {
	b := []byte(f.Text('f', 17))
	if bytes.IndexByte(b, '.') >= 0 {
		b = bytes.TrimRight(b, "0")
		b = bytes.TrimSuffix(b, []byte("."))
	}
	if string(b) == "-0" {
		b = b[1:]
	}
	return b
}

// ParseFloatIncr parses HINCRBYFLOAT's increment, in Redis's order of checks.
func ParseFloatIncr(arg []byte) (*big.Float, string) {
	f, ok := parseLongDouble(arg)
	switch {
	case !ok:
		return nil, ErrNotFloat
	case f.IsInf():
		return nil, ErrNaNArg
	}
	return f, ""
}

// IncrFloat returns the field's value (cur; missing if !exists) plus incr, formatted as Redis
// stores it, or an error reply.
func IncrFloat(cur []byte, exists bool, incr *big.Float) ([]byte, string) {
	v := new(big.Float).SetPrec(ldPrec)
	if exists {
		var ok bool
		if v, ok = parseLongDouble(cur); !ok {
			return nil, ErrHashNotFlt
		}
		if v.IsInf() {
			return nil, ErrNaNResult
		}
	}
	sum := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(v, incr)
	if new(big.Float).Abs(sum).Cmp(ldMax) > 0 {
		return nil, ErrNaNResult
	}
	return formatLongDouble(sum), ""
}
