package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

// TestCopyCommandInfo: COPY's COMMAND INFO, every field, and its COMMAND DOCS summary, since
// and group are a live redis-server 7.0's. (testdata/commands-copy.txt compares its replies,
// errors and ACL key permissions; notify-events.txt its keyspace events.)
func TestCopyCommandInfo(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	b, r := dial(t, s.addr()), dial(t, rs.Addr)
	if mine, theirs := b.do("COMMAND", "INFO", "copy"), r.do("COMMAND", "INFO", "copy"); mine.String() != theirs.String() {
		t.Errorf("COMMAND INFO copy:\nbloomd       %s\nredis-server %s", mine, theirs)
	}
	docs := func(c *rawClient) string {
		d := c.do("COMMAND", "DOCS", "copy").Elems[1]
		out := ""
		for i := 0; i+1 < len(d.Elems); i += 2 {
			switch d.Elems[i].Text() {
			case "summary", "since", "group":
				out += d.Elems[i].Text() + "=" + d.Elems[i+1].Text() + " "
			}
		}
		return out
	}
	if m, th := docs(b), docs(r); m != th {
		t.Errorf("COMMAND DOCS copy: bloomd %q, redis-server %q", m, th)
	}
}

// dump returns a filter's BF.INFO or CF.INFO, expiry time and whole dump (every BF.SCANDUMP or
// CF.SCANDUMP chunk, which CF.SCANDUMP gives only for a filter holding items), for comparing
// two filters.
func dump(t *testing.T, c *rawClient, key string) string {
	t.Helper()
	cmd := "BF."
	if c.do("TYPE", key).Text() == cuckooTypeName {
		cmd = "CF."
	}
	out := c.do(cmd+"INFO", key).String() + " expire=" + c.do("PEXPIRETIME", key).Text()
	for it := int64(0); ; {
		v := c.do(cmd+"SCANDUMP", key, fmt.Sprint(it))
		if v.IsError() || len(v.Elems) != 2 {
			t.Fatalf("%sSCANDUMP %s %d: %v", cmd, key, it, v)
		}
		if it = v.Elems[0].Int; it == 0 {
			return out
		}
		out += fmt.Sprintf(" %d:%x", it, v.Elems[1].Str)
	}
}

// TestCopyFilters copies Bloom filters (one whose first sub-filter is larger than a 16 MiB dump
// chunk, a chain of several sub-filters with an expiry time, one with no bit set) and cuckoo
// filters (several sub-filters with a deletion; one holding nothing): each copy has the source's
// info, expiry and every byte of its BF.SCANDUMP (CF.SCANDUMP), is charged what the source is,
// and changes apart from it. The journal holds each copy as its dump between MULTI and EXEC, the
// chunks of zero bytes left out, and replays to the same keyspace. A copy the memory limit does
// not leave room for is refused before anything is allocated, changing nothing.
func TestCopyFilters(t *testing.T) {
	j := &recordingJournal{}
	s := startServer(t, func(c *Config) { c.Journal = j })
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "big", "0.0001", "7100000") // 17 MB: two chunks
	items := []string{"BF.MADD", "big"}
	for i := range 2000 {
		items = append(items, fmt.Sprint("item-", i))
	}
	c.do(items...)
	c.do("BF.RESERVE", "chain", "0.01", "10")
	for i := range 100 {
		c.do("BF.ADD", "chain", fmt.Sprint("c", i))
	}
	c.do("PEXPIREAT", "chain", "4102444800000")
	c.do("BF.RESERVE", "zero", "0.01", "1000000")
	c.do("CF.RESERVE", "cf", "64", "EXPANSION", "2")
	for i := range 400 {
		c.do("CF.ADD", "cf", fmt.Sprint("c", i%300))
	}
	c.do("CF.DEL", "cf", "c7")
	c.do("CF.RESERVE", "cfzero", "5000")
	if v := c.do("BF.INFO", "chain", "FILTERS").Elems[0]; v.Int < 3 {
		t.Fatalf("chain has %v sub-filters", v)
	}
	if v := c.do("CF.INFO", "cf").Elems[5]; v.Int < 2 {
		t.Fatalf("cf has %v sub-filters", v)
	}

	for _, src := range []string{"big", "chain", "zero", "cf", "cfzero"} {
		dst := src + "-copy"
		before := len(j.snapshot())
		used := s.ks.used.Load()
		if v := c.do("COPY", src, dst); v.Int != 1 {
			t.Fatalf("COPY %s %s: %v", src, dst, v)
		}
		if a, b := dump(t, c, src), dump(t, c, dst); a != b {
			t.Errorf("%s: the copy differs:\n%.300s\n%.300s", src, a, b)
		}
		charged := c.do("MEMORY", "USAGE", dst).Int
		if want := c.do("MEMORY", "USAGE", src).Int + int64(len(dst)-len(src)); charged != want {
			t.Errorf("%s: the copy is charged %d bytes, the source %d", src, charged, want)
		}
		if got := s.ks.used.Load() - used; got != charged {
			t.Errorf("%s: used memory grew by %d, the copy is charged %d", src, got, charged)
		}
		recs := j.snapshot()[before:]
		var names []string
		for _, r := range recs {
			names = append(names, strings.ToUpper(string(r[0])))
		}
		load := "BF.LOADCHUNK"
		if strings.HasPrefix(src, "cf") {
			load = "CF.LOADCHUNK"
		}
		want := map[string]string{
			"big":    "MULTI " + load + " " + load + " " + load + " EXEC",
			"chain":  "MULTI " + strings.Repeat(load+" ", 1+int(c.do("BF.INFO", "chain", "FILTERS").Elems[0].Int)) + "PEXPIREAT EXEC",
			"zero":   "MULTI " + load + " EXEC",
			"cf":     "MULTI " + strings.Repeat(load+" ", 1+int(c.do("CF.INFO", "cf").Elems[5].Int)) + "EXEC",
			"cfzero": "MULTI " + load + " EXEC",
		}[src]
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%s: journaled %s, want %s", src, got, want)
		}
	}
	// Copies change apart from their sources.
	c.do("BF.ADD", "chain-copy", "only-in-copy")
	c.do("CF.DEL", "cf-copy", "c8")
	if c.do("BF.EXISTS", "chain", "only-in-copy").Int != 0 || c.do("CF.EXISTS", "cf", "c8").Int != 1 {
		t.Error("a change to a copy reached its source")
	}
	// REPLACE over a key of another type, journaled with the DEL of the replaced key.
	c.do("SET", "str", "v")
	before := len(j.snapshot())
	if v := c.do("COPY", "chain", "str", "REPLACE"); v.Int != 1 {
		t.Fatalf("COPY chain str REPLACE: %v", v)
	}
	if r := j.snapshot()[before:]; len(r) < 3 || string(r[1][0]) != "DEL" || string(r[1][1]) != "str" {
		t.Errorf("COPY REPLACE journaled %q", r)
	}
	if a, b := dump(t, c, "chain"), dump(t, c, "str"); a != b {
		t.Error("the copy over a string differs from its source")
	}

	compareStates(t, "copies", state(t, s), state(t, replay(t, j.snapshot())))

	// Refused by the memory limit: nothing allocated, charged, created or journaled.
	size := c.do("MEMORY", "USAGE", "big").Int
	c.do("CONFIG", "SET", "maxmemory", fmt.Sprint(s.ks.used.Load()+size/2))
	c.do("SET", "bigstring", strings.Repeat("x", int(size/4)))
	used, records := s.ks.used.Load(), len(j.snapshot())
	for _, cmd := range [][]string{{"COPY", "big", "big2"}, {"COPY", "bigstring", "big2"}, {"COPY", "big", "chain", "REPLACE"}} {
		v := c.do(cmd...)
		if !v.IsError() || !strings.Contains(v.Text(), "memory") {
			t.Errorf("%v over the limit: %v", cmd, v)
		}
	}
	if c.do("EXISTS", "big2").Int != 0 || s.ks.used.Load() != used || len(j.snapshot()) != records {
		t.Errorf("refused copies left something: used %d -> %d, %d records more", used, s.ks.used.Load(), len(j.snapshot())-records)
	}
	if c.do("BF.EXISTS", "chain", "only-in-copy").Int != 0 || c.do("TYPE", "chain").Text() != "MBbloom--" {
		t.Error("a refused COPY REPLACE changed its destination")
	}
}

// TestCopyReplayOverLaterBits is the snapshot case for COPY: a filter's header and a string's
// length taken at one instant, a COPY of each after it, more writes to both sources, and then
// their bits and bytes copied (the snapshot's copy, while clients went on). Replaying the journal
// from that instant over them must give the copies what they held when made, which replaying
// COPY itself would not: the sources now hold the later writes.
func TestCopyReplayOverLaterBits(t *testing.T) {
	j := &recordingJournal{}
	a := startServer(t, func(c *Config) { c.Journal = j })
	ca := dial(t, a.addr())
	ca.do("BF.RESERVE", "f", "0.01", "1000")
	for i := range 5 {
		ca.do("BF.ADD", "f", fmt.Sprint("item-", i))
	}
	ca.do("SET", "s", "abcdef")
	header := ca.do("BF.SCANDUMP", "f", "0").Elems[1].Str // the instant T
	length := ca.do("STRLEN", "s").Int
	from := len(j.snapshot())
	ca.do("COPY", "f", "g")
	ca.do("COPY", "s", "t")
	for i := 5; i < 40; i++ {
		ca.do("BF.ADD", "f", fmt.Sprint("item-", i))
	}
	ca.do("SETBIT", "s", "3", "1")
	ca.do("SETRANGE", "s", "4", "XY")
	// Bits and bytes copied after T.
	chunk := ca.do("BF.SCANDUMP", "f", "1")
	sBytes := ca.do("GETRANGE", "s", "0", fmt.Sprint(length-1)).Str
	b := startServer(t, nil)
	b.Exec([]byte("BF.LOADCHUNK"), []byte("f"), []byte("1"), header)
	b.Exec([]byte("BF.LOADCHUNK"), []byte("f"), []byte(fmt.Sprint(chunk.Elems[0].Int)), chunk.Elems[1].Str)
	b.Exec([]byte("SET"), []byte("s"), sBytes)
	b.SetLoading(true)
	for _, r := range j.snapshot()[from:] {
		b.Exec(r...)
	}
	b.SetLoading(false)
	compareStates(t, "copies replayed over later bits", state(t, a), state(t, b))
}

// TestCopyWhileAdding: COPY runs alone, so a copy made while another client adds to its source
// is the source at one instant between two adds, and the journal, in which the copy's records
// fall between those adds' records, replays to the same copies.
func TestCopyWhileAdding(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		j := &recordingJournal{}
		s := startServer(t, func(c *Config) { c.Journal = j })
		adder, copier := dial(t, s.addr()), dial(t, s.addr())
		adder.do("BF.RESERVE", "f", "0.01", "100")
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 3000 {
				adder.do("BF.ADD", "f", fmt.Sprint("item-", i))
			}
		})
		for i := range 30 {
			if v := copier.do("COPY", "f", fmt.Sprint("copy-", i%10), "REPLACE"); v.Int != 1 {
				t.Errorf("COPY: %v", v)
			}
		}
		wg.Wait()
		compareStates(t, "copies made while adding", state(t, s), state(t, replay(t, j.snapshot())))
	})
}

// TestCopyCharges: a copied string or hash is charged what its source is (plus the difference of
// the keys' lengths), the old value of a replaced destination is given back, and a copy past the
// memory limit is refused with -OOM before anything is allocated.
func TestCopyCharges(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("SET", "str", strings.Repeat("s", 10000))
	c.do("SETRANGE", "str", "20000", "x") // a string whose allocation is larger than its length
	for i := range 50 {
		c.do("HSET", "hash", fmt.Sprint("field-", i), strings.Repeat("v", i))
	}
	c.do("SET", "old", strings.Repeat("o", 5000))
	for _, tc := range []struct{ src, dst string }{{"str", "str-copy"}, {"hash", "hash-copy"}, {"str", "old"}} {
		used := s.ks.used.Load()
		var oldMem int64
		if c.do("EXISTS", tc.dst).Int == 1 {
			oldMem = c.do("MEMORY", "USAGE", tc.dst).Int
		}
		if v := c.do("COPY", tc.src, tc.dst, "REPLACE"); v.Int != 1 {
			t.Fatalf("COPY %s %s: %v", tc.src, tc.dst, v)
		}
		charged := c.do("MEMORY", "USAGE", tc.dst).Int
		if want := c.do("MEMORY", "USAGE", tc.src).Int + int64(len(tc.dst)-len(tc.src)); charged > want {
			t.Errorf("%s: the copy is charged %d bytes, the source %d", tc.src, charged, want)
		}
		if got := s.ks.used.Load() - used; got != charged-oldMem {
			t.Errorf("%s -> %s: used memory changed by %d; the copy is charged %d and the old value %d", tc.src, tc.dst, got, charged, oldMem)
		}
	}
	c.do("CONFIG", "SET", "maxmemory", fmt.Sprint(s.ks.used.Load()+1000))
	used := s.ks.used.Load()
	for _, src := range []string{"str", "hash"} {
		if v := c.do("COPY", src, "refused"); !strings.HasPrefix(v.Text(), "OOM ") {
			t.Errorf("COPY %s over the limit: %v", src, v)
		}
	}
	if c.do("EXISTS", "refused").Int != 0 || s.ks.used.Load() != used {
		t.Error("a refused copy left a key or a charge")
	}
}
