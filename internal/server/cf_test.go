package server

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

// TestCFAbsurdSizes: filters that cannot fit are refused before allocation, with RedisBloom's
// replies and the sizes; growth past maxmemory fails the one
// item that needs it and leaves the filter usable; memory is given back by DEL.
func TestCFAbsurdSizes(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	for _, args := range [][]string{
		{"CF.RESERVE", "k", "9223372036854775807"},
		{"CF.RESERVE", "k", "1000000000000000000", "BUCKETSIZE", "1"},
		{"CF.INSERT", "k", "CAPACITY", "4000000000000000000", "ITEMS", "a"},
	} {
		if v := c.do(args...); !strings.HasPrefix(string(v.Str), "ERR Insufficient memory to create filter: ") || !strings.Contains(string(v.Str), " bytes asked, limit ") && !strings.Contains(string(v.Str), ") asked, limit ") {
			t.Errorf("%s: %v", strings.Join(args, " "), v)
		}
	}
	// Headers that pass RedisBloom's check but describe 2^55 buckets (on which RedisBloom aborts).
	for _, h := range []string{cfHeaderBytes(1, 1<<55, 0, 1, 1, 20, 1), cfHeaderBytes(1, 1<<55, 0, 3, 1, 20, 64)} {
		if v := c.do("CF.LOADCHUNK", "k", "1", h); string(v.Str) != "Couldn't create filter!" {
			t.Errorf("huge header: %v", v)
		}
	}
	if v := c.do("DBSIZE"); v.Int != 0 {
		t.Fatalf("DBSIZE %d after refused filters", v.Int)
	}
	used := s.ks.used.Load()
	c.do("CONFIG", "SET", "maxmemory", "1mb")
	if v, want := c.do("CF.RESERVE", "big", "4000000"), refusal(s, "create", 4<<20, keyOverhead+3); string(v.Str) != want {
		t.Errorf("CF.RESERVE past maxmemory: %v, want %s", v, want)
	}
	if v, want := c.do("CF.LOADCHUNK", "big", "1", cfHeaderBytes(1, 1<<21, 0, 1, 2, 20, 1)), refusal(s, "create", 4<<20, keyOverhead+3); string(v.Str) != want {
		t.Errorf("CF.LOADCHUNK header past maxmemory: %v, want %s", v, want)
	}
	if got := s.ks.used.Load(); got != used {
		t.Fatalf("refused filters left %d bytes charged", got-used)
	}
	// A 1 KiB filter whose second sub-filter (32 MiB) passes 1 MiB.
	if v := c.do("CF.RESERVE", "g", "1024", "EXPANSION", "32768", "MAXITERATIONS", "2"); string(v.Str) != "OK" {
		t.Fatal(v)
	}
	args := []string{"CF.INSERT", "g", "ITEMS"}
	for i := range 2000 {
		args = append(args, fmt.Sprint("item-", i))
	}
	v := c.do(args...)
	oom, added := 0, 0
	for _, e := range v.Elems {
		switch {
		case e.IsError() && string(e.Str) == errOOM:
			oom++
		case e.Int == 1:
			added++
		}
	}
	if oom == 0 || added < 500 || added+oom != 2000 {
		t.Fatalf("CF.INSERT past maxmemory: %d added, %d OOM", added, oom)
	}
	if v := c.do("CF.ADD", "g", "one-more-that-needs-room"); string(v.Str) != errOOM && v.Int != 1 {
		t.Fatalf("CF.ADD: %v", v)
	}
	if v := c.do("CF.EXISTS", "g", "item-0"); v.Int != 1 {
		t.Fatal("item-0 lost after refused growth")
	}
	c.do("CONFIG", "SET", "maxmemory", "0")
	c.do("DEL", "g")
	if got := s.ks.used.Load(); got != used {
		t.Fatalf("DEL left %d bytes charged", got-used)
	}
}

// TestCFConcurrentClients runs writers and readers on one cuckoo filter from several
// connections (meaningful under -race), with snapshots and log rewrites taken meanwhile. Every
// item a writer added and did not remove is present throughout; after a restart the filter is
// the same to the byte, which holds only if the log records each filter's writes in the order
// they took effect and snapshots copy a consistent instant.
func TestCFConcurrentClients(t *testing.T) { forEachIOMode(t, testCFConcurrentClients) }

func testCFConcurrentClients(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, nil)
	admin := dial(t, s.addr())
	admin.do("CF.RESERVE", "shared", "1000", "EXPANSION", "2")
	var wg sync.WaitGroup
	for id := range 4 {
		wg.Go(func() {
			c := dial(t, s.addr())
			for n := range 300 {
				a, b := fmt.Sprint("w", id, "-", n, "a"), fmt.Sprint("w", id, "-", n, "b")
				if v := c.do("CF.INSERT", "shared", "ITEMS", a, b); v.IsError() || len(v.Elems) != 2 {
					t.Errorf("CF.INSERT: %v", v)
					return
				}
				if v := c.do("CF.DEL", "shared", a); v.Int != 1 {
					t.Errorf("CF.DEL of an added item: %v", v)
					return
				}
				if v := c.do("CF.EXISTS", "shared", b); v.Int != 1 {
					t.Errorf("item %s absent after CF.INSERT", b)
					return
				}
				if n%50 == 0 {
					c.do("CF.COMPACT", "shared")
					c.do("CF.ADD", fmt.Sprint("own", id), b)
				}
			}
		})
		wg.Go(func() {
			c := dial(t, s.addr())
			for n := range 300 {
				c.do("CF.MEXISTS", "shared", "w0-1b", "w1-2b", "nothing")
				c.do("CF.COUNT", "shared", "w2-3b")
				if n%20 == 0 {
					c.do("CF.INFO", "shared")
					c.do("CF.SCANDUMP", "shared", "1")
				}
			}
		})
	}
	for i := range 4 {
		cmd := []string{"BGREWRITEAOF", "BGSAVE"}[i%2]
		if v := admin.do(cmd); v.IsError() {
			t.Fatalf("%s: %s", cmd, v.Str)
		}
		waitBackground(t, admin)
	}
	wg.Wait()
	for id := range 4 {
		for n := range 300 {
			if v := admin.do("CF.EXISTS", "shared", fmt.Sprint("w", id, "-", n, "b")); v.Int != 1 {
				t.Fatalf("item w%d-%db lost", id, n)
			}
		}
	}
	if v := admin.do("CF.INFO", "shared"); v.Elems[7].Int != 1200 {
		t.Fatalf("items inserted %d, want 1200", v.Elems[7].Int)
	}
	before := state(t, s)
	stopDurable(t, s, false)
	s = startDurable(t, dir, nil)
	compareStates(t, "after restart", before, state(t, s))
}

// TestCFReserveTooLargeSizes: a cuckoo filter too large for the memory limit, or for any
// machine, is refused with the sizes, as BF.RESERVE's refusal gives them: the bytes asked, the
// limit and what sets it, and what is in use.
func TestCFReserveTooLargeSizes(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MemoryProbe = fakeCgroup(t, 160<<20, 16<<20) })
	c := dial(t, s.addr())
	used := keyOverhead + 1
	for _, tc := range []struct {
		args  []string
		asked uint64
	}{
		{[]string{"CF.RESERVE", "y", "99999999999999"}, 1 << 47},                               // 2^46 buckets of 2
		{[]string{"CF.RESERVE", "y", "9223372036854775807"}, math.MaxInt64},                    // past 2^56 buckets
		{[]string{"CF.RESERVE", "y", "1000000000000000000", "BUCKETSIZE", "1"}, 1 << 60},       // 2^60 buckets of 1
		{[]string{"CF.RESERVE", "y", "200000000"}, 1 << 28},                                    // past the cgroup only
		{[]string{"CF.INSERT", "y", "CAPACITY", "4000000000000000000", "ITEMS", "a"}, 1 << 62}, // past 2^56 buckets
		{[]string{"CF.INSERT", "y", "CAPACITY", "99999999999999", "ITEMS", "a"}, 1 << 47},
	} {
		want := refusal(s, "create", tc.asked, used)
		if v := c.do(tc.args...); string(v.Str) != want {
			t.Errorf("%s:\n got %v\nwant %s", strings.Join(tc.args, " "), v, want)
		}
	}
	c.do("CONFIG", "SET", "maxmemory", "1mb")
	want := refusal(s, "create", 1<<22, used) // 2^21 buckets of 2
	if v := c.do("CF.RESERVE", "y", "4000000"); string(v.Str) != want || !strings.Contains(want, "maxmemory") {
		t.Errorf("CF.RESERVE past maxmemory:\n got %v\nwant %s", v, want)
	}
	if v := c.do("DBSIZE"); v.Int != 0 {
		t.Errorf("DBSIZE %d after refused filters", v.Int)
	}
}
