package persist

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/internal/redistest"
)

// streamAfter is what follows a snapshot on a replication link in these tests.
const streamAfter = "*1\r\n$4\r\nPING\r\n"

func syncBytes(t testing.TB, items []Item, rdbFormat bool, window int64) []byte {
	t.Helper()
	var b bytes.Buffer
	opts := SyncOptions{RDB: rdbFormat, Window: func() int64 { return window }}
	n, err := WriteSync(&b, items, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("WriteSync says %d bytes, wrote %d", n, b.Len())
	}
	if !rdbFormat {
		if size, _ := SnapshotSize(items); size != n {
			t.Fatalf("SnapshotSize %d, WriteSync wrote %d", size, n)
		}
	}
	return b.Bytes()
}

// TestSyncRoundTrip writes a full sync in both formats and reads it from a link where the stream
// follows: every key comes back, the window travels, and the stream is left unread, whether the
// length was announced (bloomd's format, an RDB behind $<length>) or not (an RDB behind $EOF:).
func TestSyncRoundTrip(t *testing.T) {
	items := testItems(t, false)
	for _, tc := range []struct {
		name  string
		rdb   bool
		sized bool
	}{{"bloomd", false, true}, {"rdb", true, true}, {"rdb-eof", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			data := syncBytes(t, items, tc.rdb, 12345)
			size := int64(len(data))
			if !tc.sized {
				size = -1
			}
			br := bufio.NewReaderSize(bytes.NewReader(append(bytes.Clone(data), streamAfter...)), 4096)
			s := &chainSink{}
			rc, err := ReadSync(br, size, "sync", s, RDBOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rc.RDB != tc.rdb || rc.Header.AddsNewUntil != 12345 {
				t.Errorf("RDB %v, window %d", rc.RDB, rc.Header.AddsNewUntil)
			}
			sameItems(t, s.complete(), items)
			if rest, _ := io.ReadAll(br); string(rest) != streamAfter {
				t.Errorf("after the snapshot the link holds %q", rest)
			}
		})
	}
}

// TestReceive has a store receive a full sync in each format, as a replica does: the file it
// writes as the snapshot arrives is its snapshot (its lineage and first log, in the sender's
// format), which loads back to the same keys, the older logs are gone, the log after it holds
// what comes next, and the link is left at the stream. A transfer cut short changes no file.
func TestReceive(t *testing.T) {
	items := testItems(t, false)
	for _, tc := range []struct {
		name      string
		rdb, file bool
	}{{"bloomd", false, false}, {"rdb", true, false}, {"bloomd-through-file", false, true}, {"rdb-through-file", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, ks, err := load(t, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			write(t, st, "SET before 1")
			data := syncBytes(t, items, tc.rdb, 0)
			br := bufio.NewReader(bytes.NewReader(append(bytes.Clone(data), streamAfter...)))
			var rc Received
			if tc.file {
				flushed := false
				rc, err = st.ReceiveFile(func(w io.Writer) (int64, error) { return io.CopyN(w, br, int64(len(data))) }, ks, func() { flushed = true })
				if !flushed {
					t.Error("ReceiveFile did not flush before loading")
				}
			} else {
				rc, err = st.Receive(br, int64(len(data)), ks)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rc.Saved {
				t.Error("the snapshot received is not the store's snapshot")
			}
			if rest, _ := io.ReadAll(br); string(rest) != streamAfter {
				t.Errorf("after the snapshot the link holds %q", rest)
			}
			write(t, st, "SET after 1")
			st.Close(false)
			got := files(t, dir)
			if !slices.Equal(got, []string{"appendonly.aof.2", "dump.bdb"}) {
				t.Errorf("files after the full sync: %v", got)
			}
			head, _ := os.ReadFile(filepath.Join(dir, "dump.bdb"))
			if f := magicOf(head); tc.rdb != (f == "rdb") {
				t.Errorf("the snapshot file is of format %q", f)
			}
			_, ks2, err := load(t, dir, nil)
			if err != nil {
				t.Fatalf("the received snapshot does not load: %v", err)
			}
			sameItems(t, ks2.complete(), items)
			if !slices.Equal(ks2.replayed, []string{"SET after 1"}) {
				t.Errorf("replayed %q", ks2.replayed)
			}
		})
	}
}

// TestReceiveCutShort: a transfer that ends early leaves the files as they were.
func TestReceiveCutShort(t *testing.T) {
	items := testItems(t, false)
	for _, rdbFormat := range []bool{false, true} {
		dir := t.TempDir()
		st, ks, err := load(t, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		write(t, st, "SET before 1")
		before := fileSums(t, dir)
		data := syncBytes(t, items, rdbFormat, 0)
		cut := bufio.NewReader(bytes.NewReader(data[:len(data)-30]))
		if _, err := st.Receive(cut, int64(len(data)), ks); err == nil {
			t.Fatal("a snapshot cut short was received")
		}
		flushed := false
		cut = bufio.NewReader(bytes.NewReader(data[:len(data)-30]))
		_, err = st.ReceiveFile(func(w io.Writer) (int64, error) { return io.CopyN(w, cut, int64(len(data))) }, ks, func() { flushed = true })
		if err == nil || flushed {
			t.Fatalf("a transfer cut short: %v, flushed %v", err, flushed)
		}
		st.Close(false)
		if after := fileSums(t, dir); !slices.Equal(before, after) {
			t.Errorf("files changed by a failed full sync:\n%v\n%v", before, after)
		}
	}
}

// TestReceivedRDBLoadsIntoRedis: the RDB file a replica kept from a full sync, with its own aux
// fields and checksum, is one redis-server loads (it starts on it as its dump.rdb).
func TestReceivedRDBLoadsIntoRedis(t *testing.T) {
	dir := t.TempDir()
	st, ks, err := load(t, dir, rdbStore)
	if err != nil {
		t.Fatal(err)
	}
	var strs []Item
	for _, it := range testItems(t, false) {
		if it.Chain == nil && it.Cuckoo == nil {
			strs = append(strs, it) // redis-server without RedisBloom loads these
		}
	}
	data := syncBytes(t, strs, true, 0)
	if _, err := st.Receive(bufio.NewReader(bytes.NewReader(data)), -1, ks); err != nil {
		t.Fatal(err)
	}
	st.Close(false)
	file, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rdb.CRC64(0, file[:len(file)-8]); got != leUint64(file[len(file)-8:]) {
		t.Fatalf("the kept RDB's checksum %#x, its bytes' %#x", leUint64(file[len(file)-8:]), got)
	}
	live := 0 // Redis drops the keys whose time has passed as it loads
	for _, it := range strs {
		if it.Expire == 0 || it.Expire > time.Now().UnixMilli() {
			live++
		}
	}
	loadsIntoRedis(t, file, live)
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// FuzzReadSync reads arbitrary bytes as a full sync behind a length and behind an EOF mark, with
// a small memory limit: it must never panic or allocate beyond the input and the limit, fail
// only with damage, the limit or a version it does not read, and, when it succeeds behind an EOF
// mark, leave the bytes after the RDB unread.
func FuzzReadSync(f *testing.F) {
	items := testItems(f, false)
	f.Add(syncBytes(f, items, true, 7))
	f.Add(syncBytes(f, items[:2], false, 0))
	f.Add(syncBytes(f, nil, true, 0))
	f.Add([]byte("REDIS0010\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sized := range []bool{true, false} {
			size := int64(len(data))
			if !sized {
				size = -1
			}
			br := bufio.NewReader(bytes.NewReader(append(bytes.Clone(data), streamAfter...)))
			s := &chainSink{limit: 1 << 20}
			_, err := ReadSync(br, size, "fuzz", s, RDBOptions{SkipUnknown: true})
			if err != nil {
				for _, k := range []error{bloom.ErrCorrupt, rdb.ErrUnsupported, ErrNoMemory, rdb.ErrVersion, bloom.ErrTooLarge, bloom.ErrInvalidParameter, rdb.ErrEmptyKey, ErrRDBDamaged} {
					if errors.Is(err, k) {
						return
					}
				}
				t.Fatalf("an error of no known kind: %v", err)
			}
			if rest, _ := io.ReadAll(br); !sized && string(rest) != streamAfter {
				t.Fatalf("a snapshot read behind an EOF mark left %q", rest)
			}
		}
	})
}

// loadsIntoRedis starts redis-server on file as its dump.rdb and checks that it loaded keys keys.
func loadsIntoRedis(t *testing.T, file []byte, keys int) {
	t.Helper()
	redistest.Require(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.New(t, &redistest.Options{Args: []string{"--dir", dir, "--dbfilename", "dump.rdb"}})
	if got, err := srv.Do("DBSIZE"); err != nil || got != strconv.Itoa(keys) {
		t.Errorf("redis-server loaded %s keys (%v) from the kept RDB, want %d", got, err, keys)
	}
}
