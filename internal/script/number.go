package script

import (
	"math"
	"strconv"
	"strings"
)

// Numbers cross between Lua and Redis as C formats and parses them, not as Go does: these
// helpers are the few places where that shows.

// formatNumber formats n as Lua 5.1's tostring does ("%.14g"), with glibc's spellings of the
// special values.
func formatNumber(n float64) string {
	if s, ok := specialName(n); ok {
		return s
	}
	switch {
	case n == 0 && math.Signbit(n):
		return "-0"
	case n == math.Trunc(n) && math.Abs(n) < 1e14:
		return strconv.FormatInt(int64(n), 10) // the common case
	}
	return strconv.FormatFloat(n, 'g', 14, 64)
}

// formatArg formats a number passed to redis.call as Redis does ("%.17g").
func formatArg(n float64) string {
	if s, ok := specialName(n); ok {
		return s
	}
	return strconv.FormatFloat(n, 'g', 17, 64)
}

// specialName spells an infinity or a NaN as glibc's printf does.
func specialName(n float64) (string, bool) {
	switch {
	case math.IsInf(n, 1):
		return "inf", true
	case math.IsInf(n, -1):
		return "-inf", true
	case math.IsNaN(n) && math.Signbit(n):
		return "-nan", true
	case math.IsNaN(n):
		return "nan", true
	}
	return "", false
}

// parseNumber converts a string to a number as Lua 5.1's luaO_str2d: C's strtod (leading
// blanks, a sign, decimal or hexadecimal digits, inf and nan), then trailing blanks only.
func parseNumber(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i] // Lua hands strtod a C string
	}
	n, rest, ok := strtod(s)
	if !ok {
		return 0, false
	}
	for len(rest) > 0 && isSpace(rest[0]) {
		rest = rest[1:]
	}
	return n, rest == ""
}

// strtod parses the longest number at the start of s as glibc's strtod does, returning what
// follows it.
func strtod(s string) (float64, string, bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := s[i:]
	low := strings.ToLower(rest)
	switch {
	case strings.HasPrefix(low, "infinity"):
		return sign(math.Inf(1)), rest[8:], true
	case strings.HasPrefix(low, "inf"):
		return sign(math.Inf(1)), rest[3:], true
	case strings.HasPrefix(low, "nan"):
		r := rest[3:]
		if len(r) > 0 && r[0] == '(' {
			j := 1
			for j < len(r) && (isAlnum(r[j]) || r[j] == '_') {
				j++
			}
			if j < len(r) && r[j] == ')' {
				r = r[j+1:]
			}
		}
		return sign(math.NaN()), r, true
	case len(low) >= 2 && low[0] == '0' && low[1] == 'x':
		if f, n, ok := hexFloat(rest[2:]); ok {
			return sign(f), rest[2+n:], true
		}
		return sign(0), rest[1:], true // "0x" without digits: the 0
	}
	j := i
	digits := 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, s, false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	f, err := strconv.ParseFloat(s[start:j], 64)
	if err != nil && !math.IsInf(f, 0) && f != 0 {
		return 0, s, false
	}
	return f, s[j:], true
}

// hexFloat parses hexadecimal digits with an optional point and binary exponent ("1.8p3"),
// returning the value and the bytes used; ok is false without a digit.
func hexFloat(s string) (float64, int, bool) {
	var mant float64
	exp, digits, i := 0, 0, 0
	for ; i < len(s) && isHex(s[i]); i++ {
		mant = mant*16 + float64(unhex(s[i]))
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && isHex(s[i]); i++ {
			mant = mant*16 + float64(unhex(s[i]))
			exp -= 4
			digits++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		k := i + 1
		eneg := false
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			eneg = s[k] == '-'
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			e := 0
			for ; k < len(s) && isDigit(s[k]); k++ {
				if e < 100000 {
					e = e*10 + int(s[k]-'0')
				}
			}
			if eneg {
				e = -e
			}
			exp += e
			i = k
		}
	}
	return math.Ldexp(mant, exp), i, true
}

// strtoul parses an unsigned integer in base (2 to 36) at the start of s as C's strtoul does
// (blanks, a sign, "0x" for base 16), returning the value and what follows; ok is false
// without a digit. Values past 2^64-1 saturate, as strtoul's ULONG_MAX.
func strtoul(s string, base int) (uint64, string, bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitVal(s[i+2]) < 16 {
		i += 2
	}
	var n uint64
	over := false
	start := i
	for ; i < len(s); i++ {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		if n > (math.MaxUint64-uint64(d))/uint64(base) {
			over = true
		}
		n = n*uint64(base) + uint64(d)
	}
	if i == start {
		return 0, s, false
	}
	if over {
		return math.MaxUint64, s[i:], true
	}
	if neg {
		n = -n
	}
	return n, s[i:], true
}

func digitVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// rand48 is Redis's redisLrand48: the 48-bit linear congruential generator of lrand48, with
// its state kept for the life of the server (Redis 7.0 does not reseed it per script), so
// that math.random gives the same sequence as Redis's on every platform.
type rand48 struct{ x uint64 }

const (
	rand48Mask = 1<<48 - 1
	rand48Max  = math.MaxInt32 // REDIS_LRAND48_MAX
)

func newRand48() rand48 { return rand48{x: 0x1234ABCD330E} }

func (r *rand48) seed(v int32) { r.x = uint64(uint32(v))<<16 | 0x330E }

func (r *rand48) next() int32 {
	r.x = (0x5DEECE66D*r.x + 0xB) & rand48Mask
	return int32(r.x >> 17)
}
