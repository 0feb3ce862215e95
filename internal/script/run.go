package script

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// call runs r's script in the interpreter and returns its reply, or an error reply's text.
func (s *state) call(r *run) ([]byte, string) {
	L := s.L
	s.run = r
	L.SetContext(r.ctx)
	defer func() {
		L.RemoveContext()
		L.SetTop(0)
		s.realG.RawSetString("KEYS", lua.LNil)
		s.realG.RawSetString("ARGV", lua.LNil)
		s.run = nil
	}()
	s.realG.RawSetString("KEYS", s.array(r.req.Keys))
	s.realG.RawSetString("ARGV", s.array(r.req.Args))
	fn := L.NewFunctionFromProto(r.req.Script.proto)
	fn.Env = s.proxyG
	L.Push(fn)
	if err := L.PCall(0, 1, s.handler); err != nil {
		var obj lua.LValue = lua.LNil
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		return nil, s.errorReply(obj)
	}
	return toRESP(nil, L.Get(-1), r.req.Proto, r.proto, 0), ""
}

func (s *state) array(items [][]byte) *lua.LTable {
	t := s.L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

// errorHandler is Redis's __redis__err__handler: it turns what a script raised into the error
// table {err=..., source=..., line=...}, the position being the function that raised it, or
// the one that called it when it is a library function (redis.call, error).
func (s *state) errorHandler(L *lua.LState) int {
	obj := L.Get(1)
	var t *lua.LTable
	if r := s.run; r != nil && r.why.Load() != nil {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", lua.LString("ERR "+*r.why.Load()))
	} else if tt, ok := obj.(*lua.LTable); ok {
		t = tt
	} else {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", lua.LString("ERR "+luaMessage(luaToString(obj))))
	}
	if d, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("Sl", d, lua.LNil); err == nil && d.What == "G" {
			d, ok = L.GetStack(2)
			if ok {
				_, err = L.GetInfo("Sl", d, lua.LNil)
				ok = err == nil
			}
		}
		if ok && d.CurrentLine >= 0 {
			src := d.Source
			if src == chunkName {
				src = "@" + src
			}
			t.RawSetString("source", lua.LString(src))
			t.RawSetString("line", lua.LNumber(d.CurrentLine))
		}
	}
	L.Push(t)
	return 1
}

// errorReply words the error a script ended with as Redis's luaCallFunction: "MESSAGE script:
// SHA, on SOURCE:LINE.".
func (s *state) errorReply(obj lua.LValue) string {
	t, ok := obj.(*lua.LTable)
	if !ok {
		if isStringy(obj) {
			return "ERR Error running script " + s.run.sha + ", " + truncate(luaToString(obj), 100)
		}
		return "ERR Error running script " + s.run.sha + ", execution failure"
	}
	msg := "ERR Error running script: the error object has no 'err' field"
	if m := t.RawGetString("err"); isStringy(m) {
		msg = cstr([]byte(luaToString(m)))
	}
	src, line := t.RawGetString("source"), t.RawGetString("line")
	if isStringy(src) && isStringy(line) {
		msg += " script: " + s.run.sha + ", on " + cstr([]byte(luaToString(src))) + ":" + luaToString(line) + "."
	}
	return msg
}

// luaMessage words the errors of gopher-lua's VM that have a Lua 5.1 equivalent as Lua 5.1
// does when it cannot name the variable involved: "attempt to perform arithmetic on a nil
// value", "attempt to concatenate a table value", "attempt to index a nil value", "attempt to
// compare two table values", and argument errors with the function's name quoted.
func luaMessage(msg string) string {
	msg = quoteArgError(msg)
	pos, rest := "", msg
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, chunkName+":") {
		pos, rest = msg[:i+2], msg[i+2:]
	}
	var a, b, op string
	if n, _ := fmt.Sscanf(rest, "cannot perform %s operation between %s and %s", &op, &a, &b); n == 3 {
		bad := a
		if a == "number" || a == "string" && op != "concat" {
			bad = b
		}
		if op == "concat" {
			if a == "number" || a == "string" {
				bad = b
			}
			return pos + "attempt to concatenate a " + bad + " value"
		}
		return pos + "attempt to perform arithmetic on a " + bad + " value"
	}
	if t, ok := strings.CutPrefix(rest, "attempt to index a non-table object("); ok {
		if i := strings.IndexByte(t, ')'); i > 0 {
			return pos + "attempt to index a " + t[:i] + " value"
		}
	}
	if n, _ := fmt.Sscanf(rest, "attempt to compare %s with %s", &a, &b); n == 2 && a == b {
		return pos + "attempt to compare two " + a + " values"
	}
	return msg
}

// quoteArgError words gopher-lua's argument errors as Lua 5.1's luaL_argerror: "bad argument
// #2 to 'format' (...)" rather than "... to format (...)".
func quoteArgError(msg string) string {
	i := strings.Index(msg, "bad argument #")
	if i < 0 {
		return msg
	}
	rest := msg[i+len("bad argument #"):]
	j := strings.Index(rest, " to ")
	if j < 0 {
		return msg
	}
	name := rest[j+4:]
	k := strings.Index(name, " (")
	if k <= 0 || strings.HasPrefix(name, "'") {
		return msg
	}
	fn := name[:k]
	if fn == "(anonymous)" {
		fn = "?"
	}
	return msg[:i] + "bad argument #" + rest[:j] + " to '" + fn + "'" + name[k:]
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
