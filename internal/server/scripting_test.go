package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

// scriptingDeviation returns the reply bloomd gives instead of the recorded one, from a
// block's "bloomd: <reply line>" note (with the reason in a "why: ..." note), or nil.
func scriptingDeviation(t *testing.T, b block) []byte {
	t.Helper()
	var reply, why string
	for _, n := range b.notes {
		if r, ok := strings.CutPrefix(n, "bloomd: "); ok {
			reply = r
		}
		if w, ok := strings.CutPrefix(n, "why: "); ok {
			why = w
		}
	}
	if reply == "" {
		return nil
	}
	if why == "" {
		t.Fatalf("%s:%d: a 'bloomd:' note needs a 'why:' note", b.file, b.line)
	}
	return []byte(reply + "\r\n")
}

// TestScriptingTranscripts replays testdata/scripting/*.txt, sessions recorded from a real
// redis-server 7.0.15, against redis-server (when installed; -record rewrites the replies from
// it) and against bloomd, in every I/O mode, requiring the recorded bytes except where a
// "bloomd:" note gives bloomd's reply and says why it differs. HELLO's reply, which names the
// server, is compared loosely. bloomd's journal of each session is then replayed into a fresh
// server, which must hold the same keys: scripts' writes are journaled as their effects.
func TestScriptingTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripting/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no transcripts", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		blocks := readTranscript(t, path)
		t.Run(name+"/redis-server", func(t *testing.T) {
			rs := redistest.New(t, nil)
			c := dial(t, rs.Addr)
			changed := false
			for i, b := range blocks {
				c.send(b.args...)
				got, v := c.read()
				if isHello(b) {
					if v.IsError() {
						t.Errorf("%s:%d: %s: %v", name, b.line, b.cmd, v)
					}
					continue
				}
				if *record {
					if !bytes.Equal(got, b.reply) {
						blocks[i].reply, blocks[i].replyTx, changed = got, formatReply(got), true
					}
					continue
				}
				if !bytes.Equal(got, b.reply) {
					t.Errorf("%s:%d: > %s\nredis-server:\n%s\ntranscript:\n%s", name, b.line, b.cmd, formatReply(got), b.replyTx)
				}
			}
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
		forEachIOMode(t, func(t *testing.T) {
			j := &recordingJournal{}
			s := startServer(t, func(cfg *Config) { cfg.Journal = j })
			c := dial(t, s.addr())
			for _, b := range blocks {
				c.send(b.args...)
				got, v := c.read()
				if isHello(b) {
					if v.IsError() {
						t.Errorf("%s:%d: %s: %v", name, b.line, b.cmd, v)
					}
					continue
				}
				want := b.reply
				if d := scriptingDeviation(t, b); d != nil {
					if bytes.Equal(d, b.reply) {
						t.Errorf("%s:%d: the 'bloomd:' note equals the recorded reply", name, b.line)
					}
					want = d
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s:%d: > %s\ngot:\n%s\nwant:\n%s", name, b.line, b.cmd, formatReply(got), formatReply(want))
				}
			}
			compareStates(t, name, state(t, s), state(t, replay(t, j.snapshot())))
		})
	}
}

func isHello(b block) bool { return len(b.args) > 0 && strings.EqualFold(string(b.args[0]), "hello") }

// TestRecordScriptingBF records testdata/redisbloom/resp2-scripting.txt from redis-server with
// the RedisBloom module named by REDISBLOOM_SO (with -record; without it, the replies are
// only compared). TestRedisBloomTranscripts replays the file against bloomd, so CI checks the
// same facts without the module.
//
//	REDISBLOOM_SO=/path/to/redisbloom.so go test ./internal/server -run TestRecordScriptingBF -record
func TestRecordScriptingBF(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Skip("REDISBLOOM_SO is not set: not recording the scripting transcript from RedisBloom")
	}
	path := "testdata/redisbloom/resp2-scripting.txt"
	blocks := readTranscript(t, path)
	srv := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so, "--save", "", "--appendonly", "no"}})
	c := dial(t, srv.Addr)
	changed := false
	for i, b := range blocks {
		c.send(b.args...)
		got, _ := c.read()
		if isHello(b) || bytes.Equal(got, b.reply) {
			continue
		}
		if !*record {
			t.Errorf("%s:%d: > %s\nRedisBloom:\n%s\nrecorded:\n%s", path, b.line, b.cmd, formatReply(got), b.replyTx)
			continue
		}
		blocks[i].reply, blocks[i].replyTx, changed = got, formatReply(got), true
	}
	if changed {
		if err := os.WriteFile(path, formatTranscript(blocks, path), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
