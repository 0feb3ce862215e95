package server

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUpgradeBehindBusyScript: a command that must run alone midway (BF.LOADCHUNK over an
// existing filter; BF.ADD, HSET and SETNX over a key whose time has passed) leaves the gate to
// ask for it. A script that takes the gate in that instant and passes busy-reply-threshold does
// not hold the command up: the command is answered -BUSY, as one arriving then is, counted as
// refused, and has changed nothing; the command's event loop serves other clients (SCRIPT KILL
// is sent on the same loop). upgradeHook makes the interleaving certain: in the instant the
// command has left the gate, it starts the script on another connection (another event loop)
// and returns once the script is declared busy.
func TestUpgradeBehindBusyScript(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		for _, tc := range []struct {
			name, cmd string
			setup     func(t *testing.T, s *Server, c *rawClient) [][]byte // returns the command
		}{
			{"bf.loadchunk", "bf.loadchunk", func(t *testing.T, s *Server, c *rawClient) [][]byte {
				c.do("BF.RESERVE", "other", "0.01", "1000")
				c.do("BF.ADD", "other", "x")
				c.do("BF.SCANDUMP", "other", "0") // the header
				v := c.do("BF.SCANDUMP", "other", "1")
				return [][]byte{[]byte("BF.LOADCHUNK"), []byte("k"), []byte(v.Elems[0].Text()), []byte(v.Elems[1].Text())}
			}},
			{"bf.add over an expired key", "bf.add", func(t *testing.T, s *Server, c *rawClient) [][]byte {
				expireUnseen(t, s)
				return [][]byte{[]byte("BF.ADD"), []byte("k"), []byte("new")}
			}},
			{"hset over an expired key", "hset", func(t *testing.T, s *Server, c *rawClient) [][]byte {
				expireUnseen(t, s)
				return [][]byte{[]byte("HSET"), []byte("k"), []byte("f"), []byte("v")}
			}},
			{"setnx over an expired key", "setnx", func(t *testing.T, s *Server, c *rawClient) [][]byte {
				expireUnseen(t, s)
				return [][]byte{[]byte("SETNX"), []byte("k"), []byte("v")}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := startServer(t, func(c *Config) {
					if testLoops >= 0 {
						c.EventLoops = 2
					}
				})
				// Connections go to the loops in turn: a and killer share one, script the other.
				a, script, killer := dial(t, s.addr()), dial(t, s.addr()), dial(t, s.addr())
				a.do("CONFIG", "SET", "busy-reply-threshold", "20")
				a.do("BF.RESERVE", "k", "0.01", "1000")
				a.do("BF.ADD", "k", "a")
				cmd := tc.setup(t, s, a)
				before := dumpAll(t, a, "k")

				var once sync.Once
				hook := func() {
					once.Do(func() {
						script.send([]byte("EVAL"), []byte("while true do end"), []byte("0"))
						deadline := time.Now().Add(10 * time.Second)
						for !s.gate.busy.Load() && time.Now().Before(deadline) {
							time.Sleep(time.Millisecond)
						}
					})
				}
				upgradeHook.Store(&hook)
				defer upgradeHook.Store(nil)

				a.send(cmd...)
				_, v := a.read()
				if !v.IsError() || !strings.HasPrefix(v.Text(), "BUSY ") {
					t.Errorf("%s behind a busy script: %v; want -BUSY", cmd[0], v)
				}
				if v := killer.do("SCRIPT", "KILL"); v.Text() != "OK" {
					t.Fatalf("SCRIPT KILL: %v", v)
				}
				if _, v := script.read(); !strings.Contains(v.Text(), "Script killed by user with SCRIPT KILL") {
					t.Fatalf("the killed script's reply: %v", v)
				}
				upgradeHook.Store(nil)
				if after := dumpAll(t, a, "k"); !bytes.Equal(after, before) {
					t.Errorf("%s refused -BUSY changed the key", cmd[0])
				}
				info := a.do("INFO", "commandstats").Text()
				if !strings.Contains(info, "cmdstat_"+tc.cmd+":calls=") || !strings.Contains(info[strings.Index(info, "cmdstat_"+tc.cmd+":"):], "rejected_calls=1,") {
					t.Errorf("%s's refusal is not counted as rejected:\n%s", tc.cmd, info)
				}
				// The server goes on: the command now runs.
				if v := a.do(bytesToStrings(cmd)...); v.IsError() {
					t.Errorf("%s after the script: %v", cmd[0], v)
				}
			})
		}
	})
}

// expireUnseen gives key k an expiry time in the past without telling active expiry, so that
// the key stays until a command finds it (Redis's lazy expiry).
func expireUnseen(t *testing.T, s *Server) {
	t.Helper()
	e := s.ks.lookup([]byte("k"))
	if e == nil {
		t.Fatal("no key k")
	}
	e.expire.Store(1)
}

// dumpAll returns every BF.SCANDUMP chunk of key, with its type, as one byte string; for a key
// that is not a filter, its type.
func dumpAll(t *testing.T, c *rawClient, key string) []byte {
	t.Helper()
	var out []byte
	typ := c.do("TYPE", key).Text()
	out = append(out, typ...)
	if typ != "MBbloom--" {
		return out
	}
	it := "0"
	for range 1000 {
		v := c.do("BF.SCANDUMP", key, it)
		if v.IsError() || len(v.Elems) != 2 {
			t.Fatalf("BF.SCANDUMP %s %s: %v", key, it, v)
		}
		it = v.Elems[0].Text()
		if it == "0" {
			return out
		}
		out = append(out, v.Elems[1].Text()...)
	}
	t.Fatal("BF.SCANDUMP did not end")
	return nil
}

func bytesToStrings(b [][]byte) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = string(x)
	}
	return out
}
