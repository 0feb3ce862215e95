package server

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

// moveByDump copies every key of from to to with DUMP and RESTORE ... ABSTTL (the expiry time
// exact), and returns the payloads by key.
func moveByDump(t *testing.T, from, to *rawClient) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, k := range from.do("KEYS", "*").Elems {
		key := string(k.Str)
		p := from.do("DUMP", key)
		if p.IsError() || p.Str == nil {
			t.Fatalf("DUMP %s: %v", key, p)
		}
		at := from.do("PEXPIRETIME", key).Int
		if at < 0 {
			at = 0
		}
		if v := to.do("RESTORE", key, fmt.Sprint(at), string(p.Str), "ABSTTL"); v.Text() != "OK" {
			t.Fatalf("RESTORE %s: %v", key, v)
		}
		out[key] = bytes.Clone(p.Str)
	}
	return out
}

// TestDumpRestoreWithRedis moves every key from a real redis-server to bloomd with DUMP and
// RESTORE, and back to a fresh redis-server: strings (integer-encoded, compressed, binary, with
// expiry times) and, with REDISBLOOM_SO, Bloom filters (scalable and grown, non-scaling) and
// cuckoo filters. Each side must hold the same keys as the other (type, expiry time, value,
// BF.INFO/CF.INFO and every SCANDUMP chunk), and bloomd's DUMP payloads must be Redis's byte
// for byte.
func TestDumpRestoreWithRedis(t *testing.T) {
	args, filters := redisBloomArgs(t)
	rs := redistest.New(t, &redistest.Options{Args: args})
	rc := dial(t, rs.Addr)
	fillKeys(t, rc, "k:", filters)
	s := startServer(t, nil)
	bc := dial(t, s.addr())
	theirs := moveByDump(t, rc, bc)
	want := clientState(t, rc)
	compareStates(t, "bloomd after RESTORE of Redis's payloads", want, clientState(t, bc))
	for key, p := range theirs {
		if mine := bc.do("DUMP", key).Str; !bytes.Equal(mine, p) {
			t.Errorf("DUMP %s: bloomd's payload differs from Redis's\nbloomd %x\nRedis  %x", key, mine[:min(len(mine), 64)], p[:min(len(p), 64)])
		}
	}
	back := redistest.New(t, &redistest.Options{Args: args})
	moveByDump(t, bc, dial(t, back.Addr))
	compareStates(t, "Redis after RESTORE of bloomd's payloads", want, clientState(t, dial(t, back.Addr)))
}

// TestRestoreFilters: a filter's payload restores into a key with its counts and bits, is
// journaled (a restart from the log and from a snapshot gives it back), REPLACE replaces a key
// of another type, and a filter that does not fit under maxmemory is refused with RedisBloom's
// memory error, leaving no key.
func TestRestoreFilters(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, func(c *Config) { c.AppendOnly = true })
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "bf", "0.01", "100")
	c.do("CF.RESERVE", "cf", "100")
	for i := range 500 {
		c.do("BF.ADD", "bf", fmt.Sprint(i))
		c.do("CF.ADD", "cf", fmt.Sprint(i))
	}
	c.do("BF.RESERVE", "big", "0.001", "2000000") // 3.6 MB
	bf, cf, big := c.do("DUMP", "bf").Str, c.do("DUMP", "cf").Str, c.do("DUMP", "big").Str
	c.do("SET", "taken", "x")
	for _, step := range [][]string{
		{"RESTORE", "bf2", "0", string(bf)},
		{"RESTORE", "cf2", "0", string(cf)},
		{"RESTORE", "taken", "0", string(bf), "REPLACE"},
		{"RESTORE", "cf3", "100000000", string(cf)},
	} {
		if v := c.do(step...); v.Text() != "OK" {
			t.Fatalf("%s %s: %v", step[0], step[1], v)
		}
	}
	for _, pair := range [][2]string{{"bf", "bf2"}, {"cf", "cf2"}, {"bf", "taken"}, {"cf", "cf3"}} {
		want, got := clientState(t, c)[pair[0]], clientState(t, c)[pair[1]]
		if strings.SplitN(want, " ", 3)[2] != strings.SplitN(got, " ", 3)[2] {
			t.Fatalf("%s restored as\n%.200s\nwant\n%.200s", pair[1], got, want)
		}
	}
	want := clientState(t, c)
	stopDurable(t, s, false)
	s = startDurable(t, dir, func(c *Config) { c.AppendOnly = true })
	c = dial(t, s.addr())
	compareStates(t, "after a restart from the log", want, clientState(t, c))
	if v := c.do("BGREWRITEAOF"); v.IsError() {
		t.Fatal(v)
	}
	waitBackground(t, c)
	stopDurable(t, s, false)
	s = startDurable(t, dir, func(c *Config) { c.AppendOnly = true })
	c = dial(t, s.addr())
	compareStates(t, "after a restart from the snapshot", want, clientState(t, c))

	c.do("CONFIG", "SET", "maxmemory", fmt.Sprint(s.ks.used.Load()+1<<20))
	v := c.do("RESTORE", "big2", "0", string(big))
	if !strings.HasPrefix(v.Text(), "ERR Insufficient memory to create filter: ") {
		t.Fatalf("a filter over maxmemory: %v", v)
	}
	if v := c.do("EXISTS", "big2"); v.Int != 0 {
		t.Fatal("the refused filter's key exists")
	}
}

// TestDumpCommandInfo: COMMAND INFO of DUMP, RESTORE, RESTORE-ASKING and MIGRATE is
// redis-server 7.0's: name, arity, flags, key positions, ACL categories and key specs (all but
// the tips, which bloomd does not report for any command).
func TestDumpCommandInfo(t *testing.T) {
	rs := redistest.New(t, nil)
	r := dial(t, rs.Addr)
	b := dial(t, startServer(t, nil).addr())
	for _, name := range []string{"dump", "restore", "restore-asking", "migrate"} {
		mine, theirs := b.do("COMMAND", "INFO", name).Elems[0], r.do("COMMAND", "INFO", name).Elems[0]
		if len(mine.Elems) != 10 {
			t.Errorf("%s: %v", name, mine)
			continue
		}
		for i := range 10 {
			if i == 7 {
				continue
			}
			if got, want := mine.Elems[i].String(), theirs.Elems[i].String(); got != want {
				t.Errorf("%s field %d: bloomd %s\nredis-server %s", name, i, got, want)
			}
		}
	}
}

// TestDumpPastCeiling: a DUMP whose payload does not fit under the memory ceiling beside the
// keyspace is refused, naming the sizes, rather than taking the process past it.
func TestDumpPastCeiling(t *testing.T) {
	const used = 1 << 20
	s := startServer(t, func(c *Config) { c.MemoryProbe = fakeCgroup(t, used+64<<20+5<<20, used) }) // a ceiling of 5 MiB
	c := dial(t, s.addr())
	if v := c.do("BF.RESERVE", "f", "0.001", "2000000"); v.Text() != "OK" { // 3.6 MB
		t.Fatal(v)
	}
	v := c.do("DUMP", "f")
	if !strings.HasPrefix(v.Text(), "ERR Insufficient memory to dump the value: ") || !strings.Contains(v.Text(), "cgroup") {
		t.Fatalf("DUMP past the ceiling: %v", v)
	}
	c.do("BF.RESERVE", "small", "0.01", "1000")
	if v := c.do("DUMP", "small"); v.IsError() {
		t.Fatalf("DUMP of a small filter: %v", v)
	}
}

// TestRestoreAndMigrateReplicate: a RESTORE on a primary reaches its replica as the same key
// (expiry time and bits), and a MIGRATE's deletion as DEL.
func TestRestoreAndMigrateReplicate(t *testing.T) {
	ps, p := startReplServer(t)
	_, r := startReplServer(t)
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatal(v)
	}
	p.do("BF.RESERVE", "f", "0.01", "1000")
	for i := range 100 {
		p.do("BF.ADD", "f", fmt.Sprint(i))
	}
	payload := string(p.do("DUMP", "f").Str)
	if v := p.do("RESTORE", "g", "100000", payload); v.Text() != "OK" {
		t.Fatal(v)
	}
	waitSynced(t, p, r)
	if !bytes.Equal(scandump(t, p, "g"), scandump(t, r, "g")) || p.do("PEXPIRETIME", "g").Int != r.do("PEXPIRETIME", "g").Int {
		t.Fatal("the replica's restored filter differs")
	}
	target := startServer(t, nil)
	_, port, _ := net.SplitHostPort(target.addr())
	if v := p.do("MIGRATE", "127.0.0.1", port, "g", "0", "5000"); v.Text() != "OK" {
		t.Fatal(v)
	}
	waitSynced(t, p, r)
	if v := r.do("EXISTS", "g", "f"); v.Int != 1 {
		t.Fatalf("the replica holds %d of g and f after g moved", v.Int)
	}
}

// TestMigrateBindSourceAddr: MIGRATE's connection comes from bind-source-addr, as the replica
// link's does.
func TestMigrateBindSourceAddr(t *testing.T) {
	target := startServer(t, nil)
	src := startServer(t, func(c *Config) { c.Replication.BindSourceAddr = "127.0.0.2" })
	c := dial(t, src.addr())
	c.do("SET", "k", "v")
	_, port, _ := net.SplitHostPort(target.addr())
	if v := c.do("MIGRATE", "127.0.0.1", port, "k", "0", "5000"); v.Text() != "OK" {
		t.Fatal(v)
	}
	list := dial(t, target.addr()).do("CLIENT", "LIST").Text()
	if !strings.Contains(list, "addr=127.0.0.2:") {
		t.Fatalf("the target's clients:\n%s", list)
	}
}
