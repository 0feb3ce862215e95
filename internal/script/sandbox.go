package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The sandbox is Redis 7.0's: the libraries string, table, math, coroutine, cjson, bit,
// struct and cmsgpack, the base functions Redis allows (no print, dofile, loadfile, require,
// module, os, io, package, debug), and every table reachable from the globals read-only.
// Reading a global that does not exist is an error, as is creating one.
//
// Redis makes tables read-only with a flag of its own Lua; gopher-lua has none, so each
// protected table is a proxy: an empty table whose metatable reads through to the real one
// and refuses writes. The functions that would see past a proxy (next, pairs, ipairs,
// rawget, rawset, setmetatable, getmetatable, getfenv, table.insert/remove/sort) are
// wrapped to read the real table and to refuse writes, so no script can change what the next
// one sees.

const (
	errReadonly    = "Attempt to modify a readonly table"
	errNoGlobalFmt = "Script attempted to access nonexistent global variable '%s'"
)

// state is the interpreter with its protected globals.
type state struct {
	e       *Engine
	L       *lua.LState
	realG   *lua.LTable // the globals; scripts see proxyG
	proxyG  *lua.LTable
	real    map[*lua.LTable]*lua.LTable // proxy -> the table it protects
	proxies map[*lua.LTable]*lua.LTable // protected table -> its proxy
	handler *lua.LFunction
	run     *run // the running script, nil between runs
}

func newState(e *Engine) *state {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       20000, // Lua 5.1's LUAI_MAXCALLS
		RegistrySize:        1024,
		RegistryMaxSize:     1 << 20, // values on the stack at once: bounds unpack and deep calls
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	s := &state{e: e, L: L, realG: L.G.Global, real: map[*lua.LTable]*lua.LTable{}, proxies: map[*lua.LTable]*lua.LTable{}}
	g := s.realG
	// getfenv, setfenv and newproxy are gone from Redis 7.0.15 too (they allowed leaving the
	// sandbox).
	for _, name := range []string{"print", "dofile", "loadfile", "module", "require", "_printregs", "_GOPHER_LUA_VERSION", "package", "getfenv", "setfenv", "newproxy"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	s.replaceBase()
	s.fixLibraries()
	g.RawSetString("cjson", openCJSON(L))
	g.RawSetString("bit", openBit(L))
	g.RawSetString("struct", openStruct(L))
	g.RawSetString("cmsgpack", openCmsgpack(L))
	g.RawSetString("redis", s.openRedis())
	s.handler = L.NewFunction(s.errorHandler)

	// Protect: every library behind a proxy, the globals behind theirs.
	for _, name := range []string{"string", "table", "math", "coroutine", "cjson", "bit", "struct", "cmsgpack", "redis"} {
		if t, ok := g.RawGetString(name).(*lua.LTable); ok {
			g.RawSetString(name, s.protect(t))
		}
	}
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__index", g.RawGetString("string"))
		s.protect(mt)
	}
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		k := L.Get(2)
		switch k.(type) {
		case lua.LString, lua.LNumber:
		default:
			L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
		}
		L.RaiseError(errNoGlobalFmt, luaToString(k))
		return 0
	}))
	g.Metatable = missing
	s.proxyG = s.protect(g)
	g.RawSetString("_G", s.proxyG)
	return s
}

// protect returns the read-only proxy of t, making it on first use.
func (s *state) protect(t *lua.LTable) *lua.LTable {
	if p, ok := s.proxies[t]; ok {
		return p
	}
	if _, isProxy := s.real[t]; isProxy {
		return t
	}
	L := s.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errReadonly)
		return 0
	}))
	p.Metatable = mt
	s.real[p] = t
	s.proxies[t] = p
	s.proxies[mt] = p // its metatable is protected too (getmetatable hands out a proxy of it)
	return p
}

// unwrap returns the table a proxy protects, or v itself.
func (s *state) unwrap(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok {
		if r, ok := s.real[t]; ok {
			return r
		}
	}
	return v
}

func (s *state) protected(v lua.LValue) bool {
	t, ok := v.(*lua.LTable)
	if !ok {
		return false
	}
	_, a := s.real[t]
	_, b := s.proxies[t]
	return a || b
}

// replaceBase replaces the base functions whose gopher-lua versions differ from Lua 5.1's or
// would see past the protection.
func (s *state) replaceBase() {
	L, g := s.L, s.realG
	orig := func(name string) lua.LGFunction { return g.RawGetString(name).(*lua.LFunction).GFunction }
	set := func(name string, fn lua.LGFunction) { g.RawSetString(name, L.NewFunction(fn)) }

	pcall := orig("pcall")
	set("pcall", func(L *lua.LState) int {
		// Redis's pcall: an error table raised by redis.call comes back as its message.
		n := pcall(L)
		if n >= 2 && L.Get(L.GetTop()-n+1) == lua.LFalse {
			at := L.GetTop() - n + 2
			if t, ok := L.Get(at).(*lua.LTable); ok {
				if m := t.RawGetString("err"); isStringy(m) {
					L.Replace(at, m)
				}
			}
		}
		return n
	})
	set("tostring", func(L *lua.LState) int {
		v := L.CheckAny(1)
		if fn := L.GetMetaField(v, "__tostring"); fn != lua.LNil {
			L.Push(fn)
			L.Push(v)
			L.Call(1, 1)
			return 1
		}
		L.Push(lua.LString(luaToString(v)))
		return 1
	})
	set("tonumber", luaToNumber)
	set("collectgarbage", func(L *lua.LState) int {
		opt := L.OptString(1, "collect")
		switch opt {
		case "count":
			L.Push(lua.LNumber(float64(s.e.Stats().LuaBytes) / 1024))
		case "step":
			L.Push(lua.LFalse)
		case "collect", "stop", "restart", "setpause", "setstepmul":
			L.Push(lua.LNumber(0))
		default:
			L.ArgError(1, "invalid option '"+opt+"'")
		}
		return 1
	})
	set("gcinfo", func(L *lua.LState) int {
		L.Push(lua.LNumber(s.e.Stats().LuaBytes / 1024))
		return 1
	})
	next := func(L *lua.LState) int {
		t, ok := s.unwrap(L.CheckAny(1)).(*lua.LTable)
		if !ok {
			L.TypeError(1, lua.LTTable)
		}
		k, v := t.Next(L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(v)
		return 2
	}
	nextFn := L.NewFunction(next)
	g.RawSetString("next", nextFn)
	set("pairs", func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(nextFn)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	})
	inext := L.NewFunction(func(L *lua.LState) int {
		t := s.unwrap(L.CheckTable(1)).(*lua.LTable)
		i := L.CheckInt(2) + 1
		v := t.RawGetInt(i)
		if v == lua.LNil {
			return 0
		}
		L.Push(lua.LNumber(i))
		L.Push(v)
		return 2
	})
	set("ipairs", func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(inext)
		L.Push(t)
		L.Push(lua.LNumber(0))
		return 3
	})
	set("rawget", func(L *lua.LState) int {
		t := s.unwrap(L.CheckTable(1)).(*lua.LTable)
		L.Push(t.RawGet(L.CheckAny(2)))
		return 1
	})
	rawset := orig("rawset")
	set("rawset", func(L *lua.LState) int {
		if s.protected(L.CheckTable(1)) {
			readonlyError(L)
		}
		return rawset(L)
	})
	setmt := orig("setmetatable")
	set("setmetatable", func(L *lua.LState) int {
		if s.protected(L.Get(1)) {
			readonlyError(L)
		}
		return setmt(L)
	})
	set("error", func(L *lua.LState) int {
		// Lua 5.1's error: any value (nil too); a string or number message gets the position.
		obj := L.Get(1)
		level := L.OptInt(2, 1)
		if n, ok := obj.(lua.LNumber); ok {
			obj = lua.LString(formatNumber(float64(n)))
		}
		L.Error(obj, level)
		return 0
	})
	getmt := orig("getmetatable")
	set("getmetatable", func(L *lua.LState) int {
		n := getmt(L)
		if t, ok := L.Get(-1).(*lua.LTable); ok && s.protected(t) {
			L.Replace(-1, s.protect(t))
		}
		return n
	})
}

// readonlyError raises Redis's error for a write to a protected table from a library function:
// without a position, as Lua's C API raises it.
func readonlyError(L *lua.LState) {
	L.Error(lua.LString(errReadonly), 0)
}

// fixLibraries replaces the library functions that differ from Lua 5.1's in ways scripts see
// (string.format, tostring's number format), that could exhaust memory in one step
// (string.rep), or that could write to a protected table (table.*), and sets math.random to
// Redis's generator.
func (s *state) fixLibraries() {
	L, g := s.L, s.realG
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("format", L.NewFunction(strFormat))
	str.RawSetString("rep", L.NewFunction(s.strRep))
	tbl := g.RawGetString("table").(*lua.LTable)
	for _, name := range []string{"insert", "remove", "sort"} {
		orig := tbl.RawGetString(name).(*lua.LFunction).GFunction
		tbl.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if s.protected(L.Get(1)) {
				readonlyError(L)
			}
			return orig(L)
		}))
	}
	// gopher-lua's table.concat returns a table's only element as it is, so that a number stays
	// a number (and reaches the client as an integer); Lua's returns a string whatever it holds.
	concat := tbl.RawGetString("concat").(*lua.LFunction).GFunction
	tbl.RawSetString("concat", L.NewFunction(func(L *lua.LState) int {
		n := concat(L)
		if v, ok := L.Get(-1).(lua.LNumber); ok {
			L.Pop(1)
			L.Push(lua.LString(lua.LVAsString(v)))
		}
		return n
	}))
	// Lua 5.1's compatibility functions, which Redis's Lua has.
	tbl.RawSetString("foreach", L.NewFunction(func(L *lua.LState) int {
		t := s.unwrap(L.CheckTable(1)).(*lua.LTable)
		fn := L.CheckFunction(2)
		for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
			L.Push(fn)
			L.Push(k)
			L.Push(v)
			L.Call(2, 1)
			if r := L.Get(-1); r != lua.LNil {
				return 1
			}
			L.Pop(1)
		}
		return 0
	}))
	tbl.RawSetString("foreachi", L.NewFunction(func(L *lua.LState) int {
		t := s.unwrap(L.CheckTable(1)).(*lua.LTable)
		fn := L.CheckFunction(2)
		for i := 1; i <= t.Len(); i++ {
			L.Push(fn)
			L.Push(lua.LNumber(i))
			L.Push(t.RawGetInt(i))
			L.Call(2, 1)
			if r := L.Get(-1); r != lua.LNil {
				return 1
			}
			L.Pop(1)
		}
		return 0
	}))
	tbl.RawSetString("setn", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("'setn' is obsolete")
		return 0
	}))
	str.RawSetString("gfind", str.RawGetString("gmatch"))
	str.RawSetString("dump", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("unable to dump given function")
		return 0
	}))
	m := g.RawGetString("math").(*lua.LTable)
	m.RawSetString("huge", lua.LNumber(math.Inf(1)))
	m.RawSetString("mod", m.RawGetString("fmod"))
	m.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		r := float64(s.e.rng.next()%rand48Max) / float64(rand48Max)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(r))
		case 1:
			u := L.CheckInt(1)
			if u < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
		case 2:
			l, u := L.CheckInt(1), L.CheckInt(2)
			if l > u {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	m.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		s.e.rng.seed(int32(L.CheckInt(1)))
		return 0
	}))
}

// strRep is string.rep, refused when the result would not fit what a script may allocate.
func (s *state) strRep(L *lua.LState) int {
	str := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || len(str) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(str))*int64(n) > s.e.allocLimit() {
		L.RaiseError("not enough memory")
	}
	b := make([]byte, 0, len(str)*n)
	for range n {
		b = append(b, str...)
	}
	L.Push(lua.LString(b))
	return 1
}

// luaToString converts a value to a string as Lua 5.1's tostring does without a __tostring
// metamethod.
func luaToString(v lua.LValue) string {
	switch x := v.(type) {
	case lua.LNumber:
		return formatNumber(float64(x))
	case lua.LString:
		return string(x)
	}
	return v.String()
}

func isStringy(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// luaToNumber is Lua 5.1's tonumber.
func luaToNumber(L *lua.LState) int {
	base := L.OptInt(2, 10)
	if base == 10 {
		switch v := L.CheckAny(1).(type) {
		case lua.LNumber:
			L.Push(v)
			return 1
		case lua.LString:
			if n, ok := parseNumber(string(v)); ok {
				L.Push(lua.LNumber(n))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	str := L.CheckString(1)
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	n, rest, ok := strtoul(str, base)
	if ok {
		for len(rest) > 0 && isSpace(rest[0]) {
			rest = rest[1:]
		}
		if rest == "" {
			L.Push(lua.LNumber(float64(n)))
			return 1
		}
	}
	L.Push(lua.LNil)
	return 1
}
