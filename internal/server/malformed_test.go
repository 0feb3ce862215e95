package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/bloomd/bloom"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// readUntilClosed reads everything the server sends until it closes the connection.
func readUntilClosed(t *testing.T, nc net.Conn) string {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("waiting for the server to close the connection: %v (read %q)", err, b)
	}
	return string(b)
}

// TestMalformedInput sends broken protocol: each input must get Redis's protocol error (or
// nothing, for input that ends mid-request) and a closed connection, while another client's
// connection and data are unaffected.
func TestMalformedInput(t *testing.T) { forEachIOMode(t, testMalformedInput) }

func testMalformedInput(t *testing.T) {
	s := startServer(t, nil)
	bystander := dial(t, s.addr())
	bystander.do("BF.MADD", "keep", "a", "b", "c")
	for _, tt := range []struct{ in, reply string }{
		{"*1\r\n$-2\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*2147483648\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
		{"*2\r\n$4\r\nPING\r\n$1\r\nxyz\r\n", "-ERR Protocol error: bulk string not terminated by CRLF\r\n"},
		{"\"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{strings.Repeat("x", 70000), "-ERR Protocol error: too big inline request\r\n"},
		{"*" + strings.Repeat("9", 70000), "-ERR Protocol error: too big mbulk count string\r\n"},
		{"*1\r\n$" + strings.Repeat("9", 70000), "-ERR Protocol error: too big bulk count string\r\n"},
		// Pipelined: the good command before the bad one is answered first.
		{"PING\r\n*1\r\n$x\r\n", "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"},
		// A huge declared request that never comes: the client gives up, nothing is answered.
		{"*2147483647\r\n$536870912\r\nabc", ""},
		{"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk", ""},
		// An HTTP request (a browser tricked into posting to the port) is dropped unanswered.
		{"POST / HTTP/1.1\r\nHost: localhost\r\n\r\n", ""},
	} {
		nc, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write([]byte(tt.in)); err != nil {
			t.Fatal(err)
		}
		if tt.reply == "" {
			nc.(*net.TCPConn).CloseWrite()
		}
		if got := readUntilClosed(t, nc); got != tt.reply {
			t.Errorf("%.40q: got %q, want %q", tt.in, got, tt.reply)
		}
		nc.Close()
		if v := bystander.do("BF.CARD", "keep"); v.Int != 3 {
			t.Fatalf("after %.40q, another client's BF.CARD = %v", tt.in, v)
		}
	}
	// A client that has not authenticated gets Redis's tighter limits.
	ps := startServer(t, func(c *Config) { c.Requirepass = "pw" })
	for _, tt := range []struct{ in, reply string }{
		{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"*2\r\n$4\r\nAUTH\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length\r\n"},
	} {
		nc, err := net.Dial("tcp", ps.addr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte(tt.in))
		if got := readUntilClosed(t, nc); got != tt.reply {
			t.Errorf("unauthenticated %q: got %q, want %q", tt.in, got, tt.reply)
		}
		nc.Close()
	}
	if n := s.stats.panics.Load() + ps.stats.panics.Load(); n != 0 {
		t.Fatalf("%d panics while serving", n)
	}
}

// TestRandomInput throws random bytes, and random commands with random arguments, at the server
// (bounded in count and time) and checks that it never panics and keeps serving.
func TestRandomInput(t *testing.T) { forEachIOMode(t, testRandomInput) }

func testRandomInput(t *testing.T) {
	s := startServer(t, nil)
	bystander := dial(t, s.addr())
	bystander.do("BF.RESERVE", "keep", "0.01", "1000")
	bystander.do("BF.ADD", "keep", "x")
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"BF.RESERVE", "BF.ADD", "BF.MADD", "BF.INSERT", "BF.EXISTS", "BF.MEXISTS", "BF.INFO", "BF.CARD",
		"BF.DEBUG", "BF.SCANDUMP", "BF.LOADCHUNK", "DEL", "EXISTS", "TYPE", "KEYS", "SCAN", "RENAME", "EXPIRE",
		"PEXPIRE", "TTL", "PERSIST", "SET", "GET", "PING", "ECHO", "CLIENT", "CONFIG", "COMMAND", "INFO", "MULTI",
		"EXEC", "DISCARD", "HELLO", "SELECT", "TIME", "DBSIZE", "RESET", "UNLINK", "RENAMENX", "EXPIREAT",
		"CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX", "CF.EXISTS", "CF.MEXISTS", "CF.COUNT",
		"CF.DEL", "CF.COMPACT", "CF.INFO", "CF.DEBUG", "CF.SCANDUMP", "CF.LOADCHUNK"}
	words := []string{"k", "keep", "f", "0.01", "0", "-1", "1", "100", "1e3", "ITEMS", "CAPACITY", "ERROR",
		"EXPANSION", "NONSCALING", "NOCREATE", "MATCH", "COUNT", "TYPE", "GET", "SET", "LIST", "NX", "XX", "GT",
		"*", "9223372036854775807", "3", "2", "inf", "nan", "", "\x00\xff", "maxmemory", "timeout", "ID",
		"BUCKETSIZE", "MAXITERATIONS", "39", cfHeaderBytes(1, 8, 0, 1, 2, 20, 1), cfHeaderBytes(9, 1<<55, 0, 1, 1, 20, 1)}
	deadline := time.Now().Add(5 * time.Second)
	for round := 0; round < 300 && time.Now().Before(deadline); round++ {
		nc, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		var in []byte
		if round%3 == 0 {
			in = make([]byte, rng.IntN(300))
			for i := range in {
				in[i] = "*$\r\n0123456789-+:abc \"'\\"[rng.IntN(24)]
			}
		} else {
			for range 1 + rng.IntN(20) {
				args := [][]byte{[]byte(names[rng.IntN(len(names))])}
				for range rng.IntN(6) {
					args = append(args, []byte(words[rng.IntN(len(words))]))
				}
				if string(args[0]) == "CONFIG" && len(args) > 1 && string(args[1]) == "SET" {
					continue // keep CONFIG SET from changing the limits under the test
				}
				in = resp.AppendCommand(in, args...)
			}
		}
		nc.Write(in)
		nc.(*net.TCPConn).CloseWrite()
		readUntilClosed(t, nc)
		nc.Close()
	}
	if n := s.stats.panics.Load(); n != 0 {
		t.Fatalf("%d panics while serving random input", n)
	}
	if v := bystander.do("BF.EXISTS", "keep", "x"); v.Int != 1 && string(v.Str) != "" {
		// keep may have been deleted or replaced by the random commands; the server must answer.
		t.Logf("BF.EXISTS keep x = %v", v)
	}
	if v := bystander.do("PING"); string(v.Str) != "PONG" {
		t.Fatalf("PING after random input: %v", v)
	}
}

// header builds a BF.LOADCHUNK header of one link from its fields.
func header(total uint64, nfilters, options, growth uint32, bytes, bits, size uint64, errRate, bpe float64, hashes uint32, entries uint64, n2 uint8) []byte {
	b := binary.LittleEndian.AppendUint64(nil, total)
	b = binary.LittleEndian.AppendUint32(b, nfilters)
	b = binary.LittleEndian.AppendUint32(b, options)
	b = binary.LittleEndian.AppendUint32(b, growth)
	b = binary.LittleEndian.AppendUint64(b, bytes)
	b = binary.LittleEndian.AppendUint64(b, bits)
	b = binary.LittleEndian.AppendUint64(b, size)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(errRate))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(bpe))
	b = binary.LittleEndian.AppendUint32(b, hashes)
	b = binary.LittleEndian.AppendUint64(b, entries)
	return append(b, n2)
}

// TestCraftedLoadChunk loads crafted headers: each is refused with RedisBloom's error (or
// "Insufficient memory" when it asks for more than allowed) before anything is allocated, and no
// key is left behind.
func TestCraftedLoadChunk(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	bpe := -math.Log(0.05) / 0.480453013918201
	good := header(1, 1, 5, 2, 8, 64, 1, 0.05, bpe, 5, 10, 0)
	huge := uint64(1) << 50 // 1 PiB of bits
	for _, tt := range []struct {
		name string
		hdr  []byte
		want string
	}{
		{"truncated", good[:72], errBadData},
		{"trailing byte", append(bytes.Clone(good), 0), errBadData},
		{"no links", good[:20], errBadData},
		{"declares 2^32-1 links", append(bytes.Clone(good[:8]), header(1, math.MaxUint32, 5, 2, 8, 64, 1, 0.05, bpe, 5, 10, 0)[8:]...), errBadData},
		{"bits not bytes*8", header(1, 1, 5, 2, 8, 65, 1, 0.05, bpe, 5, 10, 0), errBadData},
		{"bytes*8 wraps to 0", header(1, 1, 5, 2, 1<<61, 0, 1, 0.05, bpe, 5, 10, 0), errBadData},
		{"wrong hashes", header(1, 1, 5, 2, 8, 64, 1, 0.05, bpe, 6, 10, 0), errBadData},
		{"error rate 0", header(1, 1, 5, 2, 8, 64, 1, 0, bpe, 5, 10, 0), errBadData},
		{"error rate NaN", header(1, 1, 5, 2, 8, 64, 1, math.NaN(), bpe, 5, 10, 0), errBadData},
		{"unknown option bits", header(1, 1, 16|5, 2, 8, 64, 1, 0.05, bpe, 5, 10, 0), errBadData},
		{"counts disagree", header(2, 1, 5, 2, 8, 64, 1, 0.05, bpe, 5, 10, 0), errBadData},
		{"n2 too large", header(1, 1, 5, 2, 8, 64, 1, 0.05, bpe, 5, 10, 64), errBadData},
		{"1 PiB link", header(1, 1, 5, 2, huge/8, huge, 1, 0.05, bpe, 5, 10, 0), refusal(s, "create", 32+64+huge/8, keyOverhead+len("crafted"))},
	} {
		c.send([]byte("BF.LOADCHUNK"), []byte("crafted"), []byte("1"), tt.hdr)
		_, v := c.read()
		if !v.IsError() || string(v.Str) != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, v, tt.want)
		}
		if v := c.do("EXISTS", "crafted"); v.Int != 0 {
			t.Fatalf("%s: the key exists after a refused header", tt.name)
		}
	}
	if used := s.ks.used.Load(); used != 0 {
		t.Fatalf("%d bytes still charged after refused headers", used)
	}
	c.send([]byte("BF.LOADCHUNK"), []byte("crafted"), []byte("1"), good)
	if _, v := c.read(); string(v.Str) != "OK" {
		t.Fatalf("the good header: %v", v)
	}
	for _, tt := range []struct {
		iter, data, want string
	}{
		{"10", "123456789", "ERR invalid chunk - Too big for current filter"},
		{"9", "123456789", "ERR invalid offset - no link found"},
		{"100", "x", "ERR invalid offset - no link found"},
		{"0", "", errBadData},
		{"-5", "x", errBadData},
		{"9", "12345678", "OK"},
	} {
		v := c.do("BF.LOADCHUNK", "crafted", tt.iter, tt.data)
		if string(v.Str) != tt.want {
			t.Errorf("chunk %s %q: %v, want %s", tt.iter, tt.data, v, tt.want)
		}
	}
}

// TestAbsurdSizes asks for filters that cannot fit in this machine's memory, with and without
// maxmemory: each is refused with RedisBloom's "Insufficient memory" error naming the size and
// the limit, and nothing is allocated.
func TestAbsurdSizes(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	for _, tt := range []struct {
		args     []string
		capacity uint64
		rate     float64
	}{
		{[]string{"BF.RESERVE", "k", "0.99", "1000000000000000", "NONSCALING"}, 1e15, 0.99},
		{[]string{"BF.RESERVE", "k", "1e-300", "1000000000000"}, 1e12, 1e-300 / 2},
		{[]string{"BF.INSERT", "k", "CAPACITY", "1000000000000000", "ITEMS", "a"}, 1e15, 0.01 / 2},
	} {
		m, _, _, err := bloom.RedisBloomSize(tt.capacity, tt.rate)
		if err != nil {
			t.Fatal(err)
		}
		want := refusal(s, "create", 32+64+m/8, keyOverhead+1)
		if v := c.do(tt.args...); string(v.Str) != want {
			t.Errorf("%s: %v, want %q", strings.Join(tt.args, " "), v, want)
		}
	}
	// Past what the sizing can describe at all (2^56 bits): RedisBloom's own error.
	if v := c.do("BF.RESERVE", "k", "0.01", "9999999999999999"); string(v.Str) != errCouldNotCreate {
		t.Errorf("capacity 9999999999999999: %v", v)
	}
	if v := c.do("DBSIZE"); v.Int != 0 {
		t.Fatalf("DBSIZE %d after refused reservations", v.Int)
	}
	// Growth past maxmemory: the item that needs a new sub-filter gets the OOM error, the others
	// are added, and the filter stays usable.
	c.do("CONFIG", "SET", "maxmemory", "1mb")
	if v := c.do("BF.RESERVE", "g", "0.01", "100", "EXPANSION", "100000"); string(v.Str) != "OK" {
		t.Fatal(v)
	}
	args := []string{"BF.MADD", "g"}
	for i := range 150 {
		args = append(args, fmt.Sprint("item-", i))
	}
	v := c.do(args...)
	oom, added := 0, 0
	for _, e := range v.Elems {
		switch {
		case e.IsError() && strings.HasPrefix(string(e.Str), "ERR Insufficient memory to grow filter: ") && strings.Contains(string(e.Str), "limit 1048576 bytes (1.00M, maxmemory)"):
			oom++
		case e.Int == 1:
			added++
		}
	}
	if oom == 0 || added < 95 || added > 100 {
		t.Fatalf("BF.MADD past maxmemory: %d added, %d OOM: %v", added, oom, v)
	}
	if v := c.do("BF.INFO", "g", "FILTERS"); v.Elems[0].Int != 1 {
		t.Fatalf("filters after refused growth: %v", v)
	}
	if v := c.do("BF.EXISTS", "g", "item-0"); v.Int != 1 {
		t.Fatal("item-0 lost after refused growth")
	}
	// Once over maxmemory, every deny-oom command is refused, as in Redis; reads still work.
	c.do("CONFIG", "SET", "maxmemory", "100")
	for _, args := range [][]string{{"BF.ADD", "g", "x"}, {"BF.RESERVE", "h", "0.01", "10"}, {"SET", "s", "v"}} {
		if v := c.do(args...); string(v.Str) != errOOM {
			t.Errorf("%s over maxmemory: %v", args[0], v)
		}
	}
	if v := c.do("BF.EXISTS", "g", "item-0"); v.Int != 1 {
		t.Fatal("BF.EXISTS refused over maxmemory")
	}
	// DEL gives the memory back.
	c.do("DEL", "g")
	if used := s.ks.used.Load(); used != 0 {
		t.Fatalf("%d bytes charged after DEL of every key", used)
	}
	if v := c.do("BF.RESERVE", "h", "0.01", "1"); string(v.Str) != refusal(s, "create", 32+64+8, keyOverhead+1) {
		t.Fatalf("a filter over a 100-byte maxmemory: %v", v)
	}
	c.do("CONFIG", "SET", "maxmemory", "0")
	if v := c.do("BF.RESERVE", "h", "0.01", "10"); string(v.Str) != "OK" {
		t.Fatal(v)
	}
}

// TestMemoryAccounting checks that the charged memory follows BF.INFO Size through creation,
// growth, RENAME, SET over a filter and DEL.
func TestMemoryAccounting(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "a", "0.01", "10")
	for i := range 100 {
		c.do("BF.ADD", "a", fmt.Sprint(i))
	}
	size := c.do("BF.INFO", "a", "SIZE").Elems[0].Int
	if got, want := s.ks.used.Load(), size+keyOverhead+1; got != want {
		t.Fatalf("charged %d, want BF.INFO Size %d + key", got, want)
	}
	c.do("RENAME", "a", "bbbb")
	if got, want := s.ks.used.Load(), size+keyOverhead+4; got != want {
		t.Fatalf("after RENAME charged %d, want %d", got, want)
	}
	c.do("SET", "bbbb", "12345")
	if got, want := s.ks.used.Load(), int64(keyOverhead+4+5); got != want {
		t.Fatalf("after SET over the filter charged %d, want %d", got, want)
	}
	c.do("DEL", "bbbb")
	if got := s.ks.used.Load(); got != 0 {
		t.Fatalf("after DEL charged %d", got)
	}
}
