package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limits on what a slow log entry keeps of a command, as in Redis: the first slowlogMaxArgs
// arguments, each cut to slowlogMaxArgLen bytes.
const (
	slowlogMaxArgs   = 32
	slowlogMaxArgLen = 128
)

// A SlowEntry is one command that took longer than the slow log's threshold.
type SlowEntry struct {
	ID     int64
	Time   int64 // unix seconds when it ended
	Micros int64 // how long it ran
	Args   []string
	Addr   string // the client's address
	Name   string // the client's name
}

// A SlowLog keeps the latest commands slower than a threshold (slowlog-log-slower-than,
// microseconds; negative turns it off, 0 logs every command) in a ring of at most MaxLen
// entries (slowlog-max-len). The zero value is not usable; use NewSlowLog.
type SlowLog struct {
	threshold atomic.Int64 // microseconds
	maxLen    atomic.Int64

	mu      sync.Mutex
	entries []SlowEntry // newest last
	nextID  int64
}

// NewSlowLog returns an empty slow log with Redis's defaults: 10000 µs and 128 entries.
func NewSlowLog() *SlowLog {
	l := &SlowLog{}
	l.threshold.Store(10000)
	l.maxLen.Store(128)
	return l
}

// SetThreshold sets slowlog-log-slower-than in microseconds.
func (l *SlowLog) SetThreshold(us int64) { l.threshold.Store(us) }

// SetMaxLen sets slowlog-max-len, dropping the oldest entries beyond it.
func (l *SlowLog) SetMaxLen(n int64) {
	l.maxLen.Store(max(n, 0))
	l.mu.Lock()
	l.trim()
	l.mu.Unlock()
}

// Slow reports whether a command that took ns nanoseconds belongs in the log. It is one atomic
// load: callers ask it for every command and build the entry only when it says yes.
func (l *SlowLog) Slow(ns int64) bool {
	t := l.threshold.Load()
	return t >= 0 && ns >= t*1000
}

// Add logs a command that took ns nanoseconds. args are copied (and cut as Redis cuts them).
func (l *SlowLog) Add(ns int64, args [][]byte, addr, name string) {
	n := min(len(args), slowlogMaxArgs)
	kept := make([]string, 0, n)
	for i := range n {
		a := args[i]
		switch {
		case i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs:
			kept = append(kept, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
		case len(a) > slowlogMaxArgLen:
			kept = append(kept, string(a[:slowlogMaxArgLen])+"... ("+strconv.Itoa(len(a)-slowlogMaxArgLen)+" more bytes)")
		default:
			kept = append(kept, string(a))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, SlowEntry{ID: l.nextID, Time: time.Now().Unix(), Micros: ns / 1000,
		Args: kept, Addr: addr, Name: name})
	l.nextID++
	l.trim()
}

func (l *SlowLog) trim() {
	if over := len(l.entries) - int(l.maxLen.Load()); over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

// Get returns up to n entries, newest first; n < 0 means all.
func (l *SlowLog) Get(n int) []SlowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	out := make([]SlowEntry, n)
	for i := range n {
		out[i] = l.entries[len(l.entries)-1-i]
	}
	return out
}

// Len returns the number of entries.
func (l *SlowLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Reset removes every entry; IDs keep counting, as in Redis.
func (l *SlowLog) Reset() {
	l.mu.Lock()
	l.entries = l.entries[:0]
	l.mu.Unlock()
}
