package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack is lua-cmsgpack 0.4 as Redis embeds it: pack turns its arguments into one
// MessagePack stream, unpack (and unpack_one, unpack_limit) turn a stream back into values.
// Written by hand rather than on a MessagePack library because the choices are
// lua-cmsgpack's own: a table is an array only when its keys are exactly 1..n, a number
// that is an integer takes the smallest integer form and any other a float32 when that is
// exact, tables nested 16 deep become nil, and the decoder knows no bin or ext types.

const cmsgpackMaxNesting = 16

func openCmsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(mpPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return mpUnpack(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		off := L.OptInt(2, 0)
		return mpUnpack(L, 1, off)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := L.CheckInt(2)
		off := L.OptInt(3, 0)
		return mpUnpack(L, limit, off)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

func mpPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(0, "MessagePack pack needs input.")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = mpEncode(b, L.Get(i), 0)
	}
	L.Push(lua.LString(b))
	return 1
}

func mpHeader(b []byte, n int, fix, small byte, big byte, fixMax int) []byte {
	switch {
	case n <= fixMax:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return append(b, small, byte(n>>8), byte(n))
	}
	return append(b, big, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func mpEncode(b []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda, byte(n>>8), byte(n))
		default:
			b = append(b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		}
		return append(b, x...)
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if !math.IsInf(f, 0) && f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return mpInt(b, int64(f))
		}
		if f32 := float32(f); float64(f32) == f {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(f32))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			return append(b, 0xc0)
		}
		count, maxKey, array := 0, 0, true
		for k, _ := x.Next(lua.LNil); k != lua.LNil; k, _ = x.Next(k) {
			count++
			n, ok := k.(lua.LNumber)
			f := float64(n)
			if !ok || f <= 0 || f != math.Trunc(f) || f > math.MaxInt32 {
				array = false
				continue
			}
			maxKey = max(maxKey, int(f))
		}
		if array && maxKey == count {
			b = mpHeader(b, count, 0x90, 0xdc, 0xdd, 15)
			for i := 1; i <= count; i++ {
				b = mpEncode(b, x.RawGetInt(i), level+1)
			}
			return b
		}
		b = mpHeader(b, count, 0x80, 0xde, 0xdf, 15)
		for k, val := x.Next(lua.LNil); k != lua.LNil; k, val = x.Next(k) {
			b = mpEncode(b, k, level+1)
			b = mpEncode(b, val, level+1)
		}
		return b
	}
	return append(b, 0xc0)
}

func mpInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(b, byte(n))
	case n >= 0 && n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return append(b, 0xcd, byte(n>>8), byte(n))
	case n >= 0 && n <= 0xffffffff:
		b = append(b, 0xce)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	case n >= 0:
		b = append(b, 0xcf)
		return binary.BigEndian.AppendUint64(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= -128:
		return append(b, 0xd0, byte(n))
	case n >= -32768:
		return append(b, 0xd1, byte(n>>8), byte(n))
	case n >= -2147483648:
		b = append(b, 0xd2)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	b = append(b, 0xd3)
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

// A mpCursor reads a MessagePack stream; err is "" or lua-cmsgpack's error.
type mpCursor struct {
	b   []byte
	err string
}

const (
	mpEOF    = "Missing bytes in input."
	mpBadFmt = "Bad data format in input."
)

func (c *mpCursor) need(n int) bool {
	if len(c.b) < n {
		c.err = mpEOF
		return false
	}
	return true
}

func (c *mpCursor) decode(L *lua.LState, depth int) lua.LValue {
	if !c.need(1) {
		return lua.LNil
	}
	if depth > 8000 {
		L.RaiseError("stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
	}
	t := c.b[0]
	fixed := func(n int) []byte {
		if !c.need(1 + n) {
			return nil
		}
		v := c.b[1 : 1+n]
		c.b = c.b[1+n:]
		return v
	}
	str := func(hdr int) lua.LValue {
		h := fixed(hdr)
		if h == nil {
			return lua.LNil
		}
		var n uint64
		for _, x := range h {
			n = n<<8 | uint64(x)
		}
		if uint64(len(c.b)) < n {
			c.err = mpEOF
			return lua.LNil
		}
		s := lua.LString(c.b[:n])
		c.b = c.b[n:]
		return s
	}
	seq := func(hdr int, isMap bool) lua.LValue {
		var n uint64
		if hdr == 0 {
			n = uint64(t & 0x0f)
			c.b = c.b[1:]
		} else {
			h := fixed(hdr)
			if h == nil {
				return lua.LNil
			}
			for _, x := range h {
				n = n<<8 | uint64(x)
			}
		}
		tbl := L.NewTable()
		for i := uint64(1); i <= n; i++ {
			if isMap {
				k := c.decode(L, depth+1)
				if c.err != "" {
					return tbl
				}
				v := c.decode(L, depth+1)
				if c.err != "" {
					return tbl
				}
				if k == lua.LNil {
					L.RaiseError("table index is nil")
				}
				tbl.RawSet(k, v)
			} else {
				v := c.decode(L, depth+1)
				if c.err != "" {
					return tbl
				}
				tbl.RawSetInt(int(i), v)
			}
		}
		return tbl
	}
	switch {
	case t == 0xcc:
		if v := fixed(1); v != nil {
			return lua.LNumber(v[0])
		}
	case t == 0xd0:
		if v := fixed(1); v != nil {
			return lua.LNumber(int8(v[0]))
		}
	case t == 0xcd:
		if v := fixed(2); v != nil {
			return lua.LNumber(binary.BigEndian.Uint16(v))
		}
	case t == 0xd1:
		if v := fixed(2); v != nil {
			return lua.LNumber(int16(binary.BigEndian.Uint16(v)))
		}
	case t == 0xce:
		if v := fixed(4); v != nil {
			return lua.LNumber(binary.BigEndian.Uint32(v))
		}
	case t == 0xd2:
		if v := fixed(4); v != nil {
			return lua.LNumber(int32(binary.BigEndian.Uint32(v)))
		}
	case t == 0xcf:
		if v := fixed(8); v != nil {
			return lua.LNumber(float64(binary.BigEndian.Uint64(v)))
		}
	case t == 0xd3:
		if v := fixed(8); v != nil {
			return lua.LNumber(float64(int64(binary.BigEndian.Uint64(v))))
		}
	case t == 0xc0:
		c.b = c.b[1:]
		return lua.LNil
	case t == 0xc3:
		c.b = c.b[1:]
		return lua.LTrue
	case t == 0xc2:
		c.b = c.b[1:]
		return lua.LFalse
	case t == 0xca:
		if v := fixed(4); v != nil {
			return lua.LNumber(float64(math.Float32frombits(binary.BigEndian.Uint32(v))))
		}
	case t == 0xcb:
		if v := fixed(8); v != nil {
			return lua.LNumber(math.Float64frombits(binary.BigEndian.Uint64(v)))
		}
	case t == 0xd9:
		return str(1)
	case t == 0xda:
		return str(2)
	case t == 0xdb:
		return str(4)
	case t == 0xdc:
		return seq(2, false)
	case t == 0xdd:
		return seq(4, false)
	case t == 0xde:
		return seq(2, true)
	case t == 0xdf:
		return seq(4, true)
	case t&0x80 == 0:
		c.b = c.b[1:]
		return lua.LNumber(t)
	case t&0xe0 == 0xe0:
		c.b = c.b[1:]
		return lua.LNumber(int8(t))
	case t&0xe0 == 0xa0:
		n := int(t & 0x1f)
		if !c.need(1 + n) {
			return lua.LNil
		}
		s := lua.LString(c.b[1 : 1+n])
		c.b = c.b[1+n:]
		return s
	case t&0xf0 == 0x90:
		return seq(0, false)
	case t&0xf0 == 0x80:
		return seq(0, true)
	default:
		c.err = mpBadFmt
	}
	return lua.LNil
}

func mpUnpack(L *lua.LState, limit, offset int) int {
	s := L.CheckString(1)
	all := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	} else if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	if all {
		limit = math.MaxInt32
	}
	L.SetTop(1)
	c := &mpCursor{b: []byte(s[offset:])}
	cnt := 0
	for ; len(c.b) > 0 && cnt < limit; cnt++ {
		v := c.decode(L, 0)
		if c.err != "" {
			L.RaiseError("%s", c.err)
		}
		L.Push(v)
	}
	if !all {
		next := len(s) - len(c.b)
		if len(c.b) == 0 {
			next = -1
		}
		L.Insert(lua.LNumber(next), 2)
		cnt++
	}
	return cnt
}
