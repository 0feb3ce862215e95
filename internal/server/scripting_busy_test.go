package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// untilBusy sends PING on c until the server answers -BUSY (a script passed
// busy-reply-threshold), for at most 10 seconds, and returns that reply.
func untilBusy(t *testing.T, c *rawClient) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if v := c.do("PING"); v.IsError() {
			return v.Text()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no -BUSY within 10 seconds")
	return ""
}

// busySession runs scripts that loop forever on one connection and looks at them from
// another: what the others get while a script runs past busy-reply-threshold, SCRIPT KILL
// of a script that has not written (even one that catches errors with pcall), and of one that
// has. It returns every reply, in order, for comparison between servers.
func busySession(t *testing.T, addr string) []string {
	a, b := dial(t, addr), dial(t, addr)
	var log []string
	note := func(what string, v resp.Value) { log = append(log, what+" -> "+v.String()) }
	note("config", b.do("CONFIG", "SET", "busy-reply-threshold", "100"))
	note("config get", b.do("CONFIG", "GET", "lua-time-limit"))

	for _, body := range []string{
		"while true do end",
		"while true do pcall(function() while true do end end) end",
		"local t = 0 while true do t = t + 1 end",
	} {
		a.send([]byte("EVAL"), []byte(body), []byte("0"))
		log = append(log, "busy: "+untilBusy(t, b))
		note("get", b.do("GET", "k"))
		note("multi", b.do("MULTI"))
		note("queued get", b.do("GET", "k"))
		note("exec", b.do("EXEC"))
		note("script flush", b.do("SCRIPT", "FLUSH"))
		note("shutdown", b.do("SHUTDOWN"))
		note("script kill", b.do("SCRIPT", "KILL"))
		_, v := a.read()
		note("killed", v)
		note("ping after", b.do("PING"))
		note("script kill again", b.do("SCRIPT", "KILL"))
	}
	// A script that wrote cannot be killed.
	a.send([]byte("EVAL"), []byte("redis.call('set', KEYS[1], 'v') local i = 0 while i < 1e12 do i = i + 1 end"), []byte("1"), []byte("w"))
	log = append(log, "busy: "+untilBusy(t, b))
	note("unkillable", b.do("SCRIPT", "KILL"))
	return log
}

// TestScriptBusy compares bloomd with redis-server 7.0 while scripts run past
// busy-reply-threshold: the -BUSY replies, what is still answered, SCRIPT KILL and its errors;
// bloomd in every I/O mode (with one event loop, the killer shares the loop of the script's
// client). The unkillable script is then stopped: redis-server by SHUTDOWN NOSAVE, bloomd the
// same way, and its write is not journaled.
func TestScriptBusy(t *testing.T) {
	rs := redistest.New(t, nil)
	want := busySession(t, rs.Addr)
	c := dial(t, rs.Addr)
	c.send([]byte("SHUTDOWN"), []byte("NOSAVE"))
	forEachIOMode(t, func(t *testing.T) {
		j := &recordingJournal{}
		s := startServer(t, func(c *Config) {
			c.Journal = j
			if testLoops >= 0 {
				c.EventLoops = 1 // the killer and the script's client share the loop
			}
		})
		got := busySession(t, s.addr())
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("bloomd:\n%s\nredis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		c := dial(t, s.addr())
		c.send([]byte("SHUTDOWN"), []byte("NOSAVE"))
		select {
		case save := <-s.ShutdownRequested():
			if save {
				t.Error("SHUTDOWN NOSAVE asked for a snapshot")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("SHUTDOWN NOSAVE did not reach Run")
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.scripts.Running() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if s.scripts.Running() {
			t.Fatal("the script still runs after SHUTDOWN NOSAVE")
		}
		for _, r := range j.snapshot() {
			if fmt.Sprintf("%q", r) == `["set" "w" "v"]` || strings.EqualFold(string(r[0]), "set") {
				t.Errorf("the write of the script stopped by SHUTDOWN NOSAVE was journaled: %q", r)
			}
		}
	})
}

// TestScriptMemoryBound runs scripts that allocate without end under a 160 MiB memory limit
// (a fake cgroup): each is stopped with an error once it grows the heap by more than the
// limit leaves, and the server goes on serving.
func TestScriptMemoryBound(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MemoryProbe = fakeCgroup(t, 160<<20, 16<<20) })
	c := dial(t, s.addr())
	for _, body := range []string{
		"local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 1000) .. i end",
		"local s = 'x' while true do s = s .. s end",
		"return string.rep('x', 1e12)",
	} {
		v := c.do("EVAL", body, "0")
		t.Logf("%s: %v", body, v)
		if !v.IsError() || !strings.Contains(v.Text(), "memory") {
			t.Errorf("%s: %v", body, v)
		}
	}
	if v := c.do("PING"); v.Text() != "PONG" {
		t.Fatal(v)
	}
}

// TestScriptEffectsReplicate: a script's writes reach a bloomd replica as the commands it ran
// (WAIT 1 counts them), the replica refuses a script that declares writes and runs the
// commands of a no-writes one, as a Redis 7.0 replica does, and the stream waits for a busy
// script on the replica instead of being refused.
func TestScriptEffectsReplicate(t *testing.T) {
	ps := startServer(t, func(c *Config) { c.Dir = t.TempDir() })
	rs := startServer(t, func(c *Config) { c.Dir = t.TempDir() })
	p, r := dial(t, ps.addr()), dial(t, rs.addr())
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatal(v)
	}
	waitSynced(t, p, r)
	if v := p.do("EVAL", "redis.call('BF.ADD', KEYS[1], 'a') redis.call('SET', KEYS[2], 'v') return redis.call('BF.ADD', KEYS[1], 'b')", "2", "f", "s"); v.Int != 1 {
		t.Fatal(v)
	}
	if v := p.do("WAIT", "1", "5000"); v.Int != 1 {
		t.Fatalf("WAIT 1: %v", v)
	}
	for _, c := range []*rawClient{p, r} {
		if v := c.do("BF.MEXISTS", "f", "a", "b", "z"); v.String() != "[(integer) 1, (integer) 1, (integer) 0]" {
			t.Errorf("BF.MEXISTS: %v", v)
		}
		if v := c.do("GET", "s"); v.Text() != "v" {
			t.Errorf("GET: %v", v)
		}
	}
	if v := r.do("EVAL", "#!lua\nreturn 1", "0"); v.Text() != "READONLY Can not run script with write flag on readonly replica" {
		t.Errorf("a write script on the replica: %v", v)
	}
	if v := r.do("EVAL", "return redis.call('SET', 'x', 'y')", "0"); !strings.HasPrefix(v.Text(), "READONLY You can't write against a read only replica. script: ") {
		t.Errorf("a write from a script on the replica: %v", v)
	}
	if v := r.do("EVAL", "#!lua flags=no-writes\nreturn redis.call('BF.EXISTS', KEYS[1], 'a')", "1", "f"); v.Int != 1 {
		t.Errorf("a read-only script on the replica: %v", v)
	}

	// The primary's stream waits for a busy script on the replica, rather than being refused.
	r.do("CONFIG", "SET", "busy-reply-threshold", "50")
	a := dial(t, rs.addr())
	a.send([]byte("EVAL"), []byte("#!lua flags=no-writes\nwhile true do end"), []byte("0"))
	untilBusy(t, r)
	p.do("SET", "during", "busy")
	p.do("BF.ADD", "f", "c")
	if v := r.do("SCRIPT", "KILL"); v.Text() != "OK" {
		t.Fatal(v)
	}
	a.read()
	waitSynced(t, p, r)
	if v := r.do("GET", "during"); v.Text() != "busy" {
		t.Errorf("a write of the primary during the replica's busy script: %v", v)
	}
	if v := r.do("BF.EXISTS", "f", "c"); v.Int != 1 {
		t.Errorf("an add of the primary during the replica's busy script: %v", v)
	}

}

// TestScriptInfo: INFO memory's scripting fields, INFO commandstats, COMMAND DOCS and the two
// names of busy-reply-threshold, on bloomd and on redis-server 7.0.
func TestScriptInfo(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	for name, addr := range map[string]string{"redis-server": rs.Addr, "bloomd": s.addr()} {
		c := dial(t, addr)
		c.do("SCRIPT", "LOAD", "return 1")
		c.do("EVAL", "return 2", "0")
		mem := c.do("INFO", "memory").Text()
		for _, f := range []string{"used_memory_lua:", "used_memory_vm_eval:", "used_memory_lua_human:", "used_memory_scripts_eval:",
			"number_of_cached_scripts:2\r\n", "used_memory_scripts:", "used_memory_scripts_human:"} {
			if !strings.Contains(mem, f) {
				t.Errorf("%s: INFO memory lacks %q", name, f)
			}
		}
		if st := c.do("INFO", "commandstats").Text(); !strings.Contains(st, "cmdstat_eval:calls=1,") {
			t.Errorf("%s: INFO commandstats: %s", name, st)
		}
		if d := c.do("COMMAND", "DOCS", "eval").String(); !strings.Contains(d, `"group", "scripting"`) {
			t.Errorf("%s: COMMAND DOCS eval: %s", name, d)
		}
		c.do("CONFIG", "SET", "lua-time-limit", "1234")
		if v := c.do("CONFIG", "GET", "busy-reply-threshold").String(); v != `["busy-reply-threshold", "1234"]` {
			t.Errorf("%s: CONFIG GET busy-reply-threshold after SET lua-time-limit: %s", name, v)
		}
	}
}
