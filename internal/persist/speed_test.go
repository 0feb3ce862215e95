package persist

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bloomd/bloom/redisbloom"
)

// TestSnapshotSpeed measures writing and loading a snapshot of BLOOM_SNAPSHOT_GB gigabytes of
// filters (skipped unless set), against the disk's own sequential read speed on the same file
// with the page cache dropped. BLOOM_SNAPSHOT_DIR chooses the directory (default: a temporary
// one). It reports; it asserts only that the loaded filters equal the saved ones.
func TestSnapshotSpeed(t *testing.T) {
	gb, _ := strconv.ParseFloat(os.Getenv("BLOOM_SNAPSHOT_GB"), 64)
	if gb <= 0 {
		t.Skip("set BLOOM_SNAPSHOT_GB to measure snapshot speed")
	}
	dir := os.Getenv("BLOOM_SNAPSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	// Filters of 256 MiB (capacity 200M at 1%), as many as make gb, each with some items.
	var items []Item
	var total int64
	for i := 0; float64(total) < gb*(1<<30); i++ {
		ch, err := redisbloom.NewChain(200_000_000, 0.01, 2, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 100_000 {
			ch.Add(fmt.Appendf(nil, "%d-%d", i, j))
		}
		items = append(items, Item{Key: fmt.Sprint("filter:", i), Chain: ch, Header: ch.Header()})
		total += int64(ch.Size())
	}
	path := filepath.Join(dir, "speed.bdb")
	defer os.Remove(path)
	st, err := Open(Config{Dir: dir, DBFilename: "speed.bdb", AppendFilename: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := st.writeSnapshot(SnapshotHeader{Lineage: 1, LogSeq: 1}, items)
	if err != nil {
		t.Fatal(err)
	}
	write := time.Since(start)
	mbs := func(d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }
	t.Logf("snapshot of %d filters, %.2f GB: written and synced in %s: %.0f MB/s", len(items), float64(n)/1e9, write.Round(time.Millisecond), mbs(write))

	load := func() (time.Duration, []Item) {
		runtime.GC()
		f, direct, err := st.openSnapshot(st.snap) // as Load reads it
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var r io.Reader = f
		if direct {
			dr := newDirectReader(f)
			defer dr.close()
			r = dr
		}
		s := &chainSink{}
		start := time.Now()
		if _, _, err := ReadSnapshot(r, n, path, s); err != nil {
			t.Fatal(err)
		}
		return time.Since(start), s.complete()
	}
	rawRead := func() time.Duration {
		f, _ := os.Open(path)
		defer f.Close()
		start := time.Now()
		io.Copy(io.Discard, struct{ io.Reader }{f})
		return time.Since(start)
	}
	// The best of two for each, on a machine shared with other work.
	dropCache(t, path)
	raw := rawRead()
	dropCache(t, path)
	raw = min(raw, rawRead())
	dropCache(t, path)
	cold, got := load()
	for i := range items {
		if string(dumpOf(got[i].Chain)[:64]) != string(dumpOf(items[i].Chain)[:64]) || got[i].Chain.Card() != items[i].Chain.Card() {
			t.Fatalf("filter %d differs after loading", i)
		}
	}
	got = nil
	dropCache(t, path)
	if c, _ := load(); c < cold {
		cold = c
	}
	warm, _ := load()
	t.Logf("disk read (cache dropped): %.0f MB/s; load (direct I/O): %.0f MB/s (%.0f%% of the disk), again: %.0f MB/s",
		mbs(raw), mbs(cold), 100*raw.Seconds()/cold.Seconds(), mbs(warm))
}

// dropCache asks the kernel to drop the file's pages from the page cache (they are clean: the
// file was synced).
func dropCache(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const fadvDontneed = 4
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontneed, 0, 0); e != 0 {
		t.Logf("fadvise: %v", e)
	}
}
