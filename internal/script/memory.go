package script

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// A script's memory is bounded by watching the Go heap while it runs: every watchEvery, a
// timer (armed only for runs that last that long) reads the heap; when it has grown by more
// than Options.MemoryBudget since the run began, a garbage collection tells live memory from
// garbage, and if the live growth is still over the budget (or the heap over twice the
// budget, whatever the collector says) the script is stopped with an error. The check runs
// on its own goroutine, so it also sees a string that doubles in one instruction: the next
// doubling never starts. Single allocations that could pass the budget at once (string.rep,
// string.format's widths) are checked where they are made.

const watchEvery = time.Millisecond

// allocLimit returns the most one allocation of a script may take.
func (e *Engine) allocLimit() int64 {
	if e.opts.MemoryBudget != nil {
		if b := e.opts.MemoryBudget(); b > 0 {
			return b
		}
	}
	return 1 << 30
}

// A watchdog watches the running script from a timer's goroutine. There is one per Engine,
// its timer reset at each run, so that a short run costs no allocation and no goroutine.
type watchdog struct {
	e      *Engine
	mu     sync.Mutex
	t      *time.Timer
	r      *run // the run watched; nil between runs
	start  time.Time
	budget int64
	base   int64
	lastGC time.Time
}

// watch starts the watch of run r and returns the function that stops it.
func (e *Engine) watch(r *run) func() {
	if e.opts.MemoryBudget == nil && r.req.Tick == nil {
		return func() {}
	}
	w := &e.wd
	w.mu.Lock()
	w.e, w.r, w.start, w.base = e, r, time.Now(), 0
	if w.t == nil {
		w.t = time.AfterFunc(watchEvery, w.tick)
	} else {
		w.t.Reset(watchEvery)
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.r = nil
		w.t.Stop()
		w.mu.Unlock()
	}
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
var heapMu sync.Mutex

func heapObjects() int64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	metrics.Read(heapSample)
	if heapSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(heapSample[0].Value.Uint64())
}

func (w *watchdog) tick() {
	// The run's fields are read under the lock: the next run's watch sets them while a late tick
	// of the previous one may still be here.
	w.mu.Lock()
	r, start, e := w.r, w.start, w.e
	w.mu.Unlock()
	if r == nil {
		return
	}
	if tick := r.req.Tick; tick != nil {
		tick(time.Since(start))
	}
	if e.opts.MemoryBudget != nil {
		w.mu.Lock()
		ok := w.r == r && w.checkMemory(r)
		w.mu.Unlock()
		if !ok {
			return
		}
	}
	w.mu.Lock()
	if w.r == r {
		w.t.Reset(watchEvery)
	}
	w.mu.Unlock()
}

// checkMemory stops r if it grew the heap by more than the budget, and reports whether it
// still runs. w.mu is held.
func (w *watchdog) checkMemory(r *run) bool {
	cur := heapObjects()
	if w.base == 0 {
		// The first look, a watchEvery into the run: what the script grew in that time is
		// not counted, and is small.
		w.base = cur
		w.budget = w.e.allocLimit()
		return true
	}
	grew := cur - w.base
	if grew <= w.budget {
		return true
	}
	if grew <= 2*w.budget && time.Since(w.lastGC) > 50*time.Millisecond {
		runtime.GC()
		w.lastGC = time.Now()
		grew = heapObjects() - w.base
	}
	if grew > w.budget {
		r.kill("Script killed: its memory grew by more than the " + strconv.FormatInt(w.budget, 10) + " bytes the server can give it")
		return false
	}
	return true
}
