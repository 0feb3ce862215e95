package persist

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/redisbloom"
)

// fakePace drives a pacer with a clock that each step advances by one slice's worth of work,
// and a run delay that the test sets.
type fakePace struct {
	now     time.Time
	slice   time.Duration // the clock's advance per step
	tid     int
	delay   int64 // ns
	noStats bool
	sleeps  []time.Duration
	yields  int
}

func (f *fakePace) pacer() *pacer {
	p := &pacer{
		now:   func() time.Time { return f.now },
		sleep: func(d time.Duration) { f.sleeps = append(f.sleeps, d); f.now = f.now.Add(d) },
		yield: func() { f.yields++ },
		delayOf: func() (int, int64, bool) {
			return f.tid, f.delay, !f.noStats
		},
	}
	p.last = f.now
	return p
}

// steps runs n slices of work, each followed by a step, waiting wait for a core during each.
func (f *fakePace) steps(p *pacer, n int, wait time.Duration) {
	for range n {
		f.now = f.now.Add(f.slice)
		f.delay += int64(wait)
		p.step()
	}
}

// TestPacerYieldsEverySlice: every step gives the P to the goroutines waiting for one.
func TestPacerYieldsEverySlice(t *testing.T) {
	f := &fakePace{now: time.Unix(0, 0), slice: 50 * time.Microsecond, tid: 1}
	p := f.pacer()
	f.steps(p, 100, 0)
	if f.yields != 100 {
		t.Fatalf("%d yields in 100 steps", f.yields)
	}
}

// TestPacerUncontended: a copy whose thread never waits for a core never sleeps.
func TestPacerUncontended(t *testing.T) {
	f := &fakePace{now: time.Unix(0, 0), slice: 50 * time.Microsecond, tid: 1}
	p := f.pacer()
	f.steps(p, 1000, 0)
	f.steps(p, 1000, time.Microsecond) // a little waiting, below paceWaited per stretch
	if len(f.sleeps) != 0 {
		t.Fatalf("slept %d times without contention", len(f.sleeps))
	}
}

// TestPacerContended: when the copy's thread waits for a core, the copy sleeps paceRest after
// each stretch of paceEvery, not after every slice, and goes on copying between the sleeps.
func TestPacerContended(t *testing.T) {
	f := &fakePace{now: time.Unix(0, 0), slice: 50 * time.Microsecond, tid: 1}
	p := f.pacer()
	f.steps(p, 1, 0) // the first look at the thread only takes its run delay
	f.sleeps = nil
	const n = 400 // 20 ms of slices
	f.steps(p, n, 20*time.Microsecond)
	stretches := n * f.slice / paceEvery
	if got := len(f.sleeps); got < int(stretches)-1 || got > int(stretches)+1 {
		t.Fatalf("%d sleeps in %d stretches of contended copying", got, stretches)
	}
	for _, d := range f.sleeps {
		if d != paceRest {
			t.Fatalf("slept %v, want %v", d, paceRest)
		}
	}
	// Contention ends: so do the sleeps.
	f.sleeps = nil
	f.steps(p, n, 0)
	if len(f.sleeps) > 1 { // the stretch in progress may still count the last wait
		t.Fatalf("%d sleeps after contention ended", len(f.sleeps))
	}
}

// TestPacerThreads: the run delay is compared per thread, as the copy's goroutine can move
// between threads: a thread first seen gives no difference, and another thread's larger run
// delay is not taken for waiting.
func TestPacerThreads(t *testing.T) {
	f := &fakePace{now: time.Unix(0, 0), slice: paceEvery, tid: 1, delay: 1e9}
	p := f.pacer()
	f.steps(p, 1, 0)
	f.tid, f.delay = 2, 5e9 // another thread that has waited longer in its life
	f.steps(p, 1, 0)
	f.tid, f.delay = 1, 1e9
	f.steps(p, 3, 0)
	if len(f.sleeps) != 0 {
		t.Fatalf("slept %d times, with no thread waiting", len(f.sleeps))
	}
}

// TestPacerWithoutRunDelay: where the run delay cannot be read, every stretch counts as
// contended: the copy sleeps after each.
func TestPacerWithoutRunDelay(t *testing.T) {
	f := &fakePace{now: time.Unix(0, 0), slice: 50 * time.Microsecond, noStats: true}
	p := f.pacer()
	f.steps(p, 40, 0) // 2 ms of slices: 10 stretches
	if len(f.sleeps) < 9 || len(f.sleeps) > 10 {
		t.Fatalf("%d sleeps in 10 stretches without a run delay", len(f.sleeps))
	}
}

// TestRunDelay reads the calling thread's run delay from the kernel, where it can.
func TestRunDelay(t *testing.T) {
	if _, err := os.Stat("/proc/thread-self/schedstat"); err != nil {
		t.Skip("no schedstat here:", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := newPacer()
	defer p.close()
	tid, d1, ok := p.runDelay()
	if !ok || tid == 0 {
		t.Fatalf("runDelay: %d, %d, %v", tid, d1, ok)
	}
	runtime.Gosched()
	tid2, d2, ok := p.runDelay()
	if !ok || tid2 != tid || d2 < d1 {
		t.Fatalf("runDelay went from %d (thread %d) to %d (thread %d)", d1, tid, d2, tid2)
	}
	if v, ok := secondField([]byte("123 456 7\n")); !ok || v != 456 {
		t.Fatalf("secondField = %d, %v", v, ok)
	}
	if _, ok := secondField([]byte("123")); ok {
		t.Fatal("secondField of one field succeeded")
	}
}

// signalWriter closes ready at its first write after armed is set, and then records, at each
// write, whether the goroutine waiting for ready has run.
type signalWriter struct {
	armed  bool
	ready  chan struct{}
	ran    *atomic.Bool
	writes int
	seen   []bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if !w.armed {
		return len(p), nil
	}
	if w.writes == 0 {
		close(w.ready)
	} else {
		w.seen = append(w.seen, w.ran.Load())
	}
	w.writes++
	return len(p), nil
}

// TestSnapshotCopyYields: with a single P, a goroutine made runnable while a filter's bits are
// being written runs before the copy has gone on by more than a slice: the copy does not hold
// the P for the whole filter (an event loop woken by the network would wait that long).
func TestSnapshotCopyYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ch, _ := redisbloom.NewChain(30_000_000, 0.01, 2, true, nil) // 34 MiB: three pieces
	fillRandom(t, ch)
	var ran atomic.Bool
	w := &signalWriter{ready: make(chan struct{}), ran: &ran}
	var wg sync.WaitGroup
	wg.Go(func() {
		<-w.ready
		ran.Store(true)
	})
	w.armed = true
	if _, err := WriteSnapshot(w, SnapshotHeader{}, []Item{{Key: "bf", Chain: ch, Header: ch.Header()}}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(w.seen) < 10 {
		t.Fatalf("only %d writes", len(w.seen))
	}
	if !w.seen[1] {
		t.Fatalf("the waiting goroutine had not run after %d of %d writes", countFalse(w.seen), len(w.seen))
	}
}

func countFalse(b []bool) int {
	n := 0
	for _, v := range b {
		if !v {
			n++
		}
	}
	return n
}

// fillRandom sets about half of ch's bits, as a filter at capacity has them.
func fillRandom(t testing.TB, ch *redisbloom.Chain) {
	t.Helper()
	iter := int64(1)
	var buf []byte
	seed := uint64(1)
	for {
		next, p := ch.ScanDumpInto(iter, buf)
		if next == 0 {
			return
		}
		buf = p
		for i := range p {
			seed = seed*6364136223846793005 + 1442695040888963407
			p[i] = byte(seed >> 56)
		}
		if err := ch.LoadChunk(next, p); err != nil {
			t.Fatal(err)
		}
		iter = next
	}
}

// TestSnapshotSparseProbe: a block is stored whatever byte of it holds a bit (in the 64 bytes
// read first or past them, in the last, shorter block), a block of zeros is not, and the filter
// loads back bit for bit.
func TestSnapshotSparseProbe(t *testing.T) {
	ch, _ := redisbloom.NewChain(15_000_000, 0.01, 2, true, nil) // 17 MiB: two pieces, the last short
	size := int64(len(bitsOf(ch)))
	var offsets []int64
	for _, off := range []int64{0, blockSize + probeSize - 1, 2*blockSize + probeSize, 4*blockSize - 1, 9 * blockSize,
		pieceSize - 1, pieceSize, pieceSize + 3*blockSize + 100, size - 1} {
		if off < size {
			offsets = append(offsets, off)
		}
	}
	for i, off := range offsets {
		if err := ch.LoadChunk(off+2, []byte{byte(1 << (i % 8))}); err != nil {
			t.Fatal(err)
		}
	}
	items := []Item{{Key: "bf", Chain: ch, Header: ch.Header()}}
	data := writeSnap(t, items)
	if most := int64(len(offsets))*blockSize + 4096; int64(len(data)) > most {
		t.Errorf("snapshot of %d bytes for %d blocks with bits, want at most %d", len(data), len(offsets), most)
	}
	if least := int64(len(offsets)-1) * blockSize; int64(len(data)) < least {
		t.Errorf("snapshot of %d bytes for %d blocks with bits, want at least %d", len(data), len(offsets), least)
	}
	_, got, err := readSnap(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, got, items)
}

// TestSnapshotCopyUnderAdds: bits added while a snapshot is written are either in it or not,
// and every bit set before it started is (the invariant the package documentation states),
// with both passes of a sparse piece reading the filter as adds go on.
func TestSnapshotCopyUnderAdds(t *testing.T) {
	ch, _ := redisbloom.NewChain(15_000_000, 0.01, 2, true, nil)
	for i := range 2000 {
		ch.Add(fmt.Appendf(nil, "before-%d", i))
	}
	before := bitsOf(ch)
	items := []Item{{Key: "bf", Chain: ch, Header: ch.Header()}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ch.Add(fmt.Appendf(nil, "during-%d", i))
		}
	})
	var b bytes.Buffer
	_, err := WriteSnapshot(&b, SnapshotHeader{}, items)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := readSnap(b.Bytes(), 0)
	if err != nil {
		t.Fatal(err)
	}
	saved, after := bitsOf(got[0].Chain), bitsOf(ch)
	for i := range before {
		if saved[i]&before[i] != before[i] || saved[i]|after[i] != after[i] {
			t.Fatalf("byte %d: saved %08b, before %08b, after %08b", i, saved[i], before[i], after[i])
		}
	}
}

// bitsOf returns ch's bit arrays, without the header that dumpOf starts with.
func bitsOf(ch *redisbloom.Chain) []byte { return dumpOf(ch)[len(ch.Header()):] }
