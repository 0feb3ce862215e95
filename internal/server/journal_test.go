package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// recordingJournal keeps every record in memory.
type recordingJournal struct {
	mu      sync.Mutex
	records [][][]byte
	waits   int
}

func (j *recordingJournal) Append(argv [][]byte) func() error {
	cp := make([][]byte, len(argv))
	for i, a := range argv {
		cp[i] = bytes.Clone(a)
	}
	j.mu.Lock()
	j.records = append(j.records, cp)
	j.mu.Unlock()
	return j.wait
}

func (j *recordingJournal) wait() error {
	j.mu.Lock()
	j.waits++
	j.mu.Unlock()
	return nil
}

func (j *recordingJournal) snapshot() [][][]byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.records)
}

// state describes a keyspace completely, for comparing two servers: every key with its type, its
// expiry and its value (a filter's whole BF.SCANDUMP).
func state(t *testing.T, s *Server) map[string]string {
	t.Helper()
	do := func(args ...string) resp.Value {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		v, err := resp.NewReader(bytes.NewReader(s.Exec(bs...))).ReadReply()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	out := map[string]string{}
	for _, k := range do("KEYS", "*").Elems {
		key := string(k.Str)
		typ := string(do("TYPE", key).Str)
		desc := typ + " expire=" + do("PEXPIRETIME", key).Text()
		if typ == "string" {
			desc += " " + string(do("GET", key).Str)
		} else if typ == "hash" {
			for _, f := range do("HGETALL", key).Elems {
				desc += fmt.Sprintf(" %q", f.Str)
			}
		} else if typ == cuckooTypeName {
			desc += " " + do("CF.DEBUG", key).Text()
			for it := int64(0); ; {
				d := do("CF.SCANDUMP", key, fmt.Sprint(it))
				if d.Elems[0].Int == 0 {
					break
				}
				desc += fmt.Sprintf(" %d:%x", d.Elems[0].Int, d.Elems[1].Str)
				it = d.Elems[0].Int
			}
		} else {
			for it := int64(0); ; {
				d := do("BF.SCANDUMP", key, fmt.Sprint(it))
				if d.Elems[0].Int == 0 {
					break
				}
				desc += fmt.Sprintf(" %d:%x", d.Elems[0].Int, d.Elems[1].Str)
				it = d.Elems[0].Int
			}
		}
		out[key] = desc
	}
	return out
}

// replay runs journal records on a fresh server, as loading an append-only file would.
func replay(t *testing.T, records [][][]byte) *Server {
	t.Helper()
	s := startServer(t, nil)
	s.SetLoading(true)
	for _, r := range records {
		s.Exec(r...)
	}
	s.SetLoading(false)
	return s
}

func compareStates(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d keys live, %d after replay", what, len(a), len(b))
		for k, v := range b {
			if _, ok := a[k]; !ok {
				t.Errorf("%s: only after replay: %q %.100s", what, k, v)
			}
		}
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s: key %q\nlive:   %.300s\nreplay: %.300s", what, k, v, b[k])
		}
	}
}

// TestJournalReplay runs every transcript, and a random single-client workload, on a server with
// a journal, replays the journal on a fresh server and requires the same keyspace: every key, its
// type, expiry and bits. This is the contract the append-only file builds on.
func TestJournalReplay(t *testing.T) {
	files, _ := filepath.Glob("testdata/redisbloom/*.txt")
	more, _ := filepath.Glob("testdata/commands-*.txt")
	for _, path := range append(files, more...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			j := &recordingJournal{}
			s := startServer(t, func(c *Config) {
				c.Journal = j
				if strings.Contains(path, "auth") {
					c.Requirepass = "secret"
				}
			})
			c := dial(t, s.addr())
			for _, b := range readTranscript(t, path) {
				c.send(b.args...)
				c.read()
			}
			compareStates(t, path, state(t, s), state(t, replay(t, j.snapshot())))
		})
	}
	t.Run("random", func(t *testing.T) {
		j := &recordingJournal{}
		s := startServer(t, func(c *Config) { c.Journal = j })
		c := dial(t, s.addr())
		rng := rand.New(rand.NewPCG(7, 8))
		key := func() string { return fmt.Sprint("k", rng.IntN(8)) }
		far := fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())
		for range 3000 {
			switch rng.IntN(24) {
			case 0:
				c.do("BF.RESERVE", key(), "0.01", fmt.Sprint(1+rng.IntN(50)), "EXPANSION", fmt.Sprint(1+rng.IntN(3)))
			case 1, 2, 3:
				c.do("BF.ADD", key(), fmt.Sprint(rng.IntN(500)))
			case 4:
				c.do("BF.MADD", key(), fmt.Sprint(rng.IntN(500)), fmt.Sprint(rng.IntN(500)))
			case 5:
				c.do("BF.INSERT", key(), "CAPACITY", "20", "NONSCALING", "ITEMS", fmt.Sprint(rng.IntN(500)))
			case 6:
				c.do("DEL", key())
			case 7:
				c.do("RENAME", key(), key())
			case 8:
				c.do("PEXPIREAT", key(), far)
			case 9:
				c.do("PERSIST", key())
			case 10:
				c.do("SET", key(), "v", "PXAT", far)
			case 11:
				c.do("EXPIRE", key(), "-1")
			case 12:
				c.do("MULTI")
				c.do("BF.ADD", key(), "tx")
				c.do("DEL", key())
				c.do("EXEC")
			case 13:
				src := key()
				for it := int64(0); ; {
					v := c.do("BF.SCANDUMP", src, fmt.Sprint(it))
					if v.IsError() || v.Elems[0].Int == 0 {
						break
					}
					it = v.Elems[0].Int
					c.do("BF.LOADCHUNK", src+"-copy", fmt.Sprint(it), string(v.Elems[1].Str))
				}
			case 14:
				c.do("SETBIT", key(), fmt.Sprint(rng.IntN(200)), fmt.Sprint(rng.IntN(2)))
			case 15:
				c.do("SETRANGE", key(), fmt.Sprint(rng.IntN(20)), "xyz")
			case 16:
				c.do("APPEND", key(), fmt.Sprint(rng.IntN(10)))
			case 17:
				c.do("BITFIELD", key(), "OVERFLOW", "SAT", "INCRBY", "u4", fmt.Sprint("#", rng.IntN(40)), "3",
					"OVERFLOW", "FAIL", "INCRBY", "i8", fmt.Sprint(rng.IntN(300)), "50")
			case 18:
				c.do("HSET", key(), fmt.Sprint("f", rng.IntN(5)), fmt.Sprint(rng.IntN(100)))
			case 19:
				c.do("HINCRBY", key(), fmt.Sprint("f", rng.IntN(5)), fmt.Sprint(rng.IntN(100)-50))
				c.do("HINCRBYFLOAT", key(), fmt.Sprint("g", rng.IntN(5)), "0.1")
			case 20:
				c.do("HDEL", key(), fmt.Sprint("f", rng.IntN(5)), fmt.Sprint("g", rng.IntN(5)))
			case 21:
				c.do("BITOP", []string{"AND", "OR", "XOR"}[rng.IntN(3)], key(), key(), key())
			case 22:
				c.do("COPY", key(), key())
			case 23:
				c.do("COPY", key(), key(), "REPLACE")
			}
		}
		live := state(t, s)
		if len(live) < 3 {
			t.Fatalf("the workload left only %d keys", len(live))
		}
		compareStates(t, "random workload", live, state(t, replay(t, j.snapshot())))
	})
}

// TestJournalOrder checks what the journal sees: rewritten commands for expiry, MULTI/EXEC around
// a transaction's writes, nothing for reads or failed writes, and a wait per batch.
func TestJournalOrder(t *testing.T) {
	j := &recordingJournal{}
	s := startServer(t, func(c *Config) { c.Journal = j })
	c := dial(t, s.addr())
	c.do("BF.ADD", "f", "a")
	c.do("BF.ADD", "f", "a") // changes nothing: not journaled
	c.do("BF.EXISTS", "f", "a")
	c.do("BF.RESERVE", "f", "0.01", "10") // fails: not journaled
	c.do("EXPIRE", "f", "100")
	c.do("MULTI")
	c.do("BF.ADD", "f", "b")
	c.do("BF.EXISTS", "f", "b")
	c.do("EXEC")
	c.do("MULTI")
	c.do("BF.EXISTS", "f", "b")
	c.do("EXEC")                                                // no writes: no MULTI/EXEC records
	c.do("BF.MADD", "f", "a", "c", "b", "d")                    // only the new items are journaled
	c.do("BF.INSERT", "g", "CAPACITY", "50", "ITEMS", "x", "x") // the options stay
	c.do("DEL", "f")
	var got []string
	for _, r := range j.snapshot() {
		got = append(got, string(bytes.Join(r, []byte(" "))))
	}
	if len(got) != 8 || !strings.HasPrefix(got[1], "PEXPIREAT f ") {
		t.Fatalf("journal: %q", got)
	}
	got[1] = "PEXPIREAT f <t>"
	// An add that creates its filter is recorded with every parameter (see bfCreateArgs).
	want := []string{"BF.INSERT f CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS a", "PEXPIREAT f <t>", "MULTI", "BF.ADD f b", "EXEC",
		"BF.MADD f c d", "BF.INSERT g CAPACITY 50 ERROR 0.01 EXPANSION 2 ITEMS x", "DEL f"}
	if !slices.Equal(got, want) {
		t.Fatalf("journal:\n%q\nwant\n%q", got, want)
	}
	if j.waits != 6 {
		t.Fatalf("%d waits for 6 batches with writes", j.waits)
	}
}

// TestJournalExpiry checks that active expiry journals a DEL.
func TestJournalExpiry(t *testing.T) {
	j := &recordingJournal{}
	s := startServer(t, func(c *Config) { c.Journal = j })
	c := dial(t, s.addr())
	for i := range 20 {
		c.do("BF.ADD", fmt.Sprint("day:", i), "x")
		c.do("PEXPIRE", fmt.Sprint("day:", i), "50")
	}
	c.do("BF.ADD", "keep", "x")
	deadline := time.Now().Add(5 * time.Second)
	for c.do("DBSIZE").Int != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE still %d after 5s", c.do("DBSIZE").Int)
		}
		time.Sleep(20 * time.Millisecond)
	}
	dels := 0
	for _, r := range j.snapshot() {
		if string(r[0]) == "DEL" {
			dels++
		}
	}
	if dels != 20 {
		t.Fatalf("%d DEL records for 20 expired keys", dels)
	}
	if v := c.do("INFO", "stats"); !strings.Contains(string(v.Str), "expired_keys:20\r\n") {
		t.Fatalf("INFO stats: %s", v.Str)
	}
}

// TestConcurrentClients runs clients that add to shared filters while others create, expire,
// rename, delete and load their own keys, in transactions too, with a journal (under -race this
// checks the locking). Then it replays the journal: shared filters must have the same bits
// (their counts may differ when two clients add one new item at once), private keys must be
// identical.
func TestConcurrentClients(t *testing.T) { forEachIOMode(t, testConcurrentClients) }

func testConcurrentClients(t *testing.T) {
	j := &recordingJournal{}
	s := startServer(t, func(c *Config) { c.Journal = j })
	setup := dial(t, s.addr())
	for i := range 4 {
		setup.do("BF.RESERVE", fmt.Sprint("shared", i), "0.01", "100000", "NONSCALING")
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s.addr())
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			own := func() string { return fmt.Sprintf("w%d:%d", w, rng.IntN(4)) }
			for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
				switch rng.IntN(10) {
				case 0, 1, 2, 3:
					var args [][]byte
					args = append(args, []byte("BF.MADD"), []byte(fmt.Sprint("shared", rng.IntN(4))))
					for range 1 + rng.IntN(16) {
						args = append(args, []byte(fmt.Sprint(rng.IntN(50000))))
					}
					c.send(args...)
					c.read()
				case 4:
					c.do("BF.EXISTS", fmt.Sprint("shared", rng.IntN(4)), fmt.Sprint(rng.IntN(50000)))
				case 5:
					c.do("BF.MADD", own(), fmt.Sprint(rng.IntN(300)), fmt.Sprint(rng.IntN(300)))
				case 6:
					c.do("DEL", own())
				case 7:
					c.do("RENAME", own(), own())
				case 8:
					c.do("PEXPIRE", own(), fmt.Sprint(rng.IntN(30)))
				case 9:
					c.do("MULTI")
					c.do("BF.ADD", own(), "t")
					c.do("BF.ADD", fmt.Sprint("shared", rng.IntN(4)), "t")
					c.do("EXEC")
				}
			}
		}()
	}
	wg.Wait()
	if n := s.stats.panics.Load(); n != 0 {
		t.Fatalf("%d panics", n)
	}
	// Let expiry settle, so both sides see the same keys.
	time.Sleep(50 * time.Millisecond)
	live := state(t, s)
	again := state(t, replay(t, j.snapshot()))
	for k, v := range live {
		if strings.HasPrefix(k, "shared") {
			// Compare the bits only: the header carries counts.
			if bitsOf(v) != bitsOf(again[k]) {
				t.Errorf("%s: bits differ after replay", k)
			}
			delete(live, k)
			delete(again, k)
		}
	}
	compareStates(t, "private keys", live, again)
	if t.Failed() {
		for k := range again {
			if _, ok := live[k]; ok {
				continue
			}
			for i, r := range j.snapshot() {
				for _, a := range r[1:] {
					if string(a) == k {
						t.Logf("record %d: %q", i, r)
						break
					}
				}
			}
		}
	}
}

// bitsOf drops the header (iterator 1) from a state description.
func bitsOf(desc string) string {
	f := strings.Fields(desc)
	var out []string
	for _, w := range f[2:] {
		if !strings.HasPrefix(w, "1:") {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// TestReplayOverLaterBits is the snapshot case: a filter's header (links and counts) taken at
// one instant, its bits copied later while adds went on, then the journal from that instant
// replayed in loading mode. Counts and growth must come out exactly as the original's, although
// the copied bits already hold some of the replayed items.
func TestReplayOverLaterBits(t *testing.T) {
	j := &recordingJournal{}
	a := startServer(t, func(c *Config) { c.Journal = j })
	ca := dial(t, a.addr())
	ca.do("BF.RESERVE", "f", "0.01", "10")
	for i := range 5 {
		ca.do("BF.ADD", "f", fmt.Sprint("item-", i))
	}
	header := ca.do("BF.SCANDUMP", "f", "0").Elems[1].Str // the instant T
	from := len(j.snapshot())
	for i := 5; i < 40; i++ {
		ca.do("BF.ADD", "f", fmt.Sprint("item-", i))
	}
	// Bits copied after T: link 0's array as it is now.
	chunk := ca.do("BF.SCANDUMP", "f", "1")
	b := startServer(t, nil)
	b.Exec([]byte("BF.LOADCHUNK"), []byte("f"), []byte("1"), header)
	b.Exec([]byte("BF.LOADCHUNK"), []byte("f"), []byte(fmt.Sprint(chunk.Elems[0].Int)), chunk.Elems[1].Str)
	b.SetLoading(true)
	for _, r := range j.snapshot()[from:] {
		b.Exec(r...)
	}
	b.SetLoading(false)
	compareStates(t, "replay over later bits", state(t, a), state(t, b))
}
