package script

import (
	"bytes"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// Conversions between RESP replies and Lua values, both ways, as Redis 7.0's script_lua.c.

// fromRESP converts one reply that a command wrote (in the protocol the script chose with
// redis.setresp) to a Lua value, and returns it with the bytes it used. The reply comes from
// the server itself, so it is well formed; a malformed one converts to nil rather than fail.
func (s *state) fromRESP(b []byte, depth int) (lua.LValue, int) {
	L := s.L
	if len(b) < 3 {
		return lua.LNil, len(b)
	}
	end := bytes.Index(b, crlf)
	if end < 0 {
		return lua.LNil, len(b)
	}
	line, next := b[1:end], end+2
	n, _ := strconv.ParseInt(string(line), 10, 64)
	switch b[0] {
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, next
	case '-':
		t := errorTable(L, "-"+string(line))
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t, next
	case ':':
		return lua.LNumber(n), next
	case '$', '=':
		if n < 0 {
			return lua.LFalse, next
		}
		if next+int(n)+2 > len(b) {
			return lua.LNil, len(b)
		}
		str := b[next : next+int(n)]
		next += int(n) + 2
		if b[0] == '=' && len(str) >= 4 {
			t, inner := L.CreateTable(0, 1), L.CreateTable(0, 2)
			inner.RawSetString("string", lua.LString(str[4:]))
			inner.RawSetString("format", lua.LString(str[:3]))
			t.RawSetString("verbatim_string", inner)
			return t, next
		}
		return lua.LString(str), next
	case '*', '~', '%', '|', '>':
		if n < 0 {
			return lua.LFalse, next
		}
		if depth > maxDepth {
			return lua.LNil, len(b)
		}
		switch b[0] {
		case '*', '>':
			t := L.CreateTable(int(min(n, 1024)), 0)
			for i := range n {
				v, used := s.fromRESP(b[next:], depth+1)
				next += used
				if v != lua.LNil {
					t.RawSetInt(int(i)+1, v)
				}
			}
			return t, next
		case '~':
			t, set := L.CreateTable(0, 1), L.NewTable()
			for range n {
				v, used := s.fromRESP(b[next:], depth+1)
				next += used
				if v != lua.LNil {
					set.RawSet(v, lua.LTrue)
				}
			}
			t.RawSetString("set", set)
			return t, next
		case '%':
			t, m := L.CreateTable(0, 1), L.NewTable()
			for range n {
				k, used := s.fromRESP(b[next:], depth+1)
				next += used
				v, used := s.fromRESP(b[next:], depth+1)
				next += used
				if k != lua.LNil {
					m.RawSet(k, v)
				}
			}
			t.RawSetString("map", m)
			return t, next
		default: // '|': attributes are skipped, the value after them converted
			for range 2 * n {
				_, used := s.fromRESP(b[next:], depth+1)
				next += used
			}
			v, used := s.fromRESP(b[next:], depth+1)
			return v, next + used
		}
	case '_':
		return lua.LNil, next
	case '#':
		return lua.LBool(len(line) > 0 && line[0] == 't'), next
	case ',':
		f, _, _ := strtod(string(line))
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, next
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, next
	}
	return lua.LNil, next
}

var crlf = []byte("\r\n")

// maxDepth bounds the nesting of tables converted to replies (a table that contains itself
// would otherwise recurse forever) and of replies converted to tables.
const maxDepth = 1000

// toRESP appends the reply for a script's value v, as Redis's luaReplyToRedisReply: callerProto
// is the protocol of the client that gets the reply, scriptProto the one the script chose with
// redis.setresp (it decides how booleans are written).
func toRESP(b []byte, v lua.LValue, callerProto, scriptProto, depth int) []byte {
	if depth > maxDepth {
		return appendError(b, "reached lua stack limit")
	}
	switch x := v.(type) {
	case lua.LString:
		return appendBulk(b, string(x))
	case lua.LBool:
		switch {
		case scriptProto == 2 && bool(x):
			return append(b, ":1\r\n"...)
		case scriptProto == 2:
			return appendNull(b, callerProto)
		case callerProto == 3 && bool(x):
			return append(b, "#t\r\n"...)
		case callerProto == 3:
			return append(b, "#f\r\n"...)
		case bool(x):
			return append(b, ":1\r\n"...)
		default:
			return append(b, ":0\r\n"...)
		}
	case lua.LNumber:
		return appendInt(b, luaInt(float64(x)))
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			return appendError(b, cstr([]byte(e)))
		}
		if ok, isStr := x.RawGetString("ok").(lua.LString); isStr {
			b = append(b, '+')
			b = appendNoCRLF(b, cstr([]byte(ok)))
			return append(b, '\r', '\n')
		}
		if d, ok := x.RawGetString("double").(lua.LNumber); ok {
			return appendDouble(b, float64(d), callerProto)
		}
		if n, ok := x.RawGetString("big_number").(lua.LString); ok {
			if callerProto == 2 {
				return appendBulk(b, string(appendNoCRLF(nil, string(n))))
			}
			b = append(b, '(')
			b = appendNoCRLF(b, string(n))
			return append(b, '\r', '\n')
		}
		if vs, ok := x.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, okf := vs.RawGetString("format").(lua.LString)
			str, oks := vs.RawGetString("string").(lua.LString)
			if okf && oks {
				if callerProto == 2 {
					return appendBulk(b, string(str))
				}
				ext := []byte("   ")
				copy(ext, cstr([]byte(f)))
				b = append(b, '=')
				b = strconv.AppendInt(b, int64(len(str)+4), 10)
				b = append(b, '\r', '\n')
				b = append(b, ext...)
				b = append(b, ':')
				b = append(b, str...)
				return append(b, '\r', '\n')
			}
		}
		if m, ok := x.RawGetString("map").(*lua.LTable); ok {
			var body []byte
			n := 0
			for k, val := m.Next(lua.LNil); k != lua.LNil; k, val = m.Next(k) {
				body = toRESP(body, k, callerProto, scriptProto, depth+1)
				body = toRESP(body, val, callerProto, scriptProto, depth+1)
				n++
			}
			if callerProto == 3 {
				b = appendLen(b, '%', n)
			} else {
				b = appendLen(b, '*', 2*n)
			}
			return append(b, body...)
		}
		if set, ok := x.RawGetString("set").(*lua.LTable); ok {
			var body []byte
			n := 0
			for k, _ := set.Next(lua.LNil); k != lua.LNil; k, _ = set.Next(k) {
				body = toRESP(body, k, callerProto, scriptProto, depth+1)
				n++
			}
			if callerProto == 3 {
				b = appendLen(b, '~', n)
			} else {
				b = appendLen(b, '*', n)
			}
			return append(b, body...)
		}
		var body []byte
		n := 0
		for j := 1; ; j++ {
			e := x.RawGetInt(j)
			if e == lua.LNil {
				break
			}
			body = toRESP(body, e, callerProto, scriptProto, depth+1)
			n++
		}
		b = appendLen(b, '*', n)
		return append(b, body...)
	}
	return appendNull(b, callerProto)
}

// luaInt converts a Lua number to a reply's integer as C's (long long) cast does on x86-64:
// toward zero, and the minimum integer for what does not fit (NaN, infinities).
func luaInt(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

func appendLen(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, s string) []byte {
	b = appendLen(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

func appendNull(b []byte, proto int) []byte {
	if proto == 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// appendError appends "-msg" with CR and LF as spaces, as Redis's addReplyErrorFormat.
func appendError(b []byte, msg string) []byte {
	b = append(b, '-')
	b = appendNoCRLF(b, msg)
	return append(b, '\r', '\n')
}

func appendNoCRLF(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// appendDouble appends a double as Redis 7.0's addReplyDouble: "%.17g" (inf, -inf, nan
// spelled out), a bulk string in RESP2.
func appendDouble(b []byte, f float64, proto int) []byte {
	var s string
	switch {
	case math.IsInf(f, 1):
		s = "inf"
	case math.IsInf(f, -1):
		s = "-inf"
	case math.IsNaN(f):
		s = "nan"
	default:
		s = strconv.FormatFloat(f, 'g', 17, 64)
	}
	if proto == 3 {
		b = append(b, ',')
		b = append(b, s...)
		return append(b, '\r', '\n')
	}
	return appendBulk(b, s)
}
