package repl

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

type nopHost struct{}

func (nopHost) Snapshot(func()) (int64, func(io.Writer) error, error) { return 0, nil, io.EOF }
func (nopHost) Load(io.Reader, int64) error                           { return nil }
func (nopHost) Apply([][]byte)                                        {}
func (nopHost) EndBatch()                                             {}
func (nopHost) Port() int                                             { return 0 }
func (nopHost) RoleChanged(bool)                                      {}

// TestBacklog feeds records of random sizes through a small ring and checks every range PSYNC
// may ask for against the whole stream kept aside: present when the ring still holds it, refused
// when it does not.
func TestBacklog(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BacklogSize = 16 << 10
	r := New(nopHost{}, cfg, nil)
	r.active.Store(true) // as once a replica attached
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte
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
		first := r.offset - r.histlen + 1
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
	if r.histlen != cfg.BacklogSize {
		t.Errorf("histlen %d, want the ring's size %d", r.histlen, cfg.BacklogSize)
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
