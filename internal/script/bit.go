package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// bit is LuaBitOp 1.0, the bit library Redis embeds: 32-bit operations on Lua numbers,
// arguments rounded to the nearest integer and taken modulo 2^32, results signed. It is a
// dozen lines of arithmetic, written here rather than taken from a library because its
// rounding is LuaBitOp's own.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	un := func(f func(uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int { return bret(L, f(barg(L, 1))) }
	}
	fold := func(f func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := barg(L, 1)
			for i := L.GetTop(); i > 1; i-- {
				b = f(b, barg(L, i))
			}
			return bret(L, b)
		}
	}
	shift := func(f func(b uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b, n := barg(L, 1), barg(L, 2)&31
			return bret(L, f(b, uint(n)))
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit":   un(func(b uint32) uint32 { return b }),
		"bnot":    un(func(b uint32) uint32 { return ^b }),
		"bswap":   un(func(b uint32) uint32 { return b>>24 | b>>8&0xff00 | b&0xff00<<8 | b<<24 }),
		"band":    fold(func(a, b uint32) uint32 { return a & b }),
		"bor":     fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(b uint32, n uint) uint32 { return b << n }),
		"rshift":  shift(func(b uint32, n uint) uint32 { return b >> n }),
		"arshift": shift(func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) }),
		"rol":     shift(func(b uint32, n uint) uint32 { return b<<n | b>>(32-n) }),
		"ror":     shift(func(b uint32, n uint) uint32 { return b>>n | b<<(32-n) }),
		"tohex": func(L *lua.LState) int {
			b := barg(L, 1)
			n := int32(8)
			if L.Get(2) != lua.LNil {
				n = int32(barg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[b&15]
				b >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// barg is LuaBitOp's argument conversion: add 2^52+2^51 and keep the low 32 bits of the
// double, which rounds to the nearest integer and wraps modulo 2^32.
func barg(L *lua.LState, i int) uint32 {
	v := L.Get(i)
	n := luaNumber(v)
	b := uint32(math.Float64bits(n + 6755399441055744.0))
	if b == 0 {
		if _, isNum := v.(lua.LNumber); !isNum {
			if _, ok := parseNumberValue(v); !ok {
				L.TypeError(i, lua.LTNumber)
			}
		}
	}
	return b
}

func parseNumberValue(v lua.LValue) (float64, bool) {
	if s, ok := v.(lua.LString); ok {
		return parseNumber(string(s))
	}
	return 0, false
}

func bret(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}
