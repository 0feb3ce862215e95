package repl

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

type nopHost struct{}

func (nopHost) Snapshot(func(), bool) (Snapshot, error) { return Snapshot{}, io.EOF }
func (nopHost) Load(*Payload) (Loaded, error)           { return Loaded{}, nil }
func (nopHost) Supports([]byte) bool                    { return true }
func (nopHost) Apply([][]byte)                          {}
func (nopHost) EndBatch()                               {}
func (nopHost) SetAddsAsNew(bool)                       {}
func (nopHost) Port() int                               { return 0 }
func (nopHost) RoleChanged(bool)                        {}
func (nopHost) Charge(int64) error                      { return nil }

// TestBacklog feeds records of random sizes through a small backlog and checks every range PSYNC
// may ask for against the whole stream kept aside: present when the ring still holds it, refused
// when it does not.
func TestBacklog(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BacklogSize = 16 << 10
	r := New(nopHost{}, cfg, nil)
	r.active.Store(true) // as once a replica attached
	rng := rand.New(rand.NewPCG(1, 2))
	all := []byte(selectZero) // the stream's first write selects database 0
	for i := range 2000 {
		arg := bytes.Repeat([]byte{byte('a' + i%26)}, rng.IntN(300))
		off := r.Feed([][]byte{[]byte("BF.ADD"), []byte("k"), arg})
		all = append(all, fmt.Sprintf("*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(arg), arg)...)
		if off != int64(len(all)) {
			t.Fatalf("Feed returned offset %d after %d bytes", off, len(all))
		}
		if i%97 != 0 {
			continue
		}
		r.mu.Lock()
		first := r.firstByteLocked()
		for _, from := range []int64{1, first - 1, first, first + 1, (first + r.offset) / 2, r.offset, r.offset + 1, r.offset + 2} {
			got, ok := r.backlogFromLocked(from)
			want := from >= first && from <= r.offset+1 && from >= 1
			if ok != want {
				t.Fatalf("offset %d (backlog %d..%d): ok %v, want %v", from, first, r.offset, ok, want)
			}
			if ok && !bytes.Equal(got, all[from-1:]) {
				t.Fatalf("offset %d: backlog bytes differ from the stream", from)
			}
		}
		r.mu.Unlock()
	}
	if r.backlog.histlen != cfg.BacklogSize {
		t.Errorf("histlen %d, want the backlog's size %d", r.backlog.histlen, cfg.BacklogSize)
	}
}

// TestPartialResyncRules checks which PSYNC requests get +CONTINUE, as Redis decides: the
// current ID at an offset the backlog holds, or the secondary ID up to its end.
func TestPartialResyncRules(t *testing.T) {
	r := New(nopHost{}, DefaultConfig(), nil)
	r.active.Store(true)
	r.Feed([][]byte{[]byte("SET"), []byte("a"), []byte("1")})
	old := r.replid
	r.mu.Lock()
	r.shiftIDLocked()
	end := r.secondOff
	r.mu.Unlock()
	r.Feed([][]byte{[]byte("SET"), []byte("b"), []byte("2")})
	for _, c := range []struct {
		id   string
		off  int64
		want bool
	}{
		{r.replid, 1, true}, {r.replid, r.offset + 1, true}, {r.replid, r.offset + 2, false}, {r.replid, 0, false},
		{old, end, true}, {old, 1, true}, {old, end + 1, false}, {"?", 1, false}, {zeroID, 1, false},
	} {
		r.mu.Lock()
		match := r.sameHistoryLocked(c.id, c.off)
		_, have := r.backlogFromLocked(c.off)
		r.mu.Unlock()
		if got := match && have; got != c.want {
			t.Errorf("PSYNC %s %d: continue %v, want %v", c.id[:min(8, len(c.id))], c.off, got, c.want)
		}
	}
}

// budget is a memory ceiling for the backlog's chunks: it refuses a charge past limit.
type budget struct {
	nopHost
	used, limit int64
}

func (b *budget) Charge(n int64) error {
	if n > 0 && b.used+n > b.limit {
		return fmt.Errorf("%d bytes asked, %d of %d in use", n, b.used, b.limit)
	}
	b.used += n
	return nil
}

// TestBacklogGrowsAsItFills sets a backlog of 500 GB: it holds only what the stream put in it,
// in chunks charged to the ceiling, and under a ceiling that refuses more it keeps what it
// has, reusing its oldest chunk, with every range it still claims intact.
func TestBacklogGrowsAsItFills(t *testing.T) {
	host := &budget{limit: 1 << 62}
	cfg := DefaultConfig()
	cfg.BacklogSize = 500 << 30
	r := New(host, cfg, nil)
	defer r.Close()
	r.active.Store(true)
	all := []byte(selectZero)
	feed := func(n int) {
		for range n {
			arg := bytes.Repeat([]byte{byte('a' + len(all)%26)}, 1000)
			r.Feed([][]byte{[]byte("SET"), []byte("k"), arg})
			all = append(all, fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n%s\r\n", arg)...)
		}
	}
	check := func(what string) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		first := r.firstByteLocked()
		got, ok := r.backlogFromLocked(first)
		if !ok || !bytes.Equal(got, all[first-1:]) {
			t.Fatalf("%s: the backlog's %d bytes from %d differ from the stream", what, len(got), first)
		}
		if _, ok := r.backlogFromLocked(first - 1); ok && first > 1 {
			t.Fatalf("%s: the backlog claims offset %d before its first byte", what, first-1)
		}
	}
	feed(100) // about 100 KB
	check("500gb backlog")
	if r.backlog.histlen != int64(len(all)) || host.used > int64(len(all))+2*chunkSize {
		t.Fatalf("500gb backlog after %d bytes: histlen %d, charged %d", len(all), r.backlog.histlen, host.used)
	}

	host.limit = host.used + 2*chunkSize // room for two more chunks only
	feed(300)
	check("under the ceiling")
	if host.used > host.limit {
		t.Fatalf("charged %d past the ceiling %d", host.used, host.limit)
	}
	if r.backlog.histlen >= int64(len(all)) || r.backlog.histlen < int64(host.limit)-2*chunkSize {
		t.Fatalf("under a ceiling of %d: histlen %d of %d bytes streamed", host.limit, r.backlog.histlen, len(all))
	}
	if r.backlog.charged != host.used {
		t.Fatalf("the backlog counts %d bytes charged, the ceiling %d", r.backlog.charged, host.used)
	}
}

// TestBacklogResizeKeepsHistory changes repl-backlog-size as CONFIG SET does: a larger size
// keeps the whole history, a smaller one its newest bytes, and the memory of dropped chunks is
// given back (Redis 7.0 keeps the backlog on resize; older bloomd emptied it).
func TestBacklogResizeKeepsHistory(t *testing.T) {
	host := &budget{limit: 1 << 62}
	cfg := DefaultConfig()
	cfg.BacklogSize = 64 << 10
	r := New(host, cfg, nil)
	defer r.Close()
	r.active.Store(true)
	for range 200 {
		r.Feed([][]byte{[]byte("SET"), []byte("k"), bytes.Repeat([]byte("v"), 1000)})
	}
	r.mu.Lock()
	before, _ := r.backlogFromLocked(r.firstByteLocked())
	r.mu.Unlock()
	if int64(len(before)) != 64<<10 {
		t.Fatalf("history %d bytes, want 64 KiB", len(before))
	}
	cfg.BacklogSize = 1 << 20
	r.SetConfig(cfg)
	r.mu.Lock()
	after, _ := r.backlogFromLocked(r.firstByteLocked())
	r.mu.Unlock()
	if !bytes.Equal(before, after) {
		t.Fatalf("growing the backlog changed its history: %d bytes before, %d after", len(before), len(after))
	}
	charged := host.used
	cfg.BacklogSize = 20 << 10
	r.SetConfig(cfg)
	r.mu.Lock()
	after, _ = r.backlogFromLocked(r.firstByteLocked())
	r.mu.Unlock()
	if !bytes.Equal(after, before[len(before)-20<<10:]) {
		t.Fatalf("shrinking the backlog kept %d bytes, not the newest 20 KiB", len(after))
	}
	if host.used >= charged || host.used > 20<<10+2*chunkSize {
		t.Fatalf("shrinking the backlog left %d bytes charged (was %d)", host.used, charged)
	}
}

// BenchmarkFeed measures Feed of one BF.ADD record into the backlog (1 MiB, full) with no
// replica attached: the cost every write pays on a primary that has had a replica.
//
//	go test -run '^$' -bench BenchmarkFeed -count 5 ./internal/repl
func BenchmarkFeed(b *testing.B) {
	r := New(nopHost{}, DefaultConfig(), nil)
	defer r.Close()
	r.active.Store(true)
	argv := [][]byte{[]byte("BF.ADD"), []byte("users"), []byte("user-1234567890@example.com")}
	for range 1 << 16 { // fill the backlog first
		r.Feed(argv)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.Feed(argv)
	}
}
