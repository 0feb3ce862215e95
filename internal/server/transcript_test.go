package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// deviations reads testdata/deviations.txt: blocks whose notes say which recorded file they
// replace a reply in ("file: name.txt") and why ("why: ..."), with bloomd's reply.
func deviations(t *testing.T) map[string][]block {
	t.Helper()
	devs := map[string][]block{}
	for _, b := range readTranscript(t, "testdata/deviations.txt") {
		file, why := "", ""
		for _, n := range b.notes {
			if f, ok := strings.CutPrefix(n, "file: "); ok {
				file = f
			}
			if w, ok := strings.CutPrefix(n, "why: "); ok {
				why = w
			}
		}
		if file == "" || why == "" {
			t.Fatalf("deviations.txt:%d: a deviation needs a '# file:' and a '# why:' note", b.line)
		}
		devs[file] = append(devs[file], b)
	}
	return devs
}

// TestRedisBloomTranscripts replays every session recorded from RedisBloom 2.6.28 against a
// fresh bloomd (one connection per file, as recorded) and requires byte-identical replies,
// except where deviations.txt says bloomd answers otherwise on purpose.
func TestRedisBloomTranscripts(t *testing.T) { forEachIOMode(t, testRedisBloomTranscripts) }

func testRedisBloomTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/redisbloom/*.txt")
	if err != nil || len(files) < 5 {
		t.Fatalf("transcripts: %v %v", files, err)
	}
	devs := deviations(t)
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			s := startServer(t, nil)
			c := dial(t, s.addr())
			pending := devs[name]
			delete(devs, name)
			for _, b := range readTranscript(t, path) {
				want := b.reply
				if len(pending) > 0 && pending[0].cmd == b.cmd {
					if bytes.Equal(pending[0].reply, b.reply) {
						t.Errorf("deviations.txt:%d: %q does not differ from the recorded reply", pending[0].line, b.cmd)
					}
					want = pending[0].reply
					pending = pending[1:]
				}
				c.send(b.args...)
				got, v := c.read()
				if b.cmd == "HELLO 3" {
					checkHello(t, v, 3)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s:%d: > %.200s\ngot:\n%s\nwant:\n%s", name, b.line, b.cmd, formatReply(got), formatReply(want))
				}
			}
			for _, d := range pending {
				t.Errorf("deviations.txt:%d: %q was not met in %s (in order)", d.line, d.cmd, name)
			}
		})
	}
	for name := range devs {
		t.Errorf("deviations.txt names %s, which is not a recorded transcript", name)
	}
}

// checkHello checks a HELLO reply loosely: a map (RESP3) or flat array (RESP2) with the
// protocol, server "redis" and the module "bf".
func checkHello(t *testing.T, v resp.Value, proto int64) {
	t.Helper()
	if (proto == 3) != (v.Kind == '%') || len(v.Elems) != 14 {
		t.Fatalf("HELLO %d reply: %v", proto, v)
	}
	fields := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		fields[v.Elems[i].Text()] = v.Elems[i+1]
	}
	if fields["proto"].Int != proto || fields["server"].Text() != "redis" || fields["version"].Text() != "7.0.15" {
		t.Errorf("HELLO reply fields: %v", v)
	}
	mods := fields["modules"]
	if len(mods.Elems) != 1 || len(mods.Elems[0].Elems) != 8 || mods.Elems[0].Elems[1].Text() != "bf" || mods.Elems[0].Elems[3].Int != 20628 {
		t.Errorf("HELLO modules: %v", mods)
	}
}

// TestTranscriptsAgainstRedisBloom replays every recorded transcript against the real RedisBloom
// module named by REDISBLOOM_SO, loaded into a redis-server started for each file on a free
// loopback port, and requires the recorded bytes: it shows how the files were made, and that
// they are still what RedisBloom answers. Only HELLO 3's reply, which names the module's path
// and the connection's id, is compared loosely.
//
//	REDISBLOOM_SO=/path/to/redisbloom.so go test ./internal/server -run TestTranscriptsAgainstRedisBloom
func TestTranscriptsAgainstRedisBloom(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Skip("REDISBLOOM_SO is not set: not replaying the transcripts against RedisBloom")
	}
	files, err := filepath.Glob("testdata/redisbloom/*.txt")
	if err != nil || len(files) < 5 {
		t.Fatalf("transcripts: %v %v", files, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			srv := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so, "--save", "", "--appendonly", "no"}})
			c := dial(t, srv.Addr)
			for _, b := range readTranscript(t, path) {
				c.send(b.args...)
				got, v := c.read()
				if b.cmd == "HELLO 3" {
					if v.Kind != '%' {
						t.Errorf("HELLO 3: %v", v)
					}
					continue
				}
				if !bytes.Equal(got, b.reply) {
					t.Errorf("%s:%d: > %.200s\nRedisBloom answered:\n%s\nrecorded:\n%s", filepath.Base(path), b.line, b.cmd, formatReply(got), formatReply(b.reply))
				}
			}
		})
	}
}
