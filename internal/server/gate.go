package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A gate lets one goroutine run alone (EXEC, RENAME, FLUSHALL, and later a snapshot's start)
// without putting a shared lock on every command. Each goroutine that runs commands owns a slot
// and marks it busy around each command: two atomic stores to its own cache line and one load of
// a flag that is written only when someone wants to run alone. The exclusive runner raises the
// flag and waits until no slot is busy; slots that see the flag step back and wait for it to
// drop. sync/atomic operations are sequentially consistent, so a slot and the runner can never
// both believe they may go ahead.
type gate struct {
	excl atomic.Bool
	mu   sync.Mutex // held by the exclusive runner, for its whole run

	slotsMu sync.Mutex
	slots   map[*slot]struct{}

	// A script runs alone too, and may run for long: once it passes busy-reply-threshold it
	// declares itself busy (setBusy), and the commands waiting for it (tryEnter,
	// tryExclusive) give up, to be answered -BUSY, rather than hold up their event loop.
	busy   atomic.Bool
	waitMu sync.Mutex
	waitCh chan struct{} // closed when the exclusive run ends or turns busy; nil between runs
}

// A slot is one command-running goroutine's busy flag, padded to its own cache line.
type slot struct {
	_    [64]byte
	busy atomic.Bool
	_    [63]byte
}

func newGate() *gate { return &gate{slots: make(map[*slot]struct{})} }

func (g *gate) register() *slot {
	s := new(slot)
	g.slotsMu.Lock()
	g.slots[s] = struct{}{}
	g.slotsMu.Unlock()
	return s
}

func (g *gate) unregister(s *slot) {
	g.slotsMu.Lock()
	delete(g.slots, s)
	g.slotsMu.Unlock()
}

// enter marks s busy, first waiting out any exclusive run.
func (g *gate) enter(s *slot) {
	for {
		s.busy.Store(true)
		if !g.excl.Load() {
			return
		}
		s.busy.Store(false)
		g.mu.Lock()
		//lint:ignore SA2001 taking the lock is the wait for the exclusive run to end
		g.mu.Unlock()
	}
}

// tryEnter is enter for a command about to run: it returns false, without marking s busy,
// when the server is held by a script past busy-reply-threshold.
func (g *gate) tryEnter(s *slot) bool {
	for {
		s.busy.Store(true)
		if !g.excl.Load() {
			return true
		}
		s.busy.Store(false)
		if !g.waitRun() {
			return false
		}
	}
}

// waitRun waits for the exclusive run in progress to end, and returns false if it is, or
// turns, a busy script.
func (g *gate) waitRun() bool {
	if g.busy.Load() {
		return false
	}
	g.waitMu.Lock()
	ch := g.waitCh
	g.waitMu.Unlock()
	if ch == nil {
		runtime.Gosched() // between Lock and the channel, or just ended
		return true
	}
	<-ch
	return !g.busy.Load()
}

// setBusy declares the exclusive run in progress a busy script: waiters give up.
func (g *gate) setBusy() {
	g.waitMu.Lock()
	defer g.waitMu.Unlock()
	if g.waitCh != nil && !g.busy.Load() {
		g.busy.Store(true)
		close(g.waitCh)
	}
}

// mark marks s busy without looking at the flag: for the exclusive runner, which takes its own
// slot again before it lets the others go on (Conn.runExclusive).
func (g *gate) mark(s *slot) { s.busy.Store(true) }

// exit marks s idle.
func (g *gate) exit(s *slot) { s.busy.Store(false) }

// exclusive runs fn while no other slot is busy. The caller's own slot must not be busy.
func (g *gate) exclusive(fn func()) {
	g.mu.Lock()
	g.run(fn)
}

// tryExclusive is exclusive for a command about to run: it returns false, without running
// fn, when the server is held by a script past busy-reply-threshold.
func (g *gate) tryExclusive(fn func()) bool {
	for !g.mu.TryLock() {
		if !g.waitRun() {
			return false
		}
	}
	g.run(fn)
	return true
}

// run runs fn alone; g.mu is held, and released when fn returns.
func (g *gate) run(fn func()) {
	defer g.mu.Unlock()
	ch := make(chan struct{})
	g.waitMu.Lock()
	g.waitCh = ch
	g.waitMu.Unlock()
	defer func() {
		g.waitMu.Lock()
		if !g.busy.Load() {
			close(ch)
		}
		g.busy.Store(false)
		g.waitCh = nil
		g.waitMu.Unlock()
	}()
	g.excl.Store(true)
	defer g.excl.Store(false)
	g.slotsMu.Lock()
	busy := make([]*slot, 0, len(g.slots))
	for s := range g.slots {
		busy = append(busy, s)
	}
	g.slotsMu.Unlock()
	// A slot registered after the copy starts idle and sees excl before it can become busy.
	for _, s := range busy {
		for spins := 0; s.busy.Load(); spins++ {
			if spins < 100 {
				runtime.Gosched()
			} else {
				spinSleep()
			}
		}
	}
	fn()
}

func spinSleep() { time.Sleep(20 * time.Microsecond) }
