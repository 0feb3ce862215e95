package persist

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/redisbloom"
)

func writeRDB(t testing.TB, h SnapshotHeader, items []Item, opts RDBOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := WriteRDB(&b, h, items, opts)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteRDB: %d bytes, %v (buffer %d)", n, err, b.Len())
	}
	return b.Bytes()
}

func readRDB(data []byte, opts RDBOptions) (RDBLoad, []Item, error) {
	s := &chainSink{}
	ld, err := ReadRDB(bytes.NewReader(data), int64(len(data)), "dump.rdb", s, opts)
	return ld, s.complete(), err
}

// TestRDBRoundTrip: a snapshot written as an RDB file (compressed or not, with or without its
// checksum) reads back to the same keys, expiry times, values and filters, with bloomd's header
// in two aux fields; the file is Redis 7.0's version 10, and the rdb package reads it as such.
func TestRDBRoundTrip(t *testing.T) {
	items := testItems(t, !testing.Short())
	h := SnapshotHeader{Lineage: 0xabc, LogSeq: 7, Created: 1700000000000}
	for _, opts := range []RDBOptions{{}, {NoCompression: true}, {NoChecksum: true}} {
		data := writeRDB(t, h, items, opts)
		if !bytes.HasPrefix(data, []byte("REDIS0010")) {
			t.Fatalf("header %q", data[:9])
		}
		ld, got, err := readRDB(data, RDBOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ld.Header != h || ld.Version != rdb.Version70 || ld.Stats.Keys != len(items) || len(ld.Skipped) != 0 {
			t.Fatalf("%+v: load %+v", opts, ld)
		}
		sameItems(t, got, items)
		rd, _ := rdb.NewReader(bytes.NewReader(data), nil)
		for {
			if _, err := rd.Next(); err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
		}
		aux := map[string]string{}
		for _, a := range rd.Aux() {
			aux[a.Name] = a.Value
		}
		if aux["redis-ver"] != "7.0.15" || aux["ctime"] != "1700000000" || aux[auxLineage] != "0000000000000abc" || aux[auxLogSeq] != "7" {
			t.Fatalf("aux fields %v", aux)
		}
	}
	// A file Redis wrote has no lineage: the header says so.
	ld, _, err := readRDB(writeRDB(t, SnapshotHeader{Created: 1700000000000}, items[:1], RDBOptions{}), RDBOptions{})
	if err != nil || ld.Header != (SnapshotHeader{Created: 1700000000000}) {
		t.Fatalf("a file without bloomd's aux fields: %+v %v", ld.Header, err)
	}
}

// TestRDBHeaderFromTheMomentOfTheSnapshot: as in bloomd's own format, the links and counts are
// those of the snapshot's instant (Links and Count), the bits the chain's current ones.
func TestRDBHeaderFromTheMomentOfTheSnapshot(t *testing.T) {
	ch, _ := redisbloom.NewChain(10, 0.01, 2, false, nil)
	for i := range 5 {
		ch.Add([]byte{byte(i)})
	}
	links, count := ch.NumFilters(), ch.Card()
	for i := range 100 {
		ch.Add([]byte{byte(i), 1})
	}
	data := writeRDB(t, SnapshotHeader{}, []Item{{Key: "f", Chain: ch, Links: links, Count: count}}, RDBOptions{})
	_, got, err := readRDB(data, RDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Chain.NumFilters() != links || got[0].Chain.Card() != count {
		t.Fatalf("loaded %d links, %d items; want %d, %d", got[0].Chain.NumFilters(), got[0].Chain.Card(), links, count)
	}
}

// TestOtherFormatNamed: each reader, handed the other format, says what the file is and does not
// call it damaged.
func TestOtherFormatNamed(t *testing.T) {
	items := testItems(t, false)
	rdbData := writeRDB(t, SnapshotHeader{}, items, RDBOptions{})
	_, _, err := readSnap(rdbData, 0)
	if !errors.Is(err, ErrOtherFormat) || errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), "is a Redis RDB file (version 10), not a bloomd snapshot") {
		t.Errorf("ReadSnapshot of an RDB file: %v", err)
	}
	_, _, err = readRDB(writeSnap(t, items), RDBOptions{})
	if !errors.Is(err, ErrOtherFormat) || errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), "is a bloomd snapshot, not a Redis RDB file") {
		t.Errorf("ReadRDB of a snapshot: %v", err)
	}
	// A damaged RDB file is damaged, and says where.
	bad := bytes.Clone(rdbData)
	bad[len(bad)/2] ^= 0xff
	_, _, err = readRDB(bad, RDBOptions{})
	if !errors.Is(err, ErrRDBDamaged) || !errors.Is(err, bloom.ErrCorrupt) {
		t.Errorf("a damaged RDB file: %v", err)
	}
}

// TestRDBUnknownTypes reads the file of the rdb package's tests that Redis 7.0 wrote with lists,
// sets, sorted sets, a stream, RedisBloom's count-min sketch and a function library: refused by
// default with the first key's name and type and how to skip them; with SkipUnknown, loaded
// without them, each type counted. A key of a database other than 0 is refused or skipped
// the same way.
func TestRDBUnknownTypes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "rdb", "testdata", "other.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = readRDB(data, RDBOptions{})
	if !errors.Is(err, rdb.ErrUnsupported) || !strings.Contains(err.Error(), "a type bloomd does not hold") ||
		!strings.Contains(err.Error(), "rdb-skip-unknown-types yes") {
		t.Fatalf("default: %v", err)
	}
	ld, got, err := readRDB(data, RDBOptions{SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if ld.Skipped["list"] == 0 || ld.Skipped["zset"] == 0 || ld.Skipped["stream"] == 0 || ld.Stats.Keys != len(got) {
		t.Fatalf("skipped %v, %d keys loaded (%d handed over)", ld.Skipped, ld.Stats.Keys, len(got))
	}
	t.Logf("skipped: %s", describeSkipped(ld.Skipped))

	// bloom-compressed.rdb has hashes, which load, and keys in database 1.
	data, err = os.ReadFile(filepath.Join("..", "rdb", "testdata", "bloom-compressed.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	ld, _, err = readRDB(data, RDBOptions{SkipUnknown: true})
	if err != nil || ld.Skipped["db 1"] == 0 || ld.Skipped["hash"] != 0 || ld.Stats.Hashes == 0 || ld.Stats.Filters == 0 {
		t.Fatalf("skipping database 1: %+v %v", ld, err)
	}
	var b bytes.Buffer
	w, _ := rdb.NewWriter(&b, nil, nil)
	w.SelectDB(1, 1, 0)
	w.WriteString([]byte("elsewhere"), []byte("v"), rdb.KeyMeta{})
	w.Close()
	_, _, err = readRDB(b.Bytes(), RDBOptions{})
	if !errors.Is(err, rdb.ErrUnsupported) || !strings.Contains(err.Error(), `key "elsewhere" in db 1`) || !strings.Contains(err.Error(), "bloomd has one database") {
		t.Fatalf("a key of database 1: %v", err)
	}
}

// TestRDBMemoryLimit: a filter that the sink's memory hook refuses stops the load with the
// sink's error (ErrNoMemory), before its bits are allocated.
func TestRDBMemoryLimit(t *testing.T) {
	data := writeRDB(t, SnapshotHeader{}, testItems(t, false), RDBOptions{})
	s := &chainSink{limit: 1000}
	_, err := ReadRDB(bytes.NewReader(data), int64(len(data)), "dump.rdb", s, RDBOptions{})
	if !errors.Is(err, ErrNoMemory) || s.used > 1000 {
		t.Fatalf("%v (%d bytes charged)", err, s.used)
	}
}

func rdbStore(c *Config) { c.DBFilename = "dump.rdb" }

// TestStoreRDB: with a dbfilename ending in .rdb, snapshots are RDB files carrying the lineage
// and the log after them, so a restart loads the file and replays that log, as with bloomd's own
// format.
func TestStoreRDB(t *testing.T) {
	dir := t.TempDir()
	st, ks, err := load(t, dir, rdbStore)
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k before")
	ks.capture = testItems(t, false)
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k after")
	st.Close(false)
	if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.2", "dump.rdb"}) {
		t.Fatalf("files after a snapshot: %v", got)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if !bytes.HasPrefix(data, []byte("REDIS0010")) {
		t.Fatalf("dump.rdb starts with %q", data[:9])
	}
	_, ks2, err := load(t, dir, rdbStore)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ks2.replayed, []string{"BF.ADD k after"}) {
		t.Fatalf("replayed %q", ks2.replayed)
	}
	sameItems(t, ks2.complete(), ks.capture)

	// bloomd's own format under the .rdb name loads too (a bloomd that wrote its format to
	// Debian's dump.rdb), and the next snapshot is an RDB file.
	dir = t.TempDir()
	st, ks, _ = load(t, dir, nil)
	ks.capture = testItems(t, false)
	st.Save()
	st.Close(false)
	os.Rename(filepath.Join(dir, "dump.bdb"), filepath.Join(dir, "dump.rdb"))
	st, ks2, err = load(t, dir, rdbStore)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, ks2.complete(), ks.capture)
	ks2.capture = ks.capture
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "dump.rdb")); !bytes.HasPrefix(data, []byte("REDIS")) {
		t.Fatal("the snapshot after loading bloomd's format under dump.rdb is not an RDB file")
	}
}

// redisFile writes items as Redis would: an RDB file without bloomd's aux fields.
func redisFile(t *testing.T, path string, items []Item) {
	t.Helper()
	if err := os.WriteFile(path, writeRDB(t, SnapshotHeader{Created: 1700000000000}, items, RDBOptions{}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStoreRedisWroteTheRDB: an RDB file that Redis wrote (no lineage) replaces the snapshot an
// earlier bloomd's logs followed. Empty logs are removed; with appendonly the store writes a
// snapshot at once, so that the new log has a base of bloomd's, and a restart loads both. A
// log that holds writes is refused, changing no file: the histories went apart.
func TestStoreRedisWroteTheRDB(t *testing.T) {
	dir := t.TempDir()
	st, ks, _ := load(t, dir, rdbStore)
	ks.capture = []Item{{Key: "old", Value: []byte("x")}}
	st.Save()
	st.Close(false) // leaves dump.rdb and an empty appendonly.aof.2
	items := testItems(t, false)
	redisFile(t, filepath.Join(dir, "dump.rdb"), items)
	st, ks, err := load(t, dir, func(c *Config) { rdbStore(c); c.RDB.NoCompression = true })
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, ks.complete(), items)
	write(t, st, "BF.ADD k new")
	st.Close(false)
	if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.2", "dump.rdb"}) {
		t.Fatalf("files: %v", got)
	}
	st, ks, err = load(t, dir, rdbStore)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ks.replayed, []string{"BF.ADD k new"}) || len(ks.items) != len(items) {
		t.Fatalf("restart: replayed %q, %d keys", ks.replayed, len(ks.items))
	}
	st.Close(false)

	// Redis writes dump.rdb again while bloomd's log holds a write: refused, nothing changed.
	redisFile(t, filepath.Join(dir, "dump.rdb"), items[:1])
	before := fileSums(t, dir)
	_, _, err = load(t, dir, rdbStore)
	if err == nil || !strings.Contains(err.Error(), "histories went apart") || !strings.Contains(err.Error(), "appendonly.aof.2") {
		t.Fatalf("a log with writes after a file Redis wrote: %v", err)
	}
	if after := fileSums(t, dir); !slices.Equal(before, after) {
		t.Fatal("the refused load changed the files")
	}
}

// TestStoreLoadsRedisDumpRDB: in a directory with none of bloomd's files but Redis's dump.rdb,
// the store loads dump.rdb; its own snapshots go to dbfilename (dump.bdb), in bloomd's format,
// which later starts load.
func TestStoreLoadsRedisDumpRDB(t *testing.T) {
	for _, appendonly := range []bool{true, false} {
		dir := t.TempDir()
		items := testItems(t, false)
		redisFile(t, filepath.Join(dir, "dump.rdb"), items)
		st, ks, err := load(t, dir, func(c *Config) { c.AppendOnly = appendonly })
		if err != nil {
			t.Fatal(err)
		}
		sameItems(t, ks.complete(), items)
		if !appendonly {
			st.Close(false)
			if got := files(t, dir); !slices.Equal(got, []string{"dump.rdb"}) {
				t.Fatalf("files without appendonly: %v", got)
			}
			continue
		}
		write(t, st, "BF.ADD k new")
		st.Close(false)
		if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.2", "dump.bdb", "dump.rdb"}) {
			t.Fatalf("files: %v", got)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "dump.bdb")); !bytes.HasPrefix(data, []byte(snapMagic)) {
			t.Fatal("dump.bdb is not bloomd's snapshot")
		}
		os.WriteFile(filepath.Join(dir, "dump.rdb"), []byte("not read any more"), 0o644)
		_, ks, err = load(t, dir, nil)
		if err != nil || !slices.Equal(ks.replayed, []string{"BF.ADD k new"}) {
			t.Fatalf("restart: %v, replayed %q", err, ks.replayed)
		}
	}
}

func fileSums(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range files(t, dir) {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		out = append(out, n+":"+string(b))
	}
	return out
}

// TestCheckLogOnRDB: check-aof handed an RDB file says what it is and what it holds; a damaged
// one is reported with what was read before the damage.
func TestCheckLogOnRDB(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	data := writeRDB(t, SnapshotHeader{}, testItems(t, false), RDBOptions{})
	os.WriteFile(path, data, 0o644)
	var out strings.Builder
	if err := CheckLog(path, false, &out); err != nil || !strings.Contains(out.String(), "a Redis RDB file (version 10)") ||
		!strings.Contains(out.String(), "checksum OK: 3 strings, 1 hash, 4 Bloom filters, 2 cuckoo filters") {
		t.Fatalf("%v\n%s", err, out.String())
	}
	data[len(data)-3] ^= 1 // the checksum
	os.WriteFile(path, data, 0o644)
	out.Reset()
	if err := CheckLog(path, true, &out); !errors.Is(err, ErrDamaged) || !strings.Contains(out.String(), "a Redis RDB file (version 10), damaged") {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatal("--fix changed an RDB file")
	}
}

// FuzzReadRDB reads arbitrary bytes as an RDB snapshot, with a small memory limit and with
// unknown types skipped or not. It must never panic or allocate beyond the input and the limit;
// an error is damage, an unknown type, the other format, the limit or a version it does not
// read; and what it loaded writes back to a file that loads to the same keys.
func FuzzReadRDB(f *testing.F) {
	items := testItems(f, false)
	h := SnapshotHeader{Lineage: 5, LogSeq: 2, Created: 1700000000000}
	f.Add(writeRDB(f, h, items, RDBOptions{}), false)
	f.Add(writeRDB(f, h, items[:3], RDBOptions{NoCompression: true}), true)
	f.Add(writeRDB(f, SnapshotHeader{}, nil, RDBOptions{}), false)
	for _, name := range []string{"other.rdb", "bloom-plain.rdb"} {
		if data, err := os.ReadFile(filepath.Join("..", "rdb", "testdata", name)); err == nil {
			f.Add(data, true)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		s := &chainSink{limit: 1 << 20}
		ld, err := ReadRDB(bytes.NewReader(data), int64(len(data)), "fuzz.rdb", s, RDBOptions{SkipUnknown: skip})
		if err != nil {
			for _, k := range []error{bloom.ErrCorrupt, rdb.ErrUnsupported, ErrOtherFormat, ErrNoMemory, rdb.ErrVersion, bloom.ErrTooLarge, bloom.ErrInvalidParameter, rdb.ErrEmptyKey} {
				if errors.Is(err, k) {
					return
				}
			}
			t.Fatalf("an error of no known kind: %v", err)
		}
		got := s.complete()
		if ld.Stats.Keys != len(got) {
			t.Fatalf("%d keys counted, %d handed over", ld.Stats.Keys, len(got))
		}
		again, got2, err := readRDB(writeRDB(t, ld.Header, got, RDBOptions{}), RDBOptions{})
		if err != nil || again.Header != ld.Header {
			t.Fatalf("what was loaded does not load again: %v (%+v, %+v)", err, again.Header, ld.Header)
		}
		sameItems(t, got2, got)
	})
}
