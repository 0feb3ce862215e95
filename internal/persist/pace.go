package persist

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// A pacer keeps a snapshot's copy from taking the cores that the event loops want, on the two
// levels where it could:
//
//   - In Go's scheduler, a goroutine runs until it blocks or is preempted after 10 ms, and an
//     event loop that the network wakes while every P is busy waits in a run queue. So step,
//     called after each slice of the copy (about 50 µs of work), yields the P: a runnable loop
//     runs first.
//   - In the kernel's, the copy's thread competes with the loops' threads (and with anything
//     else on the machine) for the cores. So every paceEvery of copying, step reads how long its
//     thread has waited for a core since it last looked (the run delay of
//     /proc/thread-self/schedstat, kept per thread, as the goroutine may move between threads):
//     a thread that waited was kept off a core by another that wanted it, so the copy sleeps
//     for paceRest before going on, handing the core over. A copy that nobody contends with
//     never sleeps and goes at full speed (a shutdown's snapshot, an idle server); under load
//     it takes at most about paceEvery out of each paceEvery+paceRest of a core. Where the
//     run delay cannot be read, every stretch is taken as contended.
//
// Lowering the copy thread's priority instead (a locked thread with nice 19) was measured and
// not kept: a thread the kernel keeps waiting still holds its P, so Go's stop-the-world pauses
// (and the goroutines queued on that P) wait for the kernel to run it again, which under load
// can take far longer than the stall it was meant to avoid.
type pacer struct {
	last    time.Time        // when the current stretch started
	waited  map[int]int64    // each thread's run delay when last read, ns
	files   map[int]*os.File // each thread's schedstat
	noStats bool             // schedstat cannot be read: pace every stretch

	// For tests: the clock, the sleep, the yield and the run delay of the calling thread.
	now     func() time.Time
	sleep   func(time.Duration)
	yield   func()
	delayOf func() (tid int, ns int64, ok bool)
}

const (
	paceEvery  = 200 * time.Microsecond // copying between two looks at the run delay
	paceWaited = 50 * time.Microsecond  // run delay in one stretch that means the core is wanted
	paceRest   = time.Millisecond       // the sleep after a contended stretch
)

func newPacer() *pacer {
	p := &pacer{now: time.Now, sleep: time.Sleep, yield: runtime.Gosched}
	p.delayOf = p.runDelay
	p.last = p.now()
	return p
}

// step is called between two slices of the copy.
func (p *pacer) step() {
	p.yield()
	now := p.now()
	if now.Sub(p.last) < paceEvery {
		return
	}
	contended := true
	if tid, ns, ok := p.delayOf(); ok {
		if p.waited == nil {
			p.waited = make(map[int]int64)
		}
		prev, seen := p.waited[tid]
		p.waited[tid] = ns
		// A thread not seen before gives no difference: only its later stretches count.
		contended = seen && ns-prev > int64(paceWaited)
	}
	if contended {
		p.sleep(paceRest)
		now = p.now()
	}
	p.last = now
}

// runDelay returns the calling thread's id and the time it has waited for a core, from its
// /proc schedstat (the second field, in nanoseconds).
func (p *pacer) runDelay() (int, int64, bool) {
	if p.noStats {
		return 0, 0, false
	}
	tid := syscall.Gettid()
	f := p.files[tid]
	if f == nil {
		var err error
		if f, err = os.Open("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat"); err != nil {
			p.noStats = true // no /proc, or no schedstat in this kernel
			return 0, 0, false
		}
		if p.files == nil {
			p.files = make(map[int]*os.File)
		}
		p.files[tid] = f
	}
	var b [96]byte
	n, _ := f.ReadAt(b[:], 0)
	ns, ok := secondField(b[:n])
	return tid, ns, ok
}

// secondField parses the second of the space-separated decimal numbers in b.
func secondField(b []byte) (int64, bool) {
	_, rest, ok := bytes.Cut(b, []byte{' '})
	if !ok {
		return 0, false
	}
	var v int64
	digits := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
		digits++
	}
	return v, digits > 0 && digits < 19
}

// close releases the files the pacer opened.
func (p *pacer) close() {
	for _, f := range p.files {
		f.Close()
	}
	p.files = nil
}
