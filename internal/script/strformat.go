package script

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// strFormat is Lua 5.1's string.format (lstrlib.c's str_format), whose results scripts put in
// keys and replies: C's conversions %c %d %i %o %u %x %X %e %E %f %g %G %s, Lua's %q, flags
// "-+ #0", widths and precisions of at most two digits. gopher-lua's own passes the format
// to Go's fmt, which formats differently (%g's precision, %q, %x of negative numbers, inf
// and nan), so it is replaced. Hand-written: no library formats as C's printf does.
func strFormat(L *lua.LState) int {
	f := L.CheckString(1)
	var out []byte
	arg := 1
	for i := 0; i < len(f); {
		c := f[i]
		if c != '%' {
			out = append(out, c)
			i++
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			out = append(out, '%')
			i++
			continue
		}
		arg++
		// scanformat
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		if i-start >= 6 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := f[start:i]
		width, prec, hasPrec := -1, -1, false
		readNum := func() int {
			n := -1
			for k := 0; k < 2 && i < len(f) && isDigit(f[i]); k++ {
				n = max(n, 0)*10 + int(f[i]-'0')
				i++
			}
			return n
		}
		width = readNum()
		if i < len(f) && f[i] == '.' {
			i++
			hasPrec = true
			prec = max(readNum(), 0)
		}
		if i < len(f) && isDigit(f[i]) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		var verb byte
		if i < len(f) {
			verb = f[i]
			i++
		}
		switch verb {
		case 'c':
			item := cFormat(flags, width, -1, false, 'c', float64(L.CheckNumber(arg)))
			out = append(out, cstr([]byte(item))...)
		case 'd', 'i', 'o', 'u', 'x', 'X', 'e', 'E', 'f', 'g', 'G':
			out = append(out, cFormat(flags, width, prec, hasPrec, verb, float64(L.CheckNumber(arg)))...)
		case 'q':
			out = appendQuoted(out, checkString(L, arg))
		case 's':
			s := checkString(L, arg)
			if !hasPrec && len(s) >= 100 {
				out = append(out, s...)
				continue
			}
			s = cstr([]byte(s))
			if hasPrec && len(s) > prec {
				s = s[:prec]
			}
			out = append(out, pad(s, width, strings.IndexByte(flags, '-') >= 0)...)
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", verb)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

// checkString is luaL_checklstring: a string, or a number formatted as tostring does.
func checkString(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return formatNumber(float64(v))
	}
	L.TypeError(n, lua.LTString)
	return ""
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b = append(b, '\\', c)
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0', '0', '0')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func pad(s string, width int, left bool) string {
	if len(s) >= width {
		return s
	}
	sp := strings.Repeat(" ", width-len(s))
	if left {
		return s + sp
	}
	return sp + s
}

// cFormat formats one number as C's sprintf does for the conversion verb (Lua passes %d and
// %i a long, %o %u %x %X an unsigned long, the others a double).
func cFormat(flags string, width, prec int, hasPrec bool, verb byte, n float64) string {
	spec := func(v byte, fl string) string {
		var sb strings.Builder
		sb.WriteByte('%')
		sb.WriteString(fl)
		if width >= 0 {
			fmt.Fprint(&sb, width)
		}
		if hasPrec {
			fmt.Fprintf(&sb, ".%d", prec)
		}
		sb.WriteByte(v)
		return sb.String()
	}
	switch verb {
	case 'c':
		return pad(string([]byte{byte(int32(luaInt(n)))}), width, strings.IndexByte(flags, '-') >= 0)
	case 'd', 'i':
		return fmt.Sprintf(spec('d', flags), luaInt(n))
	case 'o', 'u', 'x', 'X':
		var u uint64
		if n >= 1<<63 && n < 1<<64 {
			u = uint64(n)
		} else {
			u = uint64(luaInt(n))
		}
		fl := strings.Map(func(r rune) rune {
			if r == '+' || r == ' ' || (r == '#' && (u == 0 || verb == 'u')) {
				return -1
			}
			return r
		}, flags)
		v := verb
		if v == 'u' {
			v = 'd'
		}
		return fmt.Sprintf(spec(v, fl), u)
	}
	// e E f g G
	if math.IsInf(n, 0) || math.IsNaN(n) {
		s := formatNumber(n)
		if s[0] != '-' {
			if strings.IndexByte(flags, '+') >= 0 {
				s = "+" + s
			} else if strings.IndexByte(flags, ' ') >= 0 {
				s = " " + s
			}
		}
		if verb == 'E' || verb == 'G' {
			s = strings.ToUpper(s)
		}
		return pad(s, width, strings.IndexByte(flags, '-') >= 0)
	}
	if !hasPrec {
		hasPrec, prec = true, 6 // C's default; Go's %g would print the shortest form
	}
	return fmt.Sprintf(spec(verb, flags), n)
}
