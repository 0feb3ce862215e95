package script

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson is lua-cjson 2.1.0 as Redis embeds it, written by hand: the Go JSON libraries for
// gopher-lua encode through encoding/json, which formats numbers, escapes strings and
// tells arrays from objects differently (cjson writes numbers with "%.14g", escapes "/",
// encodes an empty table as {}, refuses excessively sparse arrays, and decodes with
// strtod, taking inf, nan and hex numbers). The settings functions change the module for
// every later script, as in Redis.

type cjsonConfig struct {
	sparseConvert  bool
	sparseRatio    int
	sparseSafe     int
	encodeMaxDepth int
	decodeMaxDepth int
	encodeInvalid  int // 0 refuse, 1 allow, 2 as null
	decodeInvalid  bool
	precision      int
}

func openCJSON(L *lua.LState) *lua.LTable {
	cfg := &cjsonConfig{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000, decodeMaxDepth: 1000, decodeInvalid: true, precision: 14}
	null := L.NewUserData() // cjson.null, Redis's NULL lightuserdata
	t := L.NewTable()
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("encode", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		var b []byte
		b = cfg.encode(L, b, L.Get(1), 0, null)
		L.Push(lua.LString(b))
		return 1
	})
	set("decode", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		s := checkString(L, 1)
		if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
			L.RaiseError("JSON parser does not support UTF-16 or UTF-32")
		}
		d := &jsonDecoder{L: L, cfg: cfg, s: s, null: null}
		tok := d.next()
		v := d.value(tok)
		if tok = d.next(); tok.kind != tEnd {
			d.fail("the end", tok)
		}
		L.Push(v)
		return 1
	})
	intSetting := func(name string, p *int, lo, hi int) {
		set(name, func(L *lua.LState) int {
			if L.GetTop() > 1 {
				L.ArgError(1, "found too many arguments")
			}
			if L.Get(1) != lua.LNil {
				n := L.CheckInt(1)
				if n < lo || n > hi {
					L.ArgError(1, "expected integer between "+itoa(lo)+" and "+itoa(hi))
				}
				*p = n
			}
			L.Push(lua.LNumber(*p))
			return 1
		})
	}
	intSetting("encode_max_depth", &cfg.encodeMaxDepth, 1, math.MaxInt32)
	intSetting("decode_max_depth", &cfg.decodeMaxDepth, 1, math.MaxInt32)
	intSetting("encode_number_precision", &cfg.precision, 1, 14)
	set("encode_sparse_array", func(L *lua.LState) int {
		if L.Get(1) != lua.LNil {
			cfg.sparseConvert = L.ToBool(1)
		}
		if L.Get(2) != lua.LNil {
			cfg.sparseRatio = L.CheckInt(2)
		}
		if L.Get(3) != lua.LNil {
			cfg.sparseSafe = L.CheckInt(3)
		}
		L.Push(lua.LBool(cfg.sparseConvert))
		L.Push(lua.LNumber(cfg.sparseRatio))
		L.Push(lua.LNumber(cfg.sparseSafe))
		return 3
	})
	set("encode_invalid_numbers", func(L *lua.LState) int {
		switch v := L.Get(1).(type) {
		case lua.LBool:
			cfg.encodeInvalid = map[bool]int{false: 0, true: 1}[bool(v)]
		case lua.LString:
			if v == "null" {
				cfg.encodeInvalid = 2
			}
		}
		switch cfg.encodeInvalid {
		case 1:
			L.Push(lua.LTrue)
		case 2:
			L.Push(lua.LString("null"))
		default:
			L.Push(lua.LFalse)
		}
		return 1
	})
	set("decode_invalid_numbers", func(L *lua.LState) int {
		if v, ok := L.Get(1).(lua.LBool); ok {
			cfg.decodeInvalid = bool(v)
		}
		L.Push(lua.LBool(cfg.decodeInvalid))
		return 1
	})
	set("encode_keep_buffer", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	t.RawSetString("null", null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func typeName(v lua.LValue) string {
	if _, ok := v.(*lua.LUserData); ok {
		return "userdata"
	}
	return v.Type().String()
}

func (cfg *cjsonConfig) encode(L *lua.LState, b []byte, v lua.LValue, depth int, null *lua.LUserData) []byte {
	switch x := v.(type) {
	case lua.LString:
		return jsonString(b, string(x))
	case lua.LNumber:
		return cfg.number(L, b, float64(x), v)
	case lua.LBool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case *lua.LNilType:
		return append(b, "null"...)
	case *lua.LTable:
		depth++
		if depth > cfg.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := cfg.arrayLength(L, x); n > 0 {
			b = append(b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = cfg.encode(L, b, x.RawGetInt(i), depth, null)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		for k, val := x.Next(lua.LNil); k != lua.LNil; k, val = x.Next(k) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LNumber:
				b = append(b, '"')
				b = cfg.number(L, b, float64(kk), kk)
				b = append(b, '"', ':')
			case lua.LString:
				b = jsonString(b, string(kk))
				b = append(b, ':')
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", typeName(k))
			}
			b = cfg.encode(L, b, val, depth, null)
		}
		return append(b, '}')
	case *lua.LUserData:
		if x == null {
			return append(b, "null"...)
		}
	}
	L.RaiseError("Cannot serialise %s: type not supported", typeName(v))
	return b
}

func (cfg *cjsonConfig) number(L *lua.LState, b []byte, n float64, v lua.LValue) []byte {
	if math.IsInf(n, 0) || math.IsNaN(n) {
		switch cfg.encodeInvalid {
		case 0:
			L.RaiseError("Cannot serialise %s: must not be NaN or Inf", typeName(v))
		case 1:
			if math.IsNaN(n) {
				return append(b, "nan"...)
			}
		default:
			return append(b, "null"...)
		}
	}
	if cfg.precision == 14 {
		return append(b, formatNumber(n)...)
	}
	return append(b, cFormat("", -1, cfg.precision, true, 'g', n)...)
}

// arrayLength is lua-cjson's lua_array_length: the largest key if every key is an integer >=
// 1 and the array is not excessively sparse, -1 for an object (0 for an empty table, which
// encodes as an object).
func (cfg *cjsonConfig) arrayLength(L *lua.LState, t *lua.LTable) int {
	maxKey, items := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f != math.Floor(f) || f < 1 {
			return -1
		}
		if f > float64(math.MaxInt32) {
			f = math.MaxInt32
		}
		maxKey = max(maxKey, int(f))
		items++
	}
	if cfg.sparseRatio > 0 && maxKey > items*cfg.sparseRatio && maxKey > cfg.sparseSafe {
		if !cfg.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return -1
	}
	return maxKey
}

func jsonString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '/':
			b = append(b, '\\', '/')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

type jsonKind int

const (
	tObjBegin jsonKind = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
)

var jsonKindNames = []string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER",
	"T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR"}

type jsonToken struct {
	kind  jsonKind
	index int
	str   string
	num   float64
	b     bool
	err   string
}

// jsonDecoder is lua-cjson's decoder. The input is a C string to it: a NUL ends it.
type jsonDecoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	s     string
	p     int
	depth int
	null  *lua.LUserData
}

func (d *jsonDecoder) at(i int) byte {
	if i < len(d.s) {
		return d.s[i]
	}
	return 0
}

func (d *jsonDecoder) next() jsonToken {
	for {
		c := d.at(d.p)
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		d.p++
	}
	tok := jsonToken{index: d.p}
	c := d.at(d.p)
	single := map[byte]jsonKind{'{': tObjBegin, '}': tObjEnd, '[': tArrBegin, ']': tArrEnd, ',': tComma, ':': tColon}
	if k, ok := single[c]; ok {
		d.p++
		tok.kind = k
		return tok
	}
	rest := d.s[min(d.p, len(d.s)):]
	switch {
	case c == 0:
		tok.kind = tEnd
	case c == '"':
		d.string(&tok)
	case c == '-' || isDigit(c):
		if !d.cfg.decodeInvalid && d.invalidNumber() {
			return d.errTok("invalid number")
		}
		d.number(&tok)
	case strings.HasPrefix(rest, "true"):
		tok.kind, tok.b = tBoolean, true
		d.p += 4
	case strings.HasPrefix(rest, "false"):
		tok.kind = tBoolean
		d.p += 5
	case strings.HasPrefix(rest, "null"):
		tok.kind = tNull
		d.p += 4
	case (c == 'i' || c == 'I' || c == 'n' || c == 'N' || c == '+') && d.cfg.decodeInvalid && d.invalidNumber():
		d.number(&tok)
	default:
		return d.errTok("invalid token")
	}
	return tok
}

func (d *jsonDecoder) errTok(msg string) jsonToken {
	return jsonToken{kind: tError, index: d.p, err: msg}
}

func (d *jsonDecoder) invalidNumber() bool {
	p := d.p
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	if c := d.at(p); c == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || isDigit(c2)
	} else if c <= '9' {
		return false
	}
	r := strings.ToLower(d.s[min(p, len(d.s)):])
	return strings.HasPrefix(r, "inf") || strings.HasPrefix(r, "nan")
}

func (d *jsonDecoder) number(tok *jsonToken) {
	s := d.s[d.p:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	n, rest, ok := strtod(s)
	if !ok {
		*tok = d.errTok("invalid number")
		return
	}
	tok.kind, tok.num = tNumber, n
	d.p += len(s) - len(rest)
}

func (d *jsonDecoder) string(tok *jsonToken) {
	d.p++
	var b []byte
	for {
		c := d.at(d.p)
		if c == '"' {
			break
		}
		if c == 0 {
			*tok = d.errTok("unexpected end of string")
			return
		}
		if c == '\\' {
			e := d.at(d.p + 1)
			switch e {
			case '"', '\\', '/':
				c = e
			case 'b':
				c = '\b'
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'f':
				c = '\f'
			case 'r':
				c = '\r'
			case 'u':
				var ok bool
				if b, ok = d.unicode(b); !ok {
					*tok = d.errTok("invalid unicode escape code")
					return
				}
				continue
			default:
				*tok = d.errTok("invalid escape code")
				return
			}
			d.p++
		}
		b = append(b, c)
		d.p++
	}
	d.p++
	tok.kind, tok.str = tString, string(b)
}

func (d *jsonDecoder) hex4(at int) int {
	v := 0
	for i := range 4 {
		c := d.at(at + i)
		if !isHex(c) {
			return -1
		}
		v = v<<4 | int(unhex(c))
	}
	return v
}

func (d *jsonDecoder) unicode(b []byte) ([]byte, bool) {
	cp := d.hex4(d.p + 2)
	if cp < 0 {
		return b, false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || d.at(d.p+6) != '\\' || d.at(d.p+7) != 'u' {
			return b, false
		}
		lo := d.hex4(d.p + 8)
		if lo < 0 || lo&0xFC00 != 0xDC00 {
			return b, false
		}
		cp = ((cp&0x3FF)<<10 | lo&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		b = append(b, byte(cp))
	case cp <= 0x7FF:
		b = append(b, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		b = append(b, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		b = append(b, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	d.p += n
	return b, true
}

func (d *jsonDecoder) fail(expected string, tok jsonToken) {
	found := tok.err
	if tok.kind != tError {
		found = jsonKindNames[tok.kind]
	}
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, tok.index+1)
}

func (d *jsonDecoder) descend() {
	d.depth++
	if d.depth > d.cfg.decodeMaxDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", d.depth, d.p)
	}
}

func (d *jsonDecoder) value(tok jsonToken) lua.LValue {
	L := d.L
	switch tok.kind {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.b)
	case tNull:
		return d.null
	case tObjBegin:
		d.descend()
		t := L.NewTable()
		tok = d.next()
		if tok.kind == tObjEnd {
			d.depth--
			return t
		}
		for {
			if tok.kind != tString {
				d.fail("object key string", tok)
			}
			key := tok.str
			if tok = d.next(); tok.kind != tColon {
				d.fail("colon", tok)
			}
			t.RawSetString(key, d.value(d.next()))
			tok = d.next()
			if tok.kind == tObjEnd {
				d.depth--
				return t
			}
			if tok.kind != tComma {
				d.fail("comma or object end", tok)
			}
			tok = d.next()
		}
	case tArrBegin:
		d.descend()
		t := L.NewTable()
		tok = d.next()
		if tok.kind == tArrEnd {
			d.depth--
			return t
		}
		for i := 1; ; i++ {
			t.RawSetInt(i, d.value(tok))
			tok = d.next()
			if tok.kind == tArrEnd {
				d.depth--
				return t
			}
			if tok.kind != tComma {
				d.fail("comma or array end", tok)
			}
			tok = d.next()
		}
	}
	d.fail("value", tok)
	return lua.LNil
}
