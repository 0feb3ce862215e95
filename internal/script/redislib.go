package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The redis table, as Redis 7.0 registers it (script_lua.c, eval.c).

func (s *state) openRedis() *lua.LTable {
	L := s.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return s.redisCall(L, true) },
		"pcall":              func(L *lua.LState) int { return s.redisCall(L, false) },
		"log":                s.redisLog,
		"setresp":            s.redisSetResp,
		"sha1hex":            redisSHA1Hex,
		"error_reply":        redisErrorReply,
		"status_reply":       redisStatusReply,
		"set_repl":           s.redisSetRepl,
		"acl_check_cmd":      s.redisACLCheck,
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]float64{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(s.e.opts.Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(s.e.opts.VersionNum))
	return t
}

// errorTable makes the table Redis's luaPushErrorBuff makes of an error text: {err="CODE
// message"}, the code taken from a leading "-CODE " or "ERR" when there is none, trailing CR
// and LF trimmed.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	code := "ERR"
	if rest, ok := strings.CutPrefix(msg, "-"); ok {
		if c, m, found := strings.Cut(rest, " "); found {
			code, msg = c, m
		} else {
			msg = rest
		}
	}
	msg = strings.TrimRight(strings.TrimLeft(msg, "\r\n"), "\r\n")
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}

// raise raises an error table, as lua_error does: no position is added.
func raise(L *lua.LState, t *lua.LTable) int {
	L.Error(t, 0)
	return 0
}

// argv converts redis.call's arguments as Redis's luaArgsToRedisArgv: strings as they are,
// numbers as "%.17g"; anything else is an error.
func argv(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(v)
		case lua.LNumber:
			args[i-1] = []byte(formatArg(float64(v)))
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	return args, ""
}

func (s *state) redisCall(L *lua.LState, raiseErr bool) int {
	r := s.run
	if r == nil {
		return raise(L, errorTable(L, "redis.call/pcall can only be called inside a script invocation"))
	}
	args, bad := argv(L)
	L.SetTop(0)
	if bad != "" {
		t := errorTable(L, bad)
		if raiseErr {
			return raise(L, t)
		}
		L.Push(t)
		return 1
	}
	reply, refused := r.req.Host.Call(args, r.proto)
	if refused != "" {
		t := errorTable(L, "-"+refused)
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		if raiseErr {
			return raise(L, t)
		}
		L.Push(t)
		return 1
	}
	v, _ := s.fromRESP(reply, 0)
	if raiseErr && len(reply) > 0 && reply[0] == '-' {
		return raise(L, v.(*lua.LTable))
	}
	L.Push(v)
	return 1
}

func (s *state) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		return raise(L, errorTable(L, "redis.log() requires two arguments or more."))
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		if str, isStr := L.Get(1).(lua.LString); isStr {
			f, valid := parseNumber(string(str))
			lv, ok = lua.LNumber(f), valid
		}
	}
	if !ok {
		return raise(L, errorTable(L, "First argument must be a number (log level)."))
	}
	level := int(lv)
	if level < 0 || level > 3 {
		return raise(L, errorTable(L, "Invalid debug level."))
	}
	if s.e.opts.LogLevel != nil && level < s.e.opts.LogLevel() {
		return 0
	}
	var b strings.Builder
	first := true
	for i := 2; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString, lua.LNumber:
			if !first {
				b.WriteByte(' ')
			}
			first = false
			b.WriteString(luaToString(v))
		}
	}
	if r := s.run; r != nil {
		r.req.Host.Log(level, b.String())
	}
	return 0
}

func (s *state) redisSetResp(L *lua.LState) int {
	r := s.run
	if r == nil {
		return raise(L, errorTable(L, "redis.setresp can only be called inside a script invocation"))
	}
	if L.GetTop() != 1 {
		return raise(L, errorTable(L, "redis.setresp() requires one argument."))
	}
	p := int(luaNumber(L.Get(1)))
	if p != 2 && p != 3 {
		return raise(L, errorTable(L, "RESP version must be 2 or 3."))
	}
	r.proto = p
	return 0
}

// redisSetRepl checks its argument as Redis does and otherwise does nothing: bloomd always
// journals and replicates a script's effects (see doc.go).
func (s *state) redisSetRepl(L *lua.LState) int {
	if s.run == nil {
		return raise(L, errorTable(L, "redis.set_repl can only be called inside a script invocation"))
	}
	if L.GetTop() != 1 {
		return raise(L, errorTable(L, "redis.set_repl() requires two arguments."))
	}
	if int(luaNumber(L.Get(1)))&^3 != 0 {
		return raise(L, errorTable(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."))
	}
	return 0
}

func (s *state) redisACLCheck(L *lua.LState) int {
	r := s.run
	if r == nil {
		return raise(L, errorTable(L, "redis.acl_check_cmd can only be called inside a script invocation"))
	}
	args, bad := argv(L)
	if bad != "" {
		return raise(L, errorTable(L, bad))
	}
	allowed, known := r.req.Host.CheckACL(args)
	if !known {
		return raise(L, errorTable(L, "Invalid command passed to redis.acl_check_cmd()"))
	}
	L.Push(lua.LBool(allowed))
	return 1
}

// luaNumber is lua_tonumber: a number, a string that converts, or 0.
func luaNumber(v lua.LValue) float64 {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		if f, ok := parseNumber(string(x)); ok {
			return f
		}
	}
	return 0
}

func redisSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		return raise(L, errorTable(L, "wrong number of arguments"))
	}
	var b []byte
	switch v := L.Get(1).(type) {
	case lua.LString:
		b = []byte(v)
	case lua.LNumber:
		b = []byte(formatNumber(float64(v)))
	}
	L.Push(lua.LString(SHA1Hex(b)))
	return 1
}

func redisErrorReply(L *lua.LState) int {
	v, ok := L.Get(-1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	msg := string(v)
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func redisStatusReply(L *lua.LState) int {
	v, ok := L.Get(-1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", v)
	L.Push(t)
	return 1
}
