package server

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

var record = flag.Bool("record", false, "rewrite the replies in testdata/commands-*.txt from a real redis-server (blocks not marked bloomd-only)")

// serverSettings returns the "server: name value" notes of a transcript's first block.
func serverSettings(blocks []block) [][2]string {
	var set [][2]string
	if len(blocks) == 0 {
		return nil
	}
	for _, n := range blocks[0].notes {
		if kv, ok := strings.CutPrefix(n, "server: "); ok {
			name, value, _ := strings.Cut(kv, " ")
			set = append(set, [2]string{name, value})
		}
	}
	return set
}

func bloomdOnly(b block) bool { return slices.Contains(b.notes, "bloomd-only") }

// unchecked reports a block whose reply is not compared ("# unchecked: why"), such as HELLO 3's,
// which names the connection and the modules: it is sent to switch the protocol.
func unchecked(b block) bool {
	for _, n := range b.notes {
		if strings.HasPrefix(n, "unchecked: ") {
			return true
		}
	}
	return false
}

// TestCommandTranscripts replays testdata/commands-*.txt, bloomd's own transcripts of the
// commands besides BF.*, against bloomd, and every block not marked bloomd-only against a real
// redis-server 7 as well, so that the expected replies are Redis's own.
func TestCommandTranscripts(t *testing.T) { forEachIOMode(t, testCommandTranscripts) }

func testCommandTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/commands-*.txt")
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
				if kv[0] == "requirepass" {
					opts.Password = kv[1]
				} else {
					opts.Args = append(opts.Args, "--"+kv[0], kv[1])
				}
			}
			rs := redistest.New(t, opts)
			c := dial(t, rs.Addr)
			changed := false
			for i, b := range blocks {
				if bloomdOnly(b) {
					continue
				}
				c.send(b.args...)
				got, _ := c.read()
				if *record {
					if !bytes.Equal(got, b.reply) {
						blocks[i].reply = got
						blocks[i].replyTx = formatReply(got)
						changed = true
					}
					continue
				}
				if !bytes.Equal(got, b.reply) && !unchecked(b) {
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
		t.Run(name+"/bloomd", func(t *testing.T) {
			s := startServer(t, func(cfg *Config) {
				for _, kv := range settings {
					if err := cfg.Set(kv[0], kv[1]); err != nil {
						t.Fatal(err)
					}
				}
			})
			c := dial(t, s.addr())
			for _, b := range blocks {
				c.send(b.args...)
				got, _ := c.read()
				if !bytes.Equal(got, b.reply) && !unchecked(b) {
					t.Errorf("%s:%d: > %s\ngot:\n%s\nwant:\n%s", name, b.line, b.cmd, formatReply(got), b.replyTx)
				}
			}
		})
	}
}

// formatTranscript writes blocks back in transcript form, keeping the file's leading comment.
func formatTranscript(blocks []block, path string) []byte {
	data, _ := os.ReadFile(path)
	var out strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		out.WriteString(l + "\n")
	}
	for i, b := range blocks {
		if i > 0 {
			out.WriteString("\n")
			for _, n := range b.notes {
				out.WriteString("# " + n + "\n")
			}
		}
		out.WriteString("> " + b.cmd + "\n" + b.replyTx + "\n")
	}
	return []byte(out.String())
}
