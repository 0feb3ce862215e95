package persist

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/redisbloom"
)

// recKeyspace records what a store hands it: the snapshot's keys (through chainSink) and the
// replayed records, answering each record with +OK unless told to fail it. It checks the store's
// plumbing (which records, in which order); the server's own tests check what they do.
type recKeyspace struct {
	chainSink
	mu       sync.Mutex
	replayed []string
	capture  []Item
	failOn   string
	loading  bool
}

func (k *recKeyspace) Pause(fn func()) { k.mu.Lock(); defer k.mu.Unlock(); fn() }
func (k *recKeyspace) Capture() []Item {
	if k.capture == nil {
		return k.complete() // what was loaded, as a server would capture it
	}
	return k.capture
}
func (k *recKeyspace) SetLoading(on bool) { k.loading = on }
func (k *recKeyspace) Exec(args ...[]byte) []byte {
	s := string(bytes.Join(args, []byte(" ")))
	k.replayed = append(k.replayed, s)
	if k.failOn != "" && s == k.failOn {
		return []byte("-ERR replay failed on purpose\r\n")
	}
	return []byte("+OK\r\n")
}

func testStore(t *testing.T, dir string, mod func(*Config)) *Store {
	t.Helper()
	cfg := DefaultConfig(dir)
	cfg.Save = nil
	if mod != nil {
		mod(&cfg)
	}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func argv(s string) [][]byte { return bytes.Fields([]byte(s)) }

// write appends the commands and waits for them, as a connection does.
func write(t *testing.T, st *Store, cmds ...string) {
	t.Helper()
	var wait func() error
	for _, c := range cmds {
		if w := st.Append(argv(c)); w != nil {
			wait = w
		}
	}
	if wait != nil {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
}

func load(t *testing.T, dir string, mod func(*Config)) (*Store, *recKeyspace, error) {
	t.Helper()
	st := testStore(t, dir, mod)
	ks := &recKeyspace{}
	err := st.Load(ks)
	if err == nil {
		t.Cleanup(func() { st.Close(false) })
	}
	return st, ks, err
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".lock") { // the directory's lock (see lockDir)
			names = append(names, e.Name())
		}
	}
	return names
}

func TestStoreLogAndReplay(t *testing.T) {
	dir := t.TempDir()
	st, ks, err := load(t, dir, nil)
	if err != nil || len(ks.replayed) != 0 {
		t.Fatalf("empty dir: %v, %d records", err, len(ks.replayed))
	}
	write(t, st, "BF.ADD k a", "BF.MADD k b c", "DEL x")
	if err := st.Close(false); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.1"}) {
		t.Fatalf("files %v", got)
	}
	_, ks, err = load(t, dir, nil)
	if err != nil || !slices.Equal(ks.replayed, []string{"BF.ADD k a", "BF.MADD k b c", "DEL x"}) {
		t.Fatalf("replay: %v %q", err, ks.replayed)
	}
}

// TestStoreSnapshotRotates: a snapshot starts a new log at its instant, and once it is in place
// the old log is gone; a restart loads the snapshot and replays only the new log.
func TestStoreSnapshotRotates(t *testing.T) {
	dir := t.TempDir()
	st, ks, err := load(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k before")
	ch, _ := redisbloom.NewChain(100, 0.01, 2, false, nil)
	ch.Add([]byte("before"))
	ks.capture = []Item{{Key: "k", Chain: ch, Header: ch.Header()}, {Key: "s", Value: []byte("v"), Expire: 99}}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k after")
	st.Close(false)
	if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.2", "dump.bdb"}) {
		t.Fatalf("files after a snapshot: %v", got)
	}
	_, ks, err = load(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ks.replayed, []string{"BF.ADD k after"}) || len(ks.items) != 2 || ks.items[1].Expire != 99 {
		t.Fatalf("after restart: replayed %q, %d keys", ks.replayed, len(ks.items))
	}
	if !ks.items[0].Chain.Exists([]byte("before")) {
		t.Fatal("the snapshot's filter lost its item")
	}
}

// TestStoreTornTail: a torn last record is dropped, the log truncated, and appends continue
// after the last good record.
func TestStoreTornTail(t *testing.T) {
	dir := t.TempDir()
	st, _, _ := load(t, dir, nil)
	write(t, st, "BF.ADD k a", "BF.ADD k b")
	st.Close(false)
	path := filepath.Join(dir, "appendonly.aof.1")
	good, _ := os.ReadFile(path)
	torn := appendRecord(nil, argv("BF.ADD k c"))
	os.WriteFile(path, append(slices.Clone(good), torn[:len(torn)-3]...), 0o644)
	st, ks, err := load(t, dir, nil)
	if err != nil || len(ks.replayed) != 2 {
		t.Fatalf("torn tail: %v, replayed %q", err, ks.replayed)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, good) {
		t.Fatalf("log is %d bytes after the torn tail was dropped, want %d", len(b), len(good))
	}
	write(t, st, "BF.ADD k d")
	st.Close(false)
	_, ks, err = load(t, dir, nil)
	if err != nil || !slices.Equal(ks.replayed, []string{"BF.ADD k a", "BF.ADD k b", "BF.ADD k d"}) {
		t.Fatalf("after appending: %v %q", err, ks.replayed)
	}
}

// TestStoreRefusesDamage: damage other than a torn tail refuses to start, naming the file,
// the offset and the repair.
func TestStoreRefusesDamage(t *testing.T) {
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		st, ks, _ := load(t, dir, nil)
		write(t, st, "BF.ADD k a", "BF.ADD k b", "BF.ADD k c")
		ks.capture = nil
		st.Save() // log 2 begins
		write(t, st, "BF.ADD k d")
		st.BackgroundRewrite()
		for st.saving.Load() != 0 {
		}
		write(t, st, "BF.ADD k e")
		st.Close(false)
		return dir
	}
	cases := []struct {
		name   string
		damage func(dir string)
		want   []string
	}{
		{"flipped byte in the middle", func(dir string) {
			p := filepath.Join(dir, "appendonly.aof.3")
			b, _ := os.ReadFile(p)
			b = append(b, appendRecord(nil, argv("BF.ADD k f"))...)
			b[logHeaderSize+recHeaderSize+2] ^= 1
			os.WriteFile(p, b, 0o644)
		}, []string{"appendonly.aof.3", fmt.Sprintf("byte offset %d", logHeaderSize), "check-aof --fix"}},
		{"missing snapshot", func(dir string) { os.Remove(filepath.Join(dir, "dump.bdb")) },
			[]string{"no snapshot", "dump.bdb"}},
		{"damaged snapshot", func(dir string) {
			p := filepath.Join(dir, "dump.bdb")
			b, _ := os.ReadFile(p)
			b[50] ^= 1
			os.WriteFile(p, b, 0o644)
		}, []string{"dump.bdb", "byte offset 44", "backup"}},
		{"foreign log", func(dir string) {
			p := filepath.Join(dir, "appendonly.aof.3")
			b, _ := os.ReadFile(p)
			copy(b, LogHeader{Lineage: 12345, Seq: 3}.append(nil))
			os.WriteFile(p, b, 0o644)
		}, []string{"another data set"}},
		{"a gap", func(dir string) {
			os.Rename(filepath.Join(dir, "appendonly.aof.3"), filepath.Join(dir, "appendonly.aof.4"))
		}, []string{"appendonly.aof.3 is missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := setup(t)
			c.damage(dir)
			_, _, err := load(t, dir, nil)
			if err == nil {
				t.Fatal("loaded damaged files")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestStoreTornNonLastLog: a log that another follows was synced before the next began, so damage
// at its end is corruption, not a torn tail.
func TestStoreTornNonLastLog(t *testing.T) {
	dir := t.TempDir()
	st, ks, _ := load(t, dir, nil)
	write(t, st, "BF.ADD k a")
	ks.capture = nil
	// A rotation whose snapshot never lands: log 1 and log 2 both live.
	next, err := st.createLog(2)
	if err != nil {
		t.Fatal(err)
	}
	st.app.Load().rotate(next)
	write(t, st, "BF.ADD k b")
	st.Close(false)
	p := filepath.Join(dir, "appendonly.aof.1")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)-2], 0o644)
	_, _, err = load(t, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "followed by another") {
		t.Fatalf("torn tail in a log followed by another: %v", err)
	}
}

// TestStoreEmptyLogAfterTornOne: the crash came after a snapshot created its new log and before
// any record went to it, while the last write to the old log was cut short: the empty log goes,
// and the old one's torn tail is dropped as the last log's.
func TestStoreEmptyLogAfterTornOne(t *testing.T) {
	dir := t.TempDir()
	st, _, _ := load(t, dir, nil)
	write(t, st, "BF.ADD k a", "BF.ADD k b")
	if _, err := st.createLog(2); err != nil {
		t.Fatal(err)
	}
	st.Close(false)
	p := filepath.Join(dir, "appendonly.aof.1")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)-2], 0o644)
	st, ks, err := load(t, dir, nil)
	if err != nil || !slices.Equal(ks.replayed, []string{"BF.ADD k a"}) {
		t.Fatalf("%v, replayed %q", err, ks.replayed)
	}
	write(t, st, "BF.ADD k c")
	st.Close(false)
	if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.1"}) {
		t.Fatalf("files %v", got)
	}
	if _, ks, err = load(t, dir, nil); err != nil || !slices.Equal(ks.replayed, []string{"BF.ADD k a", "BF.ADD k c"}) {
		t.Fatalf("%v, replayed %q", err, ks.replayed)
	}
}

func TestStoreTransactions(t *testing.T) {
	dir := t.TempDir()
	st, _, _ := load(t, dir, nil)
	write(t, st, "BF.ADD k a", "MULTI", "DEL k", "BF.ADD k b", "EXEC", "MULTI", "DEL z")
	st.Close(false)
	_, ks, err := load(t, dir, nil)
	want := []string{"BF.ADD k a", "MULTI", "DEL k", "BF.ADD k b", "EXEC"}
	if err != nil || !slices.Equal(ks.replayed, want) {
		t.Fatalf("replayed %q (%v), want %q: the unfinished transaction dropped", ks.replayed, err, want)
	}
}

func TestStoreReplayFailure(t *testing.T) {
	dir := t.TempDir()
	st, _, _ := load(t, dir, nil)
	write(t, st, "BF.ADD k a", "RENAME a b")
	st.Close(false)
	st = testStore(t, dir, nil)
	err := st.Load(&recKeyspace{failOn: "RENAME a b"})
	if err == nil || !strings.Contains(err.Error(), "fails on replay") || !strings.Contains(err.Error(), "appendonly.aof.1") {
		t.Fatalf("failing record: %v", err)
	}
}

// TestStoreSaveFailure: a snapshot that cannot be written leaves the old one and the logs as
// they were, removes its temporary file, and reports the failure.
func TestStoreSaveFailure(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	st, ks, err := load(t, dir, func(c *Config) { c.FS = fsys })
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k a")
	ch, _ := redisbloom.NewChain(100, 0.01, 2, false, nil)
	ks.capture = []Item{{Key: "k", Chain: ch, Header: ch.Header()}}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "dump.bdb"))
	fsys.failWrites.Store(true)
	if err := st.Save(); err == nil {
		t.Fatal("a failed snapshot reported success")
	}
	fsys.failWrites.Store(false)
	if after, _ := os.ReadFile(filepath.Join(dir, "dump.bdb")); !bytes.Equal(before, after) {
		t.Fatal("the snapshot changed after a failed save")
	}
	for _, f := range files(t, dir) {
		if strings.HasPrefix(f, "temp-") {
			t.Fatalf("temporary file %s left behind", f)
		}
	}
	info := string(st.AppendInfo(nil, "persistence"))
	if !strings.Contains(info, "rdb_last_bgsave_status:err") {
		t.Fatalf("INFO after a failed save:\n%s", info)
	}
	if err := st.Save(); err != nil || !strings.Contains(string(st.AppendInfo(nil, "persistence")), "rdb_last_bgsave_status:ok") {
		t.Fatalf("save after the failure: %v", err)
	}
}

// TestStoreLock: a second store on the same directory refuses to load.
func TestStoreLock(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := load(t, dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := load(t, dir, nil); err == nil || !strings.Contains(err.Error(), "another bloomd") {
		t.Fatalf("second store on one directory: %v", err)
	}
}

func TestParseSave(t *testing.T) {
	r, err := ParseSave("3600 1 300 100")
	if err != nil || len(r) != 2 || r[1] != (SaveRule{300, 100}) || FormatSave(r) != "3600 1 300 100" {
		t.Fatalf("%v %v", r, err)
	}
	for _, bad := range []string{"1", "a b", "0 1", "10 -1"} {
		if _, err := ParseSave(bad); err == nil {
			t.Errorf("ParseSave(%q) accepted", bad)
		}
	}
	if r, err := ParseSave(""); err != nil || len(r) != 0 {
		t.Fatalf("empty: %v %v", r, err)
	}
	if _, err := ParseFsync("sometimes"); err == nil || errors.Is(err, nil) {
		t.Fatal("ParseFsync accepted sometimes")
	}
}

// TestStoreNewLogFailure: when the header of a new log cannot be written, synced or entered in
// its directory, the snapshot that needed the log fails, the old log stays the one written, and
// every write acknowledged before and after is found again on restart.
func TestStoreNewLogFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*faultFS) *atomic.Int32
	}{
		{"write", func(f *faultFS) *atomic.Int32 { return &f.writeFaults }},
		{"fsync", func(f *faultFS) *atomic.Int32 { return &f.syncFaults }},
		{"dirsync", func(f *faultFS) *atomic.Int32 { return &f.dirSyncFaults }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			st, ks, err := load(t, dir, func(c *Config) { c.FS = fsys; c.AppendFsync = FsyncAlways })
			if err != nil {
				t.Fatal(err)
			}
			write(t, st, "BF.ADD k a")
			ks.capture = nil
			tc.fault(fsys).Store(1) // the next one: the new log's header
			if err := st.Save(); err == nil || !strings.Contains(err.Error(), "appendonly.aof.2") {
				t.Fatalf("a snapshot whose new log failed: %v", err)
			}
			if n := tc.fault(fsys).Load(); n != 0 {
				t.Fatalf("the fault was not reached (%d left)", n)
			}
			write(t, st, "BF.ADD k b")
			if err := st.Close(false); err != nil {
				t.Fatal(err)
			}
			if got := files(t, dir); !slices.Equal(got, []string{"appendonly.aof.1"}) {
				t.Fatalf("files after the failure: %v", got)
			}
			_, ks, err = load(t, dir, nil)
			if err != nil || !slices.Equal(ks.replayed, []string{"BF.ADD k a", "BF.ADD k b"}) {
				t.Fatalf("after restart: %v %q", err, ks.replayed)
			}
		})
	}
}

// TestCreateLogFailure: createLog reports every failure of a new log's header and leaves no
// file behind.
func TestCreateLogFailure(t *testing.T) {
	for name, fault := range map[string]func(*faultFS) *atomic.Int32{
		"write":   func(f *faultFS) *atomic.Int32 { return &f.writeFaults },
		"fsync":   func(f *faultFS) *atomic.Int32 { return &f.syncFaults },
		"dirsync": func(f *faultFS) *atomic.Int32 { return &f.dirSyncFaults },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			fault(fsys).Store(1)
			st := &Store{fs: fsys, cfg: Config{Dir: dir, AppendFilename: "appendonly.aof"}, lineage: 5}
			if lf, err := st.createLog(1); err == nil {
				lf.f.Close()
				t.Fatal("createLog reported success")
			}
			if got := files(t, dir); len(got) != 0 {
				t.Fatalf("files left: %v", got)
			}
		})
	}
}

// With appendfsync always every acknowledged write was synced on a real file, and the observer
// hears each of those syncs as many times as aof_fsyncs counts them.
func TestFsyncObserver(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Duration
	st, _, err := load(t, t.TempDir(), func(c *Config) {
		c.AppendFsync = FsyncAlways
		c.FsyncObserver = func(d time.Duration) { mu.Lock(); seen = append(seen, d); mu.Unlock() }
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k a")
	write(t, st, "BF.ADD k b")
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	fsyncs := st.app.Load().fsyncs.Load()
	if len(got) < 2 || int64(len(got)) != fsyncs {
		t.Fatalf("observer heard %d syncs, aof_fsyncs is %d", len(got), fsyncs)
	}
	for _, d := range got {
		if d <= 0 || d > time.Minute {
			t.Errorf("fsync took %v", d)
		}
	}
}
