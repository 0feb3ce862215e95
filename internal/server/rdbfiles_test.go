package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/redistest"
)

// redisBloomArgs returns the redis-server arguments that load RedisBloom from REDISBLOOM_SO, or
// nil (and false) when it is not set: filters are then left out of the tests with Redis.
func redisBloomArgs(t *testing.T) ([]string, bool) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Log("REDISBLOOM_SO is not set: strings only, no filters, in this test against redis-server")
		return nil, false
	}
	return []string{"--loadmodule", so}, true
}

// clientState describes every key a server holds, as a client sees it: type, expiry time
// (PEXPIRETIME), and the value (GET, or BF.INFO / CF.INFO and every BF.SCANDUMP / CF.SCANDUMP
// chunk), so that Redis and bloomd can be compared key by key.
func clientState(t *testing.T, c *rawClient) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range c.do("KEYS", "*").Elems {
		key := string(k.Str)
		typ := c.do("TYPE", key).Text()
		desc := typ + " expire=" + c.do("PEXPIRETIME", key).Text()
		switch typ {
		case "string":
			desc += " " + string(c.do("GET", key).Str)
		case "hash":
			// A large hash is a hash table in Redis, whose order is its own: compare the pairs.
			var pairs []string
			all := c.do("HGETALL", key).Elems
			for i := 0; i+1 < len(all); i += 2 {
				pairs = append(pairs, fmt.Sprintf("%q=%q", all[i].Str, all[i+1].Str))
			}
			slices.Sort(pairs)
			desc += " " + strings.Join(pairs, " ")
		case bloomTypeName, cuckooTypeName:
			prefix := "BF."
			if typ == cuckooTypeName {
				prefix = "CF."
			}
			desc += " " + c.do(prefix+"INFO", key).String()
			for it := int64(0); ; {
				d := c.do(prefix+"SCANDUMP", key, fmt.Sprint(it))
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

// fillKeys writes strings (short, integer-like, long and compressible, binary, with expiry
// times, a bitmap), hashes (small, with an expiry time, and large) and, with filters, Bloom filters (scalable and grown, non-scaling) and cuckoo filters,
// through c, each key name prefixed.
func fillKeys(t *testing.T, c *rawClient, prefix string, filters bool) {
	t.Helper()
	must := func(args ...string) {
		t.Helper()
		if v := c.do(args...); v.IsError() {
			t.Fatalf("%v: %v", args, v)
		}
	}
	must("SET", prefix+"s", "hello")
	must("SET", prefix+"n", "12345")
	must("SET", prefix+"long", strings.Repeat("abcdefgh", 500))
	must("SET", prefix+"bin", "\x00\xff\r\n")
	must("SET", prefix+"ttl", "soon", "PX", "3600000")
	must("SET", prefix+"far", "later", "EXAT", strconv.FormatInt(time.Now().Add(240*time.Hour).Unix(), 10))
	must("SETBIT", prefix+"bits", "100003", "1")
	must("HSET", prefix+"cfg", "size", "9585058", "hashIterations", "7", "expectedInsertions", "1000000")
	for i := range 600 { // past 512 fields: a hash table rather than a listpack in Redis's file
		must("HSET", prefix+"big", fmt.Sprint("field", i), strings.Repeat("v", i%100))
	}
	must("PEXPIRE", prefix+"cfg", "3600000")
	if !filters {
		return
	}
	must("BF.RESERVE", prefix+"bf", "0.01", "1000")
	must("BF.RESERVE", prefix+"grown", "0.01", "50", "EXPANSION", "2")
	must("BF.RESERVE", prefix+"flat", "0.001", "500", "NONSCALING")
	must("CF.RESERVE", prefix+"cf", "1000")
	for i := range 300 {
		must("BF.ADD", prefix+"bf", fmt.Sprint("a", i))
		must("BF.ADD", prefix+"grown", fmt.Sprint("g", i))
		must("BF.ADD", prefix+"flat", fmt.Sprint("f", i))
		must("CF.ADD", prefix+"cf", fmt.Sprint("c", i))
	}
	must("PEXPIRE", prefix+"bf", "7200000")
}

// startRedisIn starts redis-server with its data files in dir (dbfilename dump.rdb, no AOF).
func startRedisIn(t *testing.T, dir string, args []string) *redistest.Server {
	t.Helper()
	redistest.Require(t)
	rs, err := redistest.StartProgram("redis-server", "", func(port int, _ string) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""}, args...)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return rs
}

// TestRDBFilesWithRedis stops and starts Redis and bloomd on one directory in both orders: what
// Redis saved in dump.rdb, bloomd loads (with dbfilename dump.rdb, and with its own dbfilename
// where it has no files), and what bloomd saves in dump.rdb, Redis loads; every key answers as
// it did in the program that saved it: type, expiry time, value, and with REDISBLOOM_SO every
// filter's BF.INFO/CF.INFO and SCANDUMP chunks. Without the module, strings only.
func TestRDBFilesWithRedis(t *testing.T) {
	args, filters := redisBloomArgs(t)
	t.Run("redis-first", func(t *testing.T) {
		dir := t.TempDir()
		rs := startRedisIn(t, dir, args)
		rc := dial(t, rs.Addr)
		fillKeys(t, rc, "r:", filters)
		want := clientState(t, rc)
		if n := map[bool]int{false: 9, true: 13}[filters]; len(want) != n {
			t.Fatalf("Redis holds %d keys, want %d", len(want), n)
		}
		if v := rc.do("SAVE"); v.Text() != "OK" {
			t.Fatal(v)
		}
		rs.Stop()

		// bloomd with its own dbfilename: Redis's dump.rdb is loaded, as there are no
		// files of bloomd's; its first snapshot goes to dump.bdb.
		copyDir := t.TempDir()
		data, _ := os.ReadFile(filepath.Join(dir, "dump.rdb"))
		os.WriteFile(filepath.Join(copyDir, "dump.rdb"), data, 0o644)
		s := startDurable(t, copyDir, func(c *Config) { c.AppendOnly = true })
		compareStates(t, "bloomd (dump.bdb) after Redis", want, clientState(t, dial(t, s.addr())))
		stopDurable(t, s, false)
		if _, err := os.Stat(filepath.Join(copyDir, "dump.bdb")); err != nil {
			t.Errorf("no snapshot of bloomd's own after loading Redis's dump.rdb with appendonly: %v", err)
		}

		// bloomd with dbfilename dump.rdb, on Redis's directory; then writes and saves.
		s = startDurable(t, dir, func(c *Config) { c.DBFilename = "dump.rdb"; c.AppendOnly = true })
		bc := dial(t, s.addr())
		compareStates(t, "bloomd (dump.rdb) after Redis", want, clientState(t, bc))
		fillKeys(t, bc, "b:", filters)
		bc.do("DEL", "r:s")
		want = clientState(t, bc)
		stopDurable(t, s, true) // as SHUTDOWN SAVE, or SIGTERM with save rules

		// Redis starts on what bloomd saved.
		if err := rs.Restart(); err != nil {
			t.Fatal(err)
		}
		compareStates(t, "Redis after bloomd", want, clientState(t, dial(t, rs.Addr)))
	})
	t.Run("bloomd-first", func(t *testing.T) {
		dir := t.TempDir()
		s := startDurable(t, dir, func(c *Config) { c.DBFilename = "dump.rdb" })
		bc := dial(t, s.addr())
		fillKeys(t, bc, "b:", filters)
		want := clientState(t, bc)
		stopDurable(t, s, true)
		data, _ := os.ReadFile(filepath.Join(dir, "dump.rdb"))
		if !strings.HasPrefix(string(data), "REDIS0010") {
			t.Fatalf("dump.rdb starts with %q", data[:min(len(data), 9)])
		}

		rs := startRedisIn(t, dir, args)
		rc := dial(t, rs.Addr)
		compareStates(t, "Redis after bloomd", want, clientState(t, rc))
		fillKeys(t, rc, "r:", filters)
		rc.do("DEL", "b:n")
		want = clientState(t, rc)
		rc.do("SAVE")
		rs.Stop()

		// bloomd again, appendonly now: it loads what Redis saved and writes its own snapshot
		// at once, so that its log has a base; a restart loads both.
		s = startDurable(t, dir, func(c *Config) { c.DBFilename = "dump.rdb"; c.AppendOnly = true })
		bc = dial(t, s.addr())
		compareStates(t, "bloomd after Redis", want, clientState(t, bc))
		bc.do("SET", "after", "restart")
		want = clientState(t, bc)
		stopDurable(t, s, false)
		s = startDurable(t, dir, func(c *Config) { c.DBFilename = "dump.rdb"; c.AppendOnly = true })
		compareStates(t, "bloomd restarted", want, clientState(t, dial(t, s.addr())))
		names, _ := os.ReadDir(dir)
		var files []string
		for _, n := range names {
			files = append(files, n.Name())
		}
		if !slices.Contains(files, "appendonly.aof.2") {
			t.Errorf("files %v: no log after the snapshot taken at start", files)
		}
	})
}

// TestLoadRDBPastCeiling: an RDB file whose filters do not fit under the memory ceiling stops
// the start with persist.ErrNoMemory naming the filter and the file, and leaves the files as
// they were, as bloomd's own snapshot does (TestLoadPastCeiling); under a ceiling it fits, it
// loads.
func TestLoadRDBPastCeiling(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, func(c *Config) { c.DBFilename, c.AppendOnly = "dump.rdb", false })
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "small", "0.01", "1000")
	if v := c.do("BF.RESERVE", "big", "0.01", "1000000"); v.Text() != "OK" { // 1.4 MB
		t.Fatal(v)
	}
	c.do("SET", "s", "v")
	stopDurable(t, s, true)
	os.Remove(filepath.Join(dir, "dump.rdb.lock"))
	before := redistest.FileDigests(t, dir)
	err := loadUnder(t, dir, 1<<20) // dbfilename dump.bdb: Redis's dump.rdb is what loads
	if !errors.Is(err, persist.ErrNoMemory) || !strings.Contains(err.Error(), `filter "big"`) || !strings.Contains(err.Error(), "dump.rdb") ||
		!strings.Contains(err.Error(), "Insufficient memory to") {
		t.Fatalf("loading an RDB file past the ceiling: %v", err)
	}
	after := redistest.FileDigests(t, dir)
	delete(after, "dump.bdb.lock")
	if !maps.Equal(before, after) {
		t.Fatalf("a failed load changed the files: %v", slices.Collect(maps.Keys(after)))
	}
	if err := loadUnder(t, dir, 4<<20); err != nil {
		t.Fatalf("loading within the ceiling: %v", err)
	}
}

// TestRDBUnknownTypesSetting: a dump.rdb of Redis holding a list and a sorted set stops bloomd's
// start with the key's name and type, changing no file; with rdb-skip-unknown-types yes (in the
// config, or set with CONFIG SET before a later load) the rest loads. CONFIG GET shows it.
func TestRDBUnknownTypesSetting(t *testing.T) {
	dir := t.TempDir()
	rs := startRedisIn(t, dir, nil)
	rc := dial(t, rs.Addr)
	rc.do("SET", "kept", "yes")
	rc.do("RPUSH", "mylist", "a", "b")
	rc.do("ZADD", "myzset", "1", "m")
	rc.do("SAVE")
	rs.Stop()
	before := redistest.FileDigests(t, dir)

	cfg := DefaultConfig()
	cfg.Logger, cfg.Dir, cfg.Save, cfg.EventLoops, cfg.DBFilename = discardLogger(), dir, nil, testLoops, "dump.rdb"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.openStore(); err != nil {
		t.Fatal(err)
	}
	err = s.loadData()
	s.Shutdown(context.Background())
	s.closeData(false)
	if err == nil || !strings.Contains(err.Error(), "a type bloomd does not hold") || !strings.Contains(err.Error(), "rdb-skip-unknown-types yes") ||
		!(strings.Contains(err.Error(), `key "mylist" in db 0 is a list`) || strings.Contains(err.Error(), `key "myzset" in db 0 is a zset`)) {
		t.Fatalf("loading a list: %v", err)
	}
	after := redistest.FileDigests(t, dir)
	delete(after, "dump.rdb.lock")
	if !maps.Equal(before, after) {
		t.Fatal("the refused load changed the files")
	}

	s2 := startDurable(t, dir, func(c *Config) {
		c.DBFilename = "dump.rdb"
		if err := c.Set("rdb-skip-unknown-types", "yes"); err != nil {
			t.Fatal(err)
		}
	})
	c := dial(t, s2.addr())
	if v := c.do("KEYS", "*"); len(v.Elems) != 1 || string(v.Elems[0].Str) != "kept" {
		t.Fatalf("keys %v", v)
	}
	if v := c.do("CONFIG", "GET", "rdb-skip-unknown-types"); len(v.Elems) != 2 || v.Elems[1].Text() != "yes" {
		t.Fatalf("CONFIG GET: %v", v)
	}
	if v := c.do("CONFIG", "SET", "rdb-skip-unknown-types", "no"); v.Text() != "OK" {
		t.Fatal(v)
	}
	if v := c.do("CONFIG", "SET", "rdb-skip-unknown-types", "maybe"); !v.IsError() {
		t.Fatal(v)
	}
}
