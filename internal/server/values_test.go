package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// TestValuesParallelOneKey runs clients in parallel on one bitmap and one hash (SETBIT, GETBIT,
// BITFIELD INCRBY, HSET, HINCRBY, HINCRBYFLOAT): under -race it shows the values' locking, and
// the final state is exact (every bit, every increment). The journal, replayed, gives the same
// keyspace: its order is the order of the changes.
func TestValuesParallelOneKey(t *testing.T) { forEachIOMode(t, testValuesParallelOneKey) }

func testValuesParallelOneKey(t *testing.T) {
	j := &recordingJournal{}
	s := startServer(t, func(c *Config) { c.Journal = j })
	const clients, rounds = 6, 300
	var wg sync.WaitGroup
	for id := range clients {
		c := dial(t, s.addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				off := strconv.Itoa(id + k*clients)
				c.send([]byte("SETBIT"), []byte("bits"), []byte(off), []byte("1"))
				c.send([]byte("GETBIT"), []byte("bits"), []byte(off))
				c.send([]byte("BITFIELD"), []byte("bits"), []byte("INCRBY"), []byte("u32"), []byte("#10000"), []byte("1"))
				c.send([]byte("HINCRBY"), []byte("h"), []byte("n"), []byte("1"))
				c.send([]byte("HINCRBYFLOAT"), []byte("h"), []byte("x"), []byte("0.5"))
				c.send([]byte("HSET"), []byte("h"), []byte(fmt.Sprint("f", id, "-", k)), []byte(off))
				c.send([]byte("APPEND"), []byte("str"), []byte("ab"))
				for range 7 {
					c.read()
				}
			}
		}()
	}
	wg.Wait()
	c := dial(t, s.addr())
	n := int64(clients * rounds)
	if v := c.do("BITCOUNT", "bits", "0", strconv.FormatInt(n/8, 10)); v.Int != n {
		t.Errorf("BITCOUNT: %v, want %d", v, n)
	}
	if v := c.do("BITFIELD", "bits", "GET", "u32", "#10000"); len(v.Elems) != 1 || v.Elems[0].Int != n {
		t.Errorf("BITFIELD counter: %v, want %d", v, n)
	}
	if v := c.do("HGET", "h", "n"); v.Text() != strconv.FormatInt(n, 10) {
		t.Errorf("HINCRBY counter: %v, want %d", v, n)
	}
	if v := c.do("HGET", "h", "x"); v.Text() != strconv.FormatInt(n/2, 10) {
		t.Errorf("HINCRBYFLOAT counter: %v, want %d", v, n/2)
	}
	if v := c.do("HLEN", "h"); v.Int != n+2 {
		t.Errorf("HLEN: %v, want %d", v, n+2)
	}
	if v := c.do("STRLEN", "str"); v.Int != 2*n {
		t.Errorf("STRLEN: %v, want %d", v, 2*n)
	}
	compareStates(t, "parallel clients", state(t, s), state(t, replay(t, j.snapshot())))
}

// TestValuesReplication: a bloomd replica of a bloomd primary holds the same bitmaps, hashes
// and strings: those of the full sync (bitmaps copied while clients change them) and those of
// the stream after it.
func TestValuesReplication(t *testing.T) {
	ps, p := startReplServer(t)
	rs, r := startReplServer(t)
	write := func(phase string, n int) {
		for i := range n {
			p.do("SETBIT", "bits", strconv.Itoa(i*37%100000), "1")
			p.do("BITFIELD", "bits", "OVERFLOW", "SAT", "INCRBY", "u4", fmt.Sprint("#", i%50), "1")
			p.do("HSET", "h", fmt.Sprint(phase, i), strconv.Itoa(i))
			p.do("HINCRBY", "h", "count", "1")
			p.do("APPEND", "s", phase)
			if i%10 == 0 {
				p.do("HDEL", "h", fmt.Sprint(phase, i-5))
				p.do("SETRANGE", "s", "3", "xyz")
			}
		}
		p.do("BITOP", "XOR", "x", "bits", "s")
		p.do("MSET", "m1", phase, "m2", phase)
	}
	write("before", 300)
	// Writes go on while the replica syncs, so the snapshot copies values being changed.
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := dial(t, ps.addr())
		for i := range 2000 {
			c.do("SETBIT", "busy", strconv.Itoa(i*7919%1000000), "1")
			c.do("HINCRBY", "busyh", strconv.Itoa(i%30), "1")
		}
	}()
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatalf("REPLICAOF: %v", v)
	}
	<-done
	write("after", 300)
	waitSynced(t, p, r)
	compareStates(t, "replica", state(t, ps), state(t, rs))
	if v := r.do("HGET", "h", "count"); v.Text() != "600" {
		t.Errorf("replica's counter: %v", v)
	}
}

// TestValuesMemory: strings and hashes are charged to used_memory and MEMORY USAGE, and a SETBIT
// at a large offset charges the string's new length before allocating it: over maxmemory it
// is refused, and nothing is made.
func TestValuesMemory(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxMemory = 64 << 20 })
	c := dial(t, s.addr())
	used := func() int64 {
		n, _ := strconv.ParseInt(infoField(t, c, "memory", "used_memory"), 10, 64)
		return n
	}
	before := used()
	if v := c.do("SETBIT", "b", strconv.Itoa(8<<23-1), "1"); v.Int != 0 { // an 8 MiB string
		t.Fatalf("SETBIT: %v", v)
	}
	if d := used() - before; d < 8<<20 || d > 8<<20+4096 {
		t.Errorf("an 8 MiB bitmap charges %d bytes", d)
	}
	if v := c.do("MEMORY", "USAGE", "b"); v.Int < 8<<20 {
		t.Errorf("MEMORY USAGE of an 8 MiB bitmap: %v", v)
	}
	// 4e9 bits: a 500 MB string, over the 64 MiB limit.
	if v := c.do("SETBIT", "huge", "4000000000", "1"); v.Text() != errOOM {
		t.Errorf("SETBIT at 4e9 over maxmemory: %v", v)
	}
	if v := c.do("SETBIT", "b", "4000000000", "1"); v.Text() != errOOM {
		t.Errorf("SETBIT growing to 500 MB over maxmemory: %v", v)
	}
	if v := c.do("EXISTS", "huge"); v.Int != 0 {
		t.Errorf("a refused SETBIT made its key: %v", v)
	}
	if v := c.do("STRLEN", "b"); v.Int != 8<<20 {
		t.Errorf("a refused SETBIT changed the string: %v", v)
	}
	if v := c.do("SETRANGE", "b", "100000000", "x"); v.Text() != errOOM {
		t.Errorf("SETRANGE to 100 MB over maxmemory: %v", v)
	}
	mid := used()
	for i := range 1000 {
		c.do("HSET", "h", fmt.Sprint("field", i), strings.Repeat("v", 100))
	}
	if d := used() - mid; d < 1000*100 {
		t.Errorf("1000 fields of 100 bytes charge %d bytes", d)
	}
	if v := c.do("MEMORY", "USAGE", "h"); v.Int < 1000*100 {
		t.Errorf("MEMORY USAGE of the hash: %v", v)
	}
	c.do("DEL", "b", "h")
	if d := used() - before; d != 0 {
		t.Errorf("%d bytes still charged after DEL", d)
	}
	// INFO keyspace, SCAN TYPE and TYPE know the types.
	c.do("SET", "s", "v")
	c.do("HSET", "h", "f", "v")
	c.do("BF.ADD", "f", "x")
	if got := infoField(t, c, "keyspace", "db0"); !strings.HasPrefix(got, "keys=3,") {
		t.Errorf("INFO keyspace: %q", got)
	}
	for typ, want := range map[string]string{"hash": "h", "string": "s", "MBbloom--": "f"} {
		v := c.do("SCAN", "0", "TYPE", typ, "COUNT", "1000")
		if len(v.Elems[1].Elems) != 1 || v.Elems[1].Elems[0].Text() != want {
			t.Errorf("SCAN TYPE %s: %v", typ, v)
		}
	}
	// WRONGTYPE across the types.
	for _, cmd := range [][]string{{"BF.ADD", "h", "x"}, {"CF.ADD", "s", "x"}, {"SETBIT", "f", "0", "1"},
		{"HSET", "s", "f", "v"}, {"GETBIT", "h", "0"}, {"HGET", "f", "x"}, {"BF.ADD", "s", "x"}} {
		if v := c.do(cmd...); !strings.HasPrefix(v.Text(), "WRONGTYPE") {
			t.Errorf("%v: %v", cmd, v)
		}
	}
}

// TestValuesACL: ACL key patterns and the @string, @bitmap and @hash categories apply to the new
// commands as in Redis: the same rules and commands give the same replies from redis-server.
func TestValuesACL(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	for _, addr := range []string{rs.Addr, s.addr()} {
		c := dial(t, addr)
		c.do("ACL", "SETUSER", "bits", "on", ">pw", "~b:*", "+@bitmap", "+@read")
		c.do("ACL", "SETUSER", "hashes", "on", ">pw", "%R~h:*", "%W~h:w*", "+@hash")
		c.do("SET", "b:x", "v")
	}
	for _, step := range []struct {
		user string
		cmd  []string
	}{
		{"bits", []string{"SETBIT", "b:1", "0", "1"}},
		{"bits", []string{"SETBIT", "other", "0", "1"}},
		{"bits", []string{"BITOP", "OR", "b:2", "b:1", "other"}},
		{"bits", []string{"BITFIELD_RO", "b:1", "GET", "u8", "0"}},
		{"bits", []string{"GET", "b:1"}},
		{"bits", []string{"SET", "b:1", "x"}},
		{"bits", []string{"HSET", "b:h", "f", "v"}},
		{"hashes", []string{"HSET", "h:w1", "f", "v"}},
		{"hashes", []string{"HSET", "h:r1", "f", "v"}},
		{"hashes", []string{"HGET", "h:w1", "f"}},
		{"hashes", []string{"HGETALL", "h:r1"}},
		{"hashes", []string{"HINCRBY", "h:w1", "n", "1"}},
		{"hashes", []string{"GET", "h:w1"}},
	} {
		var replies []string
		for _, addr := range []string{rs.Addr, s.addr()} {
			c := dial(t, addr)
			c.do("AUTH", step.user, "pw")
			replies = append(replies, c.do(step.cmd...).Text())
		}
		if replies[0] != replies[1] {
			t.Errorf("%s: %v\nredis-server: %q\nbloomd:       %q", step.user, step.cmd, replies[0], replies[1])
		}
	}
}

// TestValuesCommandInfo compares COMMAND INFO's name, arity, flags and key positions, and
// COMMAND DOCS' summary, since and group, of the string, bitmap and hash commands with a live
// redis-server 7.0 (TestACLCategoriesMatchRedis compares their categories and key specs).
func TestValuesCommandInfo(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	b, r := dial(t, s.addr()), dial(t, rs.Addr)
	for _, name := range strings.Fields(`get set setnx mget mset strlen getrange setrange append setbit getbit
		bitcount bitpos bitop bitfield bitfield_ro hset hmset hsetnx hget hmget hgetall hkeys hvals hdel
		hexists hlen hstrlen hincrby hincrbyfloat hrandfield hscan`) {
		mine, theirs := b.do("COMMAND", "INFO", name).Elems[0], r.do("COMMAND", "INFO", name).Elems[0]
		for i := range 6 {
			if mine.Elems[i].String() != theirs.Elems[i].String() {
				t.Errorf("%s: COMMAND INFO field %d: bloomd %s, redis-server %s", name, i, mine.Elems[i], theirs.Elems[i])
			}
		}
		docs := func(c *rawClient) string {
			d := c.do("COMMAND", "DOCS", name).Elems[1]
			out := ""
			for i := 0; i+1 < len(d.Elems); i += 2 {
				switch d.Elems[i].Text() {
				case "summary", "since", "group":
					out += d.Elems[i].Text() + "=" + d.Elems[i+1].Text() + " "
				}
			}
			return out
		}
		if name == "get" || name == "set" || name == "strlen" {
			continue // registered before, with newer Redis's summaries
		}
		if m, th := docs(b), docs(r); m != th {
			t.Errorf("%s: COMMAND DOCS bloomd %q, redis-server %q", name, m, th)
		}
	}
}

// TestValuesHotPathAllocs: SETBIT and GETBIT on an existing bitmap (the hot path of filters
// kept in plain strings), GET, STRLEN, BITCOUNT, HGET and HEXISTS allocate nothing in steady
// state.
func TestValuesHotPathAllocs(t *testing.T) {
	s := startServer(t, nil)
	s.Exec([]byte("SETBIT"), []byte("bits"), []byte("100000"), []byte("0"))
	s.Exec([]byte("HSET"), []byte("h"), []byte("size"), []byte("958505"))
	var in []byte
	cmds := 0
	for i := range 16 {
		off := []byte(strconv.Itoa(i * 6151))
		for _, cmd := range [][][]byte{
			{[]byte("SETBIT"), []byte("bits"), off, []byte("1")},
			{[]byte("GETBIT"), []byte("bits"), off},
			{[]byte("HGET"), []byte("h"), []byte("size")},
		} {
			in = resp.AppendCommand(in, cmd...)
			cmds++
		}
	}
	for _, cmd := range [][][]byte{
		{[]byte("GET"), []byte("bits")},
		{[]byte("STRLEN"), []byte("bits")},
		{[]byte("BITCOUNT"), []byte("bits"), []byte("0"), []byte("-1"), []byte("BIT")},
		{[]byte("HEXISTS"), []byte("h"), []byte("size")},
	} {
		in = resp.AppendCommand(in, cmd...)
		cmds++
	}
	batchAllocFree(t, s, in, cmds)
}
