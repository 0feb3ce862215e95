package persist

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// syncRecFS records, for each sync of a log, the bytes written to it since its last sync.
type syncRecFS struct {
	OSFS
	mu      sync.Mutex
	pending map[string]int
	syncs   []string // "name:bytes"
}

type syncRecFile struct {
	*os.File
	fs *syncRecFS
}

func (f syncRecFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.fs.mu.Lock()
	f.fs.pending[f.Name()] += n
	f.fs.mu.Unlock()
	return n, err
}

func (f syncRecFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs = append(f.fs.syncs, fmt.Sprintf("%s:%d", f.Name(), f.fs.pending[f.Name()]))
	f.fs.pending[f.Name()] = 0
	f.fs.mu.Unlock()
	return f.File.Sync()
}

func (fs *syncRecFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncRecFile{f, fs}, nil
}

// TestSnapshotSyncsLogBeforeRotating: a snapshot syncs the log before the instant at which it
// moves the appends to a new log, so that the sync that closes the old log, which a client's
// wait does before its replies, finds nothing (here) or little (under load) left to sync.
func TestSnapshotSyncsLogBeforeRotating(t *testing.T) {
	dir := t.TempDir()
	fsys := &syncRecFS{pending: map[string]int{}}
	st, ks, err := load(t, dir, func(c *Config) { c.FS = fsys })
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k a", "BF.ADD k b", "BF.ADD k c")
	ks.capture = nil
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	write(t, st, "BF.ADD k after") // closes the old log first
	log1 := dir + "/appendonly.aof.1"
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	var syncs []string
	for _, s := range fsys.syncs {
		if len(s) > len(log1) && s[:len(log1)+1] == log1+":" {
			syncs = append(syncs, s[len(log1)+1:])
		}
	}
	// The header's sync when the log was made, the sync before the rotation with the three
	// records, and the closing sync with nothing left.
	if len(syncs) != 3 || syncs[1] == "0" || syncs[2] != "0" {
		t.Fatalf("syncs of the first log, with the bytes each found unsynced: %v", syncs)
	}
}
