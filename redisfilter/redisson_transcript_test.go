package redisfilter

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/servertest"
)

var recordRedisson = flag.Bool("record", false, "rewrite the replies in testdata/redisson/*/transcript.txt from a real redis-server")

// redissonScriptSHA1 is the SHA1 of each script as it stands in Redisson's source (the Java
// string concatenation, byte for byte), so that an edit of a .lua file cannot pass unnoticed.
var redissonScriptSHA1 = map[string]string{
	"4.7.0/add":           "a7ac8cff901d5cafb8de37987dfbe1fc11f00eb4",
	"4.7.0/contains":      "b47306624a842fa9ee7c63bff083fb8683d44a16",
	"4.7.0/exists":        "195933d8243f0ef02ee2b2e983e4e8fcb970a9e5",
	"4.7.0/tryinit":       "d55160f19c10a86d6b0e2729295e907fc2c4d3f4",
	"4.7.0/setting":       "438cecc7bf14e3e3fcdabddd70757b18f5cdea37",
	"4.7.0/expire":        "3fd750e0b43af99dbd223e5523718f18cded3664",
	"4.7.0/expireat":      "71dee1cdc1c23a6aa34dd4a3bbfb2b6dfb3f72cb",
	"4.7.0/clearexpire":   "3e87b23af056c9bbfa98cb959044b3cb917003b9",
	"4.7.0/sizeinmemory":  "c803b5d81c2c2cbfdadf2986e593cd496ced1c23",
	"4.7.0/copy":          "803c956f2096dc9b38f7000347acbed4ff2ca586",
	"4.7.0/rename":        "a286399801867f0cb29cda0ffaad60e5d6428ddd",
	"4.7.0/renamenx":      "9672e8ac721b7b33b03983bd3b750ba0d84cdf80",
	"3.29.0/configcheck":  "e678c622b160a7f36fe9f26aecd0c1a5992e5b0c",
	"3.29.0/tryinitcheck": "bae33949534234b07cb5de743c296685dbafadff",
	"3.29.0/expire":       "3fd750e0b43af99dbd223e5523718f18cded3664",
	"3.29.0/expireat":     "71dee1cdc1c23a6aa34dd4a3bbfb2b6dfb3f72cb",
	"3.29.0/clearexpire":  "3e87b23af056c9bbfa98cb959044b3cb917003b9",
	"3.29.0/rename":       "43638eff351f535d6aae9f64f575ddbb4c38ad69",
	"3.29.0/renamenx":     "c3e11e008068a03506b838cb0365e27ffa165a9c",
	"3.29.0/sizeinmemory": "c803b5d81c2c2cbfdadf2986e593cd496ced1c23",
}

// javaRedissonScript returns the text of Redisson's script name (testdata/redisson/<version>/<name>.lua
// without its final newline), checked against its SHA1.
func javaRedissonScript(tb testing.TB, version, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "redisson", version, name+".lua"))
	if err != nil {
		tb.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	want, ok := redissonScriptSHA1[version+"/"+name]
	if got := fmt.Sprintf("%x", sha1.Sum([]byte(s))); !ok || got != want {
		tb.Fatalf("%s/%s.lua has SHA1 %s; Redisson's script has %s", version, name, got, want)
	}
	return s
}

// A redissonCmd is one command of a transcript and its reply, as lines (RESP lines without their
// CRLF; a bulk string's payload on its own line, "hex:" and its bytes in hex unless printable).
type redissonCmd struct {
	line  int
	text  string
	args  [][]byte
	reply []string
}

// A redissonBlock is the commands Redisson writes at once (one, or a batch's pipeline), with the
// notes before them.
type redissonBlock struct {
	notes []string
	cmds  []*redissonCmd
}

func (b *redissonBlock) unchecked() bool {
	for _, n := range b.notes {
		if strings.HasPrefix(n, "unchecked: ") {
			return true
		}
	}
	return false
}

// readRedissonTranscript parses a transcript: blocks separated by blank lines, "# " notes, and in
// a block each "> " command line followed by its reply lines. Arguments are separated by spaces;
// "hex:..." is bytes in hex, "script:NAME" the script NAME.lua of the transcript's directory and
// "sha:NAME" its SHA1.
func readRedissonTranscript(t *testing.T, path string) (header []string, blocks []*redissonBlock) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	version := filepath.Base(filepath.Dir(path))
	var cur *redissonBlock
	var notes []string
	seenBlock := false
	for i, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case l == "":
			if !seenBlock && cur == nil {
				header, notes = notes, nil
			}
			cur = nil
		case strings.HasPrefix(l, "#") && cur == nil:
			notes = append(notes, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
		case strings.HasPrefix(l, "> "):
			if cur == nil {
				cur = &redissonBlock{notes: notes}
				notes = nil
				blocks = append(blocks, cur)
				seenBlock = true
			}
			c := &redissonCmd{line: i + 1, text: l[2:]}
			for _, w := range strings.Split(l[2:], " ") {
				switch {
				case strings.HasPrefix(w, "hex:"):
					b, err := hex.DecodeString(w[4:])
					if err != nil {
						t.Fatalf("%s:%d: %v", path, i+1, err)
					}
					c.args = append(c.args, b)
				case strings.HasPrefix(w, "script:"):
					c.args = append(c.args, []byte(javaRedissonScript(t, version, w[7:])))
				case strings.HasPrefix(w, "sha:"):
					c.args = append(c.args, fmt.Appendf(nil, "%x", sha1.Sum([]byte(javaRedissonScript(t, version, w[4:])))))
				default:
					c.args = append(c.args, []byte(w))
				}
			}
			cur.cmds = append(cur.cmds, c)
		case cur != nil && len(cur.cmds) > 0:
			last := cur.cmds[len(cur.cmds)-1]
			last.reply = append(last.reply, l)
		default:
			t.Fatalf("%s:%d: unexpected line %q", path, i+1, l)
		}
	}
	return header, blocks
}

// writeRedissonTranscript writes blocks back in transcript form.
func writeRedissonTranscript(path string, header []string, blocks []*redissonBlock) error {
	var b strings.Builder
	for _, h := range header {
		b.WriteString(strings.TrimRight("# "+h, " ") + "\n")
	}
	for _, bl := range blocks {
		b.WriteString("\n")
		for _, n := range bl.notes {
			b.WriteString(strings.TrimRight("# "+n, " ") + "\n")
		}
		for _, c := range bl.cmds {
			b.WriteString("> " + c.text + "\n")
			for _, r := range c.reply {
				b.WriteString(r + "\n")
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// readReplyLines reads one RESP2 reply as transcript lines.
func readReplyLines(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	out := []string{line}
	if line == "" {
		return nil, fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return out, err
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return nil, err
		}
		p := buf[:n]
		if printable(p) {
			out = append(out, string(p))
		} else {
			out = append(out, "hex:"+hex.EncodeToString(p))
		}
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		for range max(n, 0) {
			sub, err := readReplyLines(r)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	return out, nil
}

func ioReadFull(r *bufio.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// printable reports whether a payload can stand on its own transcript line as it is.
func printable(p []byte) bool {
	if len(p) == 0 || bytes.HasPrefix(p, []byte("hex:")) || p[0] == '#' || p[0] == '>' {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// replayRedisson sends each block's commands in one write on one connection to addr and returns
// the replies, as lines, in order.
func replayRedisson(t *testing.T, addr string, blocks []*redissonBlock) [][]string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	var got [][]string
	for _, b := range blocks {
		var w []byte
		for _, c := range b.cmds {
			w = fmt.Appendf(w, "*%d\r\n", len(c.args))
			for _, a := range c.args {
				w = fmt.Appendf(w, "$%d\r\n", len(a))
				w = append(append(w, a...), '\r', '\n')
			}
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(w); err != nil {
			t.Fatal(err)
		}
		for _, c := range b.cmds {
			lines, err := readReplyLines(r)
			if err != nil {
				t.Fatalf("line %d: > %.100s: reading the reply: %v", c.line, c.text, err)
			}
			got = append(got, lines)
		}
	}
	return got
}

// TestRedissonTranscripts replays what Redisson's RBloomFilter sends for every operation
// (testdata/redisson/<version>/transcript.txt: its Lua scripts byte for byte, by EVALSHA with the
// NOSCRIPT and SCRIPT LOAD round of its script cache, or EVAL; its batches of SETBIT and GETBIT
// as pipelines; the "{name}:config" hash) against a fresh bloomd and a fresh redis-server, and
// requires the recorded replies from both (for sizeInMemory, whose MEMORY USAGE figures are each
// server's own, an integer). The Redisson client itself cannot run here (its dependencies are
// not installed), so the replay of its commands is the proof that it works against bloomd
// unchanged. README.md in testdata/redisson says which operation sends what.
//
//	go test ./redisfilter -run TestRedissonTranscripts -record   # rewrites the replies from redis-server
func TestRedissonTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/redisson/*/transcript.txt")
	if err != nil || len(files) < 2 {
		t.Fatalf("transcripts: %v %v", files, err)
	}
	for _, path := range files {
		version := filepath.Base(filepath.Dir(path))
		header, blocks := readRedissonTranscript(t, path)
		var cmds []*redissonCmd
		for _, b := range blocks {
			cmds = append(cmds, b.cmds...)
		}
		check := func(t *testing.T, got [][]string, server string) {
			i := 0
			for _, b := range blocks {
				for _, c := range b.cmds {
					g := got[i]
					i++
					if b.unchecked() {
						if len(g) != 1 || !strings.HasPrefix(g[0], ":") {
							t.Errorf("%s:%d: > %.100s\n%s: %q; want an integer", path, c.line, c.text, server, g)
						}
						continue
					}
					if strings.Join(g, "\n") != strings.Join(c.reply, "\n") {
						t.Errorf("%s:%d: > %.100s\n%s:\n%s\ntranscript:\n%s", path, c.line, c.text, server, strings.Join(g, "\n"), strings.Join(c.reply, "\n"))
					}
				}
			}
		}
		t.Run(version+"/redis-server", func(t *testing.T) {
			rs := redistest.New(t, nil)
			got := replayRedisson(t, rs.Addr, blocks)
			if *recordRedisson {
				for i, c := range cmds {
					c.reply = got[i]
				}
				if err := writeRedissonTranscript(path, header, blocks); err != nil {
					t.Fatal(err)
				}
				t.Logf("recorded %s", path)
				return
			}
			check(t, got, "redis-server")
		})
		if *recordRedisson {
			continue
		}
		t.Run(version+"/bloomd", func(t *testing.T) {
			_, addr := servertest.Start(t, nil)
			check(t, replayRedisson(t, addr, blocks), "bloomd")
		})
	}
}
