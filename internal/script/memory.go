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

type watchdog struct {
	e      *Engine
	r      *run
	start  time.Time
	budget int64
	mu     sync.Mutex
	t      *time.Timer
	done   bool
	base   int64
	lastGC time.Time
}

// watch starts the memory watch of run r and returns the function that stops it.
func (e *Engine) watch(r *run) func() {
	if e.opts.MemoryBudget == nil && r.req.Tick == nil {
		return func() {}
	}
	w := &watchdog{e: e, r: r, start: time.Now()}
	w.mu.Lock()
	w.t = time.AfterFunc(watchEvery, w.tick)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.done = true
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
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	if tick := w.r.req.Tick; tick != nil {
		tick(time.Since(w.start))
	}
	if w.e.opts.MemoryBudget == nil {
		w.rearm()
		return
	}
	cur := heapObjects()
	if w.base == 0 {
		// The first look, a watchEvery into the run: what the script grew in that time is
		// not counted, and is small.
		w.base = cur
		w.budget = w.e.allocLimit()
	} else if grew := cur - w.base; grew > w.budget {
		if grew <= 2*w.budget && time.Since(w.lastGC) > 50*time.Millisecond {
			runtime.GC()
			w.lastGC = time.Now()
			grew = heapObjects() - w.base
		}
		if grew > w.budget {
			w.r.kill("Script killed: its memory grew by more than the " + strconv.FormatInt(w.budget, 10) + " bytes the server can give it")
			return
		}
	}
	w.rearm()
}

func (w *watchdog) rearm() {
	w.mu.Lock()
	if !w.done {
		w.t.Reset(watchEvery)
	}
	w.mu.Unlock()
}
