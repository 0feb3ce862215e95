package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// struct is Roberto Ierusalimschy's struct library (0.2) as Redis embeds it: pack, unpack
// and size of binary records, on x86-64's sizes (short 2, int 4, long and size_t 8, native
// little-endian, alignment up to 8). Written here: no Go library speaks its format strings.

const structMaxIntSize = 32

type structHeader struct {
	little bool
	align  int
}

func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

// structNum reads an optional decimal number at f[*i].
func structNum(L *lua.LState, f string, i *int, def int) int {
	if *i >= len(f) || !isDigit(f[*i]) {
		return def
	}
	a := 0
	for *i < len(f) && isDigit(f[*i]) {
		d := int(f[*i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			L.RaiseError("integral size overflow")
		}
		a = a*10 + d
		*i++
	}
	return a
}

func structOptSize(L *lua.LState, opt byte, f string, i *int) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return structNum(L, f, i, 1)
	case 'i', 'I':
		sz := structNum(L, f, i, 4)
		if sz > structMaxIntSize {
			L.RaiseError("integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

func structToAlign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

func structControl(L *lua.LState, opt byte, f string, i *int, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.little = false
	case '<':
		h.little = true
	case '!':
		a := structNum(L, f, i, 8)
		if a <= 0 || a&(a-1) != 0 {
			L.RaiseError("alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		L.ArgError(1, "invalid format option '"+string(opt)+"'")
	}
}

func structPack(L *lua.LState) int {
	f := cstr([]byte(L.CheckString(1)))
	h := structHeader{little: true, align: 1}
	arg := 2
	var out []byte
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		for range structToAlign(len(out), &h, opt, size) {
			out = append(out, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(luaInt(n))
			} else if n >= 1<<64 {
				v = 0
			} else {
				v = uint64(n)
			}
			buf := make([]byte, size)
			for k := range size {
				idx := k
				if !h.little {
					idx = size - 1 - k
				}
				buf[idx] = byte(v)
				v >>= 8
			}
			out = append(out, buf...)
		case 'x':
			out = append(out, 0)
		case 'f':
			bits := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			out = appendUint(out, uint64(bits), 4, h.little)
		case 'd':
			bits := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			out = appendUint(out, bits, 8, h.little)
		case 'c', 's':
			s := checkString(L, arg)
			arg++
			if size == 0 || opt == 's' {
				size = len(s)
			}
			if len(s) < size {
				L.ArgError(arg, "string too short")
			}
			out = append(out, s[:size]...)
			if opt == 's' {
				out = append(out, 0)
			}
		default:
			structControl(L, opt, f, &i, &h)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

func appendUint(b []byte, v uint64, size int, little bool) []byte {
	var tmp [8]byte
	if little {
		binary.LittleEndian.PutUint64(tmp[:], v)
		return append(b, tmp[:size]...)
	}
	binary.BigEndian.PutUint64(tmp[:], v)
	return append(b, tmp[8-size:]...)
}

func structUnpack(L *lua.LState) int {
	f := cstr([]byte(L.CheckString(1)))
	data := L.CheckString(2)
	pos := L.OptInt(3, 1)
	if pos <= 0 {
		L.ArgError(3, "offset must be 1 or greater")
	}
	pos--
	h := structHeader{little: true, align: 1}
	var results []lua.LValue
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if size > len(data) || pos > len(data)-size {
			L.ArgError(2, "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var l uint64
			for k := range size {
				idx := size - 1 - k
				if !h.little {
					idx = k
				}
				l = l<<8 | uint64(data[pos+idx])
			}
			if opt >= 'a' && opt <= 'z' && size*8-1 < 64 {
				mask := ^uint64(0) << (size*8 - 1)
				if l&mask != 0 {
					l |= mask
				}
				results = append(results, lua.LNumber(float64(int64(l))))
			} else {
				results = append(results, lua.LNumber(float64(l)))
			}
		case 'x':
		case 'f':
			bits := readUint([]byte(data[pos:pos+4]), h.little)
			results = append(results, lua.LNumber(float64(math.Float32frombits(uint32(bits)))))
		case 'd':
			bits := readUint([]byte(data[pos:pos+8]), h.little)
			results = append(results, lua.LNumber(math.Float64frombits(bits)))
		case 'c':
			if size == 0 {
				if len(results) == 0 {
					L.RaiseError("format 'c0' needs a previous size")
				}
				n, ok := results[len(results)-1].(lua.LNumber)
				if !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				results = results[:len(results)-1]
				size = int(n)
				if size < 0 || size > len(data) || pos > len(data)-size {
					L.ArgError(2, "data string too short")
				}
			}
			results = append(results, lua.LString(data[pos:pos+size]))
		case 's':
			e := -1
			for k := pos; k < len(data); k++ {
				if data[k] == 0 {
					e = k
					break
				}
			}
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e - pos + 1
			results = append(results, lua.LString(data[pos:e]))
		default:
			structControl(L, opt, f, &i, &h)
		}
		pos += size
	}
	for _, r := range results {
		L.Push(r)
	}
	L.Push(lua.LNumber(pos + 1))
	return len(results) + 1
}

func readUint(b []byte, little bool) uint64 {
	var v uint64
	for k := range b {
		idx := k
		if little {
			idx = len(b) - 1 - k
		}
		v = v<<8 | uint64(b[idx])
	}
	return v
}

func structSize(L *lua.LState) int {
	f := cstr([]byte(L.CheckString(1)))
	h := structHeader{little: true, align: 1}
	pos := 0
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if opt == 's' {
			L.ArgError(1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			L.ArgError(1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			structControl(L, opt, f, &i, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
