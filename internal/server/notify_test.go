package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// TestNotifyTranscripts replays testdata/notify-*.txt, keyspace notifications, against a real
// redis-server 7.0 and against bloomd. Each block's command runs on one connection; its expected
// reply is that connection's reply followed by every message a second connection, subscribed
// with PSUBSCRIBE *, received because of it. To know where a command's messages end, the first
// connection then publishes on the channel "sync", whose message the subscriber reads last:
// both servers deliver a subscriber's messages in the order they were published. Blocks marked
// bloomd-only (the filters' events) run against bloomd only; with -record the others' replies
// are rewritten from redis-server.
func TestNotifyTranscripts(t *testing.T) { forEachIOMode(t, testNotifyTranscripts) }

func testNotifyTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/notify-*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no transcripts", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		blocks := readTranscript(t, path)
		settings := serverSettings(blocks)
		t.Run(name+"/redis-server", func(t *testing.T) {
			opts := &redistest.Options{}
			for _, kv := range settings {
				opts.Args = append(opts.Args, "--"+kv[0], kv[1])
			}
			rs := redistest.New(t, opts)
			changed := false
			playNotify(t, rs.Addr, blocks, false, func(i int, got []byte) {
				b := blocks[i]
				if *record {
					if !bytes.Equal(got, b.reply) {
						blocks[i].reply, blocks[i].replyTx = got, formatReply(got)
						changed = true
					}
					return
				}
				if !bytes.Equal(got, b.reply) {
					t.Errorf("%s:%d: > %s\nredis-server:\n%s\ntranscript:\n%s", name, b.line, b.cmd, formatReply(got), b.replyTx)
				}
			})
			if changed {
				if err := os.WriteFile(path, formatTranscript(blocks, path), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("recorded %s", path)
			}
		})
		if *record {
			continue
		}
		t.Run(name+"/bloomd", func(t *testing.T) {
			s := startServer(t, func(cfg *Config) {
				for _, kv := range settings {
					if err := cfg.Set(kv[0], kv[1]); err != nil {
						t.Fatal(err)
					}
				}
			})
			playNotify(t, s.addr(), blocks, true, func(i int, got []byte) {
				if b := blocks[i]; !bytes.Equal(got, b.reply) {
					t.Errorf("%s:%d: > %s\ngot:\n%s\nwant:\n%s", name, b.line, b.cmd, formatReply(got), b.replyTx)
				}
			})
		})
	}
}

// playNotify runs blocks against addr and hands check each block's reply and messages.
func playNotify(t *testing.T, addr string, blocks []block, bloomd bool, check func(i int, got []byte)) {
	c, sub := dial(t, addr), dial(t, addr)
	sub.do("PSUBSCRIBE", "*")
	for i, b := range blocks {
		if bloomdOnly(b) && !bloomd {
			continue
		}
		c.send(b.args...)
		got, _ := c.read()
		c.do("PUBLISH", "sync", strconv.Itoa(i))
		got = append(got, readUntilSync(t, sub, strconv.Itoa(i))...)
		check(i, got)
	}
}

// readUntilSync returns the bytes of the messages sub receives before the "sync" message id.
func readUntilSync(t *testing.T, sub *rawClient, id string) []byte {
	t.Helper()
	var out []byte
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		raw, v := sub.read()
		if len(v.Elems) == 4 && v.Elems[2].Text() == "sync" {
			if v.Elems[3].Text() != id {
				t.Fatalf("sync message %q, want %q", v.Elems[3].Text(), id)
			}
			return out
		}
		out = append(out, raw...)
	}
	t.Fatal("no sync message")
	return nil
}

// TestNotifyExpired: a key whose time passes is published as "expired" (class x) when the
// server's active expiry removes it, by redis-server and by bloomd alike; with class g a DEL of
// it is "del", and with neither class nothing.
func TestNotifyExpired(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	for _, addr := range []string{rs.Addr, s.addr()} {
		c, sub := dial(t, addr), dial(t, addr)
		c.do("CONFIG", "SET", "notify-keyspace-events", "Ex")
		sub.do("PSUBSCRIBE", "__keyevent@0__:*")
		c.do("SET", "a", "v", "PX", "30")
		c.do("HSET", "b", "f", "v")
		c.do("PEXPIRE", "b", "30")
		c.do("SETBIT", "c", "7", "1")
		c.do("DEL", "c") // class g is off: no event
		got := map[string]bool{}
		for len(got) < 2 {
			_, v := sub.read()
			if len(v.Elems) != 4 || v.Elems[2].Text() != "__keyevent@0__:expired" {
				t.Fatalf("%s: unexpected message %v", addr, v)
			}
			got[v.Elems[3].Text()] = true
		}
		if !got["a"] || !got["b"] {
			t.Errorf("%s: expired %v", addr, got)
		}
	}
}
