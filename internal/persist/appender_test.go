package persist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultFS is the operating system's file system with writes, file syncs and directory syncs
// that fail on demand: always while failWrites is set, or for the next n calls counted by
// writeFaults, syncFaults and dirSyncFaults.
type faultFS struct {
	OSFS
	failWrites    atomic.Bool
	writeFaults   atomic.Int32
	syncFaults    atomic.Int32
	dirSyncFaults atomic.Int32
}

// take reports whether a fault is due, consuming one from n.
func take(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// faultFile is not an *os.File, so syncFile calls its Sync.
type faultFile struct {
	*os.File
	fs *faultFS
}

func (f faultFile) Write(p []byte) (int, error) {
	if f.fs.failWrites.Load() || take(&f.fs.writeFaults) {
		n := len(p) / 2 // a partial write, as a full disk leaves
		f.File.Write(p[:n])
		return n, errors.New("no space left on device (test)")
	}
	return f.File.Write(p)
}

func (f faultFile) Sync() error {
	if take(&f.fs.syncFaults) {
		return errors.New("input/output error (test fsync)")
	}
	return f.File.Sync()
}

func (fs *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return faultFile{f, fs}, nil
}

func (fs *faultFS) SyncDir(dir string) error {
	if take(&fs.dirSyncFaults) {
		return errors.New("input/output error (test directory sync)")
	}
	return fs.OSFS.SyncDir(dir)
}

func newTestLog(t *testing.T, fsys FS, dir string, seq uint64) *logFile {
	t.Helper()
	st := &Store{fs: fsys, cfg: Config{Dir: dir, AppendFilename: "appendonly.aof"}, lineage: 5}
	lf, err := st.createLog(seq)
	if err != nil {
		t.Fatal(err)
	}
	return lf
}

func readLog(t *testing.T, path string) scanResult {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return scan(data)
}

// TestGroupCommit: connections appending and waiting at once under appendfsync always find
// every acknowledged record in the file, with fewer syncs than waits.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	lf := newTestLog(t, OSFS{}, dir, 1)
	a := newAppender(lf, FsyncAlways)
	const writers, each = 8, 100
	var wg sync.WaitGroup
	var acked atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				wait := a.Append([][]byte{[]byte("BF.ADD"), []byte("k"), fmt.Appendf(nil, "%d-%d", w, i)})
				if err := wait(); err != nil {
					t.Error(err)
					return
				}
				// Acknowledged: it must be in the file already, before close.
				acked.Add(1)
			}
		}()
	}
	wg.Wait()
	if s := a.synced.Load(); s != writers*each {
		t.Fatalf("synced %d records, want %d", s, writers*each)
	}
	res := readLog(t, lf.path) // before close: what a crash now would leave
	if len(res.recs) != writers*each || res.torn != nil || res.err != nil {
		t.Fatalf("file holds %d records (torn %v, err %v), want %d", len(res.recs), res.torn, res.err, writers*each)
	}
	if f := a.fsyncs.Load(); f >= writers*each {
		t.Logf("no grouping happened: %d syncs for %d waits (a slow machine?)", f, writers*each)
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteBeforeReply: with everysec, a wait returns once the record is written to the
// operating system (a crash of the process loses nothing).
func TestWriteBeforeReply(t *testing.T) {
	for _, p := range []Fsync{FsyncEverysec, FsyncNo} {
		lf := newTestLog(t, OSFS{}, t.TempDir(), 1)
		a := newAppender(lf, p)
		for i := range 10 {
			if err := a.Append([][]byte{[]byte("DEL"), fmt.Appendf(nil, "%d", i)})(); err != nil {
				t.Fatal(err)
			}
			if res := readLog(t, lf.path); len(res.recs) != i+1 {
				t.Fatalf("%v: after the wait of record %d the file holds %d", p, i, len(res.recs))
			}
		}
		a.close()
	}
}

// TestRotate: records appended before a rotation are in the old file, which is complete and
// closed before the new one receives anything; records after it in the new one.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	lf1 := newTestLog(t, OSFS{}, dir, 1)
	a := newAppender(lf1, FsyncEverysec)
	for i := range 5 {
		a.Append([][]byte{[]byte("A"), fmt.Appendf(nil, "%d", i)})
	}
	lf2 := newTestLog(t, OSFS{}, dir, 2)
	a.rotate(lf2)
	for i := range 3 {
		a.Append([][]byte{[]byte("B"), fmt.Appendf(nil, "%d", i)})
	}
	if err := a.writeWait(); err != nil {
		t.Fatal(err)
	}
	r1, r2 := readLog(t, lf1.path), readLog(t, lf2.path)
	if len(r1.recs) != 5 || len(r2.recs) != 3 || string(r2.recs[0][0]) != "B" {
		t.Fatalf("old log %d records, new %d; want 5 and 3", len(r1.recs), len(r2.recs))
	}
	if err := lf1.f.Close(); err == nil {
		t.Fatal("the old log was left open")
	}
	a.close()
}

// TestFailureIsSticky: after a failed write, no wait succeeds (nothing more is acknowledged),
// the failed file is never written again, and a rotation followed by clearError (a snapshot)
// resumes in the new file.
func TestFailureIsSticky(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	lf1 := newTestLog(t, fsys, dir, 1)
	a := newAppender(lf1, FsyncAlways)
	if err := a.Append([][]byte{[]byte("A"), []byte("1")})(); err != nil {
		t.Fatal(err)
	}
	fsys.failWrites.Store(true)
	if err := a.Append([][]byte{[]byte("A"), []byte("2")})(); err == nil {
		t.Fatal("a failed write was acknowledged")
	}
	fsys.failWrites.Store(false)
	if err := a.Append([][]byte{[]byte("A"), []byte("3")})(); err == nil {
		t.Fatal("a write after a failure was acknowledged")
	}
	size := lf1.size.Load()
	lf2 := newTestLog(t, fsys, dir, 2)
	a.rotate(lf2)
	wait := a.Append([][]byte{[]byte("B"), []byte("1")})
	if err := wait(); err == nil {
		t.Fatal("acknowledged before the snapshot healed the log")
	}
	if !a.failedBefore(2) {
		t.Fatal("failedBefore(2) is false")
	}
	a.clearError()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if lf1.size.Load() != size {
		t.Fatal("the failed log was written after its failure")
	}
	r2 := readLog(t, lf2.path)
	if len(r2.recs) != 1 || string(r2.recs[0][0]) != "B" {
		t.Fatalf("new log: %d records", len(r2.recs))
	}
	// The failed log ends in the half record: a torn tail.
	if r1 := readLog(t, filepath.Join(dir, "appendonly.aof.1")); len(r1.recs) != 1 || r1.torn == nil {
		t.Fatalf("failed log: %d records, torn %v", len(r1.recs), r1.torn)
	}
	a.close()
}

// TestEverysecIdle: with appendfsync everysec, a log with nothing new written is not synced
// again (as Redis skips it), and a write is synced within about two seconds.
func TestEverysecIdle(t *testing.T) {
	t.Parallel()
	lf := newTestLog(t, OSFS{}, t.TempDir(), 1)
	a := newAppender(lf, FsyncEverysec)
	defer a.close()
	time.Sleep(2200 * time.Millisecond)
	if n := a.fsyncs.Load(); n != 0 {
		t.Fatalf("%d syncs of an idle log in 2.2 s", n)
	}
	if err := a.Append([][]byte{[]byte("A"), []byte("1")})(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2500 * time.Millisecond)
	for a.fsyncs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := a.fsyncs.Load(); n != 1 {
		t.Fatalf("%d syncs within 2.5 s of a write", n)
	}
	time.Sleep(1200 * time.Millisecond)
	if n := a.fsyncs.Load(); n != 1 {
		t.Fatalf("%d syncs: the log was synced again with nothing new", n)
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, p := range []Fsync{FsyncNo, FsyncEverysec, FsyncAlways} {
		b.Run(p.String(), func(b *testing.B) {
			st := &Store{fs: OSFS{}, cfg: Config{Dir: b.TempDir(), AppendFilename: "a"}, lineage: 1}
			lf, err := st.createLog(1)
			if err != nil {
				b.Fatal(err)
			}
			a := newAppender(lf, p)
			argv := [][]byte{[]byte("BF.ADD"), []byte("key:000000001234"), []byte("item:000000005678")}
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := a.Append(argv)(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(a.fsyncs.Load())/float64(b.N), "syncs/op")
			a.close()
		})
	}
}
