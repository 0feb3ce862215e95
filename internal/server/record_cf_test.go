package server

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// The CF transcripts of testdata/redisbloom (resp2-cf-*.txt, resp3-cf.txt) are recorded from the
// real RedisBloom module by TestRecordCFTranscripts:
//
//	REDISBLOOM_SO=/path/to/redisbloom.so go test ./internal/server -run TestRecordCFTranscripts -count=1
//
// Each file is one session on a freshly started redis-server (loopback, free port) with the
// module loaded, over one raw connection; each command is sent as a RESP array of bulk strings
// and the reply bytes are written exactly, in the format of testdata/redisbloom/README.md.

// cfSession is a recorded session: do sends a command and returns its reply's value.
type cfSession func(do func(args ...string) resp.Value)

func cfItems(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func cfCmd(head []string, tail ...string) []string {
	return append(append([]string{}, head...), tail...)
}

var cfSessions = map[string]cfSession{
	"resp2-cf-basic.txt": func(do func(...string) resp.Value) {
		do("CF.RESERVE", "cf", "1000")
		do("CF.INFO", "cf")
		do("CF.DEBUG", "cf")
		do("TYPE", "cf")
		do("CF.ADD", "cf", "a")
		do("CF.ADD", "cf", "a")
		do("CF.ADDNX", "cf", "a")
		do("CF.ADDNX", "cf", "b")
		do("CF.EXISTS", "cf", "a")
		do("CF.EXISTS", "cf", "zz")
		do("CF.MEXISTS", "cf", "a", "b", "c")
		do("CF.COUNT", "cf", "a")
		do("CF.COUNT", "cf", "c")
		do("CF.DEL", "cf", "a")
		do("CF.COUNT", "cf", "a")
		do("CF.DEL", "cf", "a")
		do("CF.DEL", "cf", "a")
		do("CF.EXISTS", "cf", "a")
		do("CF.INSERT", "cf", "ITEMS", "x", "y", "x")
		do("CF.INSERTNX", "cf", "ITEMS", "x", "y", "z")
		do("cf.insert", "auto", "capacity", "100", "items", "p", "q")
		do("CF.INFO", "auto")
		do("CF.INSERTNX", "auto2", "NOCREATE", "ITEMS", "p")
		do("CF.INSERT", "auto3", "NOCREATE", "CAPACITY", "50", "ITEMS", "p")
		do("CF.ADD", "auto4", "first")
		do("CF.INFO", "auto4")
		do("CF.MEXISTS", "missing", "a", "b")
		do("CF.EXISTS", "missing", "a")
		do("CF.COUNT", "missing", "a")
		do("CF.COMPACT", "cf")
		do("CF.INFO", "cf")
		do("CF.DEBUG", "cf")
		do("CF.RESERVE", "opts", "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "10", "EXPANSION", "3")
		do("CF.INFO", "opts")
		do("CF.RESERVE", "opts2", "17", "expansion", "0", "bucketsize", "255", "FOO", "1")
		do("CF.DEBUG", "opts2")
		do("CF.RESERVE", "bucketsize", "100")
		do("CF.DEBUG", "bucketsize")
		do("CF.ADD", "cf", "")
		do("CF.EXISTS", "cf", "")
		do("MEMORY", "USAGE", "x")
		do("CF.INFO", "opts")
	},
	"resp2-cf-errors.txt": func(do func(...string) resp.Value) {
		do("CF.RESERVE", "e")
		do("CF.RESERVE", "e", "100", "BUCKETSIZE")
		do("CF.RESERVE", "e", "abc")
		do("CF.RESERVE", "e", "100", "BUCKETSIZE", "x")
		do("CF.RESERVE", "e", "100", "BUCKETSIZE", "0")
		do("CF.RESERVE", "e", "100", "BUCKETSIZE", "256")
		do("CF.RESERVE", "e", "100", "MAXITERATIONS", "x")
		do("CF.RESERVE", "e", "100", "MAXITERATIONS", "0")
		do("CF.RESERVE", "e", "100", "MAXITERATIONS", "65536")
		do("CF.RESERVE", "e", "100", "EXPANSION", "x")
		do("CF.RESERVE", "e", "100", "EXPANSION", "-1")
		do("CF.RESERVE", "e", "100", "EXPANSION", "32769")
		do("CF.RESERVE", "e", "3")
		do("CF.RESERVE", "e", "-5")
		do("CF.RESERVE", "e", "10", "BUCKETSIZE", "6")
		do("CF.RESERVE", "e", "100", "BUCKETSIZE", "x", "MAXITERATIONS", "0")
		do("CF.RESERVE", "e", "100")
		do("CF.RESERVE", "e", "100")
		do("SET", "s", "v")
		do("CF.RESERVE", "s", "100")
		do("CF.ADD", "s", "a")
		do("CF.ADDNX", "s", "a")
		do("CF.INSERT", "s", "ITEMS", "a")
		do("CF.EXISTS", "s", "a")
		do("CF.MEXISTS", "s", "a")
		do("CF.COUNT", "s", "a")
		do("CF.DEL", "s", "a")
		do("CF.COMPACT", "s")
		do("CF.INFO", "s")
		do("CF.DEBUG", "s")
		do("CF.SCANDUMP", "s", "0")
		do("CF.LOADCHUNK", "s", "1", "x")
		do("CF.LOADCHUNK", "s", "5", "x")
		do("BF.ADD", "e", "a")
		do("BF.EXISTS", "e", "a")
		do("CF.ADD", "e")
		do("CF.ADD", "e", "a", "b")
		do("CF.ADDNX", "e")
		do("CF.INSERT", "e", "ITEMS")
		do("CF.INSERT", "e", "x")
		do("CF.INSERT", "e", "x", "ITEMS", "a")
		do("CF.INSERT", "e", "CAPACITY")
		do("CF.INSERT", "e", "CAPACITY", "abc", "ITEMS", "a")
		do("CF.INSERT", "e", "CAPACITY", "3", "ITEMS", "a")
		do("CF.INSERT", "e", "CAPACITY", "100", "NOCREATE")
		do("CF.INSERT", "e", "", "ITEMS", "a")
		do("CF.INSERT", "new", "NOCREATE", "ITEMS", "a")
		do("CF.INSERTNX", "e", "c", "10", "i", "a", "b")
		do("CF.INSERT", "e", "Nope", "ITEMS", "a")
		do("CF.EXISTS", "e")
		do("CF.EXISTS", "e", "a", "b")
		do("CF.MEXISTS", "e")
		do("CF.COUNT", "e")
		do("CF.DEL", "e")
		do("CF.DEL", "nokey", "a")
		do("CF.DEL", "e", "never-added")
		do("CF.COMPACT")
		do("CF.COMPACT", "nokey")
		do("CF.INFO")
		do("CF.INFO", "nokey")
		do("CF.INFO", "e", "size")
		do("CF.DEBUG", "nokey")
		do("CF.SCANDUMP", "e")
		do("CF.SCANDUMP", "e", "x")
		do("CF.SCANDUMP", "e", "-1")
		do("CF.SCANDUMP", "nokey", "0")
		do("CF.LOADCHUNK", "e", "1")
		do("CF.LOADCHUNK", "e", "x", "data")
		do("CF.LOADCHUNK", "e", "0", "data")
		do("CF.LOADCHUNK", "e", "1", "data")
		do("CF.LOADCHUNK", "nokey", "1", "short")
		do("CF.LOADCHUNK", "nokey", "9", "data")
		do("CF.LOADCHUNK", "e", "9", "")
		do("CF.LOADCHUNK", "e", "3", "data")
		do("CF.LOADCHUNK", "e", "-7", "data")
		do("CF.LOADCHUNK", "e", "100000", "data")
		do("CF.ADD", "e", "a")
	},
	"resp2-cf-growth.txt": func(do func(...string) resp.Value) {
		// A filter of 4 slots that grows: items land in new sub-filters after kicks fail.
		do("CF.RESERVE", "g", "4")
		for _, it := range cfItems("g", 24) {
			do("CF.ADD", "g", it)
		}
		do("CF.INFO", "g")
		do(cfCmd([]string{"CF.MEXISTS", "g"}, cfItems("g", 24)...)...)
		for _, it := range cfItems("g", 8) {
			do("CF.DEL", "g", it)
		}
		do("CF.INFO", "g")
		do("CF.COMPACT", "g")
		do("CF.INFO", "g")
		do(cfCmd([]string{"CF.MEXISTS", "g"}, cfItems("g", 24)...)...)
		// Expansion 2 and 4: sub-filters double or quadruple.
		do("CF.RESERVE", "g2", "8", "EXPANSION", "2", "MAXITERATIONS", "3")
		do(cfCmd([]string{"CF.INSERT", "g2", "ITEMS"}, cfItems("h", 60)...)...)
		do("CF.INFO", "g2")
		do("CF.RESERVE", "g3", "8", "EXPANSION", "3", "BUCKETSIZE", "1")
		do(cfCmd([]string{"CF.INSERTNX", "g3", "ITEMS"}, cfItems("h", 40)...)...)
		do("CF.DEBUG", "g3")
		// A filter that does not grow fills up.
		do("CF.RESERVE", "full", "4", "EXPANSION", "0")
		for _, it := range cfItems("f", 8) {
			do("CF.ADD", "full", it)
		}
		do("CF.ADDNX", "full", "f0")
		do("CF.ADDNX", "full", "new-one")
		do("CF.INSERT", "full", "ITEMS", "f0", "x1", "x2")
		do("CF.INSERTNX", "full", "ITEMS", "f0", "x1", "x2")
		do("CF.INFO", "full")
		do("CF.DEL", "full", "f0")
		do("CF.ADD", "full", "f0")
		// 32 sub-filters: no more insertions.
		do("CF.RESERVE", "max", "2", "BUCKETSIZE", "1", "MAXITERATIONS", "1")
		do(cfCmd([]string{"CF.INSERT", "max", "ITEMS"}, cfItems("m", 90)...)...)
		do("CF.DEBUG", "max")
		do("CF.ADD", "max", "one-more")
		do("CF.ADDNX", "max", "m0")
		do("CF.INSERT", "max", "ITEMS", "a", "b")
		do("CF.EXISTS", "max", "m89")
		do("CF.DEL", "max", "m89")
		do("CF.COUNT", "max", "m1")
	},
	"resp2-cf-scandump.txt": func(do func(...string) resp.Value) {
		do("CF.RESERVE", "d", "64", "EXPANSION", "2")
		do("CF.SCANDUMP", "d", "0")
		do(cfCmd([]string{"CF.INSERT", "d", "ITEMS"}, cfItems("d", 100)...)...)
		do("CF.DEL", "d", "d1")
		chunks := [][2]string{}
		for pos := "0"; ; {
			v := do("CF.SCANDUMP", "d", pos)
			if v.Elems[0].Int == 0 {
				break
			}
			pos = fmt.Sprint(v.Elems[0].Int)
			chunks = append(chunks, [2]string{pos, string(v.Elems[1].Str)})
		}
		do("CF.SCANDUMP", "d", "5")
		do("CF.SCANDUMP", "d", "100000")
		for _, ch := range chunks {
			do("CF.LOADCHUNK", "copy", ch[0], ch[1])
		}
		do("CF.INFO", "copy")
		do(cfCmd([]string{"CF.MEXISTS", "copy"}, cfItems("d", 100)...)...)
		for pos := "0"; ; {
			v := do("CF.SCANDUMP", "copy", pos)
			if v.Elems[0].Int == 0 {
				break
			}
			pos = fmt.Sprint(v.Elems[0].Int)
		}
		do("CF.LOADCHUNK", "copy", "1", chunks[0][1])
		// Chunks that do not fit.
		do("CF.LOADCHUNK", "copy", chunks[1][0], chunks[1][1]+"x")
		do("CF.LOADCHUNK", "copy", "2", "ab")
		do("CF.LOADCHUNK", "copy", "3", "ab")
		do("CF.LOADCHUNK", "copy", "1000000", "ab")
		// Crafted headers: 38 bytes each, refused by the integrity check.
		for i, h := range cfCraftedHeaders() {
			do("CF.LOADCHUNK", fmt.Sprintf("bad%d", i), "1", h)
		}
		do("CF.LOADCHUNK", "ok", "1", cfHeaderBytes(5, 8, 1, 2, 2, 20, 2))
		do("CF.INFO", "ok")
		do("CF.LOADCHUNK", "ok", "17", strings.Repeat("\x07", 16))
		do("CF.COUNT", "ok", "x")
		do("CF.SCANDUMP", "ok", "1")
		do("CF.SCANDUMP", "ok", "17")
		do("CF.LOADCHUNK", "ok3", "1", cfHeaderBytes(5, 8, 1, 3, 2, 20, 3))
		do("CF.INFO", "ok3")
		do("CF.LOADCHUNK", "trunc", "1", cfHeaderBytes(5, 8, 0, 1<<16|1, 2, 20, 1))
		do("CF.DEBUG", "trunc")
		do("CF.SCANDUMP", "trunc", "0")
		do("CF.LOADCHUNK", "empty", "1", cfHeaderBytes(0, 4, 0, 1, 2, 20, 1))
		do("CF.SCANDUMP", "empty", "0")
	},
	"resp2-cf-command.txt": func(do func(...string) resp.Value) {
		do("COMMAND", "INFO", "cf.reserve", "cf.add", "cf.addnx", "cf.insert", "cf.insertnx", "cf.exists",
			"cf.mexists", "cf.count", "cf.del", "cf.compact", "cf.scandump", "cf.loadchunk", "cf.info", "cf.debug")
	},
	"resp3-cf.txt": func(do func(...string) resp.Value) {
		do("HELLO", "3")
		do("CF.RESERVE", "cf", "100")
		do("CF.ADD", "cf", "a")
		do("CF.ADDNX", "cf", "a")
		do("CF.ADDNX", "cf", "b")
		do("CF.INSERT", "cf", "ITEMS", "a", "c")
		do("CF.INSERTNX", "cf", "ITEMS", "a", "d")
		do("CF.EXISTS", "cf", "a")
		do("CF.EXISTS", "cf", "zz")
		do("CF.EXISTS", "missing", "a")
		do("CF.MEXISTS", "cf", "a", "zz")
		do("CF.MEXISTS", "missing", "a")
		do("CF.COUNT", "cf", "a")
		do("CF.COUNT", "missing", "a")
		do("CF.DEL", "cf", "a")
		do("CF.DEL", "cf", "zz")
		do("CF.INFO", "cf")
		do("CF.DEBUG", "cf")
		do("CF.SCANDUMP", "cf", "0")
		do("CF.SCANDUMP", "cf", "1")
		do("CF.SCANDUMP", "cf", "101")
		do("CF.RESERVE", "empty", "100")
		do("CF.SCANDUMP", "empty", "0")
		do("CF.RESERVE", "full", "4", "EXPANSION", "0")
		do("CF.INSERT", "full", "ITEMS", "1", "2", "3", "4", "5", "6", "7", "8")
		do("CF.INSERTNX", "full", "ITEMS", "1", "9", "10")
		do("CF.ADD", "full", "11")
		do("CF.COMPACT", "cf")
	},
}

// cfHeaderBytes returns a CF.SCANDUMP header as a string.
func cfHeaderBytes(items, buckets, deletes, filters uint64, bs, mi, exp uint16) string {
	b := make([]byte, 0, 38)
	for _, v := range []uint64{items, buckets, deletes, filters} {
		for i := range 8 {
			b = append(b, byte(v>>(8*i)))
		}
	}
	for _, v := range []uint16{bs, mi, exp} {
		b = append(b, byte(v), byte(v>>8))
	}
	return string(b)
}

// cfCraftedHeaders are headers RedisBloom's integrity check refuses.
func cfCraftedHeaders() []string {
	return []string{
		cfHeaderBytes(1, 8, 0, 0, 2, 20, 1),     // no sub-filters
		cfHeaderBytes(1, 8, 0, 1, 0, 20, 1),     // bucket size 0
		cfHeaderBytes(1, 8, 0, 1, 256, 20, 1),   // bucket size 256
		cfHeaderBytes(1, 0, 0, 1, 2, 20, 1),     // no buckets
		cfHeaderBytes(1, 12, 0, 1, 2, 20, 1),    // buckets not a power of two
		cfHeaderBytes(1, 1<<56, 0, 1, 2, 20, 1), // 2^56 buckets
		cfHeaderBytes(1, 8, 0, 1, 2, 0, 1),      // max iterations 0
		cfHeaderBytes(1, 8, 0, 2, 2, 20, 0),     // two sub-filters, expansion 0
		cfHeaderBytes(1, 8, 0, 1<<16, 2, 20, 1), // 2^16 sub-filters (0 in 16 bits)
		cfHeaderBytes(1, 1<<60, 0, 1, 2, 20, 1), // 2^60 buckets
		// Not recorded: a header that passes the check but needs 32 PiB (2^55 buckets), on
		// which RedisBloom aborts the whole server; bloomd refuses it (cf_test.go).
	}
}

// encodeArg writes one argument as the transcript format does.
func encodeArg(a string) string {
	if a == "" || strings.HasPrefix(a, "hex:") || strings.IndexFunc(a, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return "hex:" + hex.EncodeToString([]byte(a))
	}
	return a
}

func TestRecordCFTranscripts(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Skip("REDISBLOOM_SO is not set: not recording CF transcripts")
	}
	for name, session := range cfSessions {
		srv := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so}})
		c := dial(t, srv.Addr)
		var out strings.Builder
		session(func(args ...string) resp.Value {
			bs := make([][]byte, len(args))
			enc := make([]string, len(args))
			for i, a := range args {
				bs[i], enc[i] = []byte(a), encodeArg(a)
			}
			if os.Getenv("CF_RECORD_TRACE") != "" {
				fmt.Fprintln(os.Stderr, name, enc)
			}
			c.send(bs...)
			raw, v := c.read()
			lines := formatReply(raw)
			if again, err := encodeReplyLines(strings.Split(lines, "\n")); err != nil || !bytes.Equal(again, raw) {
				t.Fatalf("%s: %s: the reply %q does not survive the transcript format", name, enc, raw)
			}
			if out.Len() > 0 {
				out.WriteString("\n")
			}
			fmt.Fprintf(&out, "> %s\n%s\n", strings.Join(enc, " "), lines)
			return v
		})
		if err := os.WriteFile(filepath.Join("testdata/redisbloom", name), []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		srv.Close()
	}
}

// TestCFDumpsIntoRedisBloom moves cuckoo filters built by bloomd into the real RedisBloom module
// named by REDISBLOOM_SO with CF.SCANDUMP / CF.LOADCHUNK, and requires RedisBloom to hold the
// same filter (CF.DEBUG, every answer, its own dump byte for byte) and to keep agreeing with
// bloomd as both go on adding and removing. (RedisBloom's dumps loaded into bloomd are covered by
// resp2-cf-scandump.txt.)
func TestCFDumpsIntoRedisBloom(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Skip("REDISBLOOM_SO is not set: no RedisBloom module to load bloomd's dumps into")
	}
	rs := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so}})
	rb := dial(t, rs.Addr)
	bd := dial(t, startServer(t, nil).addr())
	both := func(args ...string) {
		t.Helper()
		a, b := rb.do(args...), bd.do(args...)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%v: RedisBloom %v, bloomd %v", args, a, b)
		}
	}
	dump := func(c *rawClient, key string) [][]byte {
		var out [][]byte
		for pos := "0"; ; {
			v := c.do("CF.SCANDUMP", key, pos)
			if v.Elems[0].Int == 0 {
				return out
			}
			pos = fmt.Sprint(v.Elems[0].Int)
			out = append(out, []byte(pos), v.Elems[1].Str)
		}
	}
	for i, reserve := range [][]string{
		{"1000"}, {"64", "EXPANSION", "2"}, {"50", "BUCKETSIZE", "1", "MAXITERATIONS", "3", "EXPANSION", "4"},
		{"500", "BUCKETSIZE", "8", "EXPANSION", "0"},
	} {
		key := fmt.Sprint("f", i)
		bd.do(cfCmd([]string{"CF.RESERVE", key}, reserve...)...)
		items := cfItems(key+"-", 700)
		bd.do(cfCmd([]string{"CF.INSERT", key, "ITEMS"}, items...)...)
		for _, it := range items[:150] {
			bd.do("CF.DEL", key, it)
		}
		d := dump(bd, key)
		for j := 0; j < len(d); j += 2 {
			if v := rb.do("CF.LOADCHUNK", key, string(d[j]), string(d[j+1])); v.IsError() {
				t.Fatalf("%s: RedisBloom refused bloomd's chunk at %s: %s", key, d[j], v.Str)
			}
		}
		both("CF.DEBUG", key)
		both(cfCmd([]string{"CF.MEXISTS", key}, items...)...)
		for _, it := range items[140:160] {
			both("CF.COUNT", key, it)
		}
		if a, b := dump(rb, key), dump(bd, key); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s: RedisBloom's dump of the loaded filter differs from bloomd's", key)
		}
		more := cfItems(key+"+", 300)
		both(cfCmd([]string{"CF.INSERT", key, "ITEMS"}, more...)...)
		for _, it := range items[150:400] {
			both("CF.DEL", key, it)
		}
		both("CF.COMPACT", key)
		both("CF.DEBUG", key)
		if a, b := dump(rb, key), dump(bd, key); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s: dumps differ after the same writes on both", key)
		}
	}
}
