package metrics

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// A Command holds one command's statistics, as Redis's INFO commandstats and latencystats
// report them. Its recording methods do nothing on a nil *Command, so a command registered
// without statistics costs nothing and breaks nothing.
type Command struct {
	name string

	calls, ns, rejected, failed atomic.Int64
	_                           [32]byte // keep the histogram's hot first buckets off this line
	hist                        Histogram
}

// Name returns the command's name as INFO reports it ("bf.add", "client|setname").
func (c *Command) Name() string { return c.name }

// Add records calls completed calls that took ns nanoseconds in all. Callers sum many calls in
// their own memory and add them at once.
func (c *Command) Add(calls, ns int64) {
	if c == nil {
		return
	}
	c.calls.Add(calls)
	c.ns.Add(ns)
}

// Observe records one call's duration in the command's latency histogram.
func (c *Command) Observe(ns int64) {
	if c != nil {
		c.hist.Observe(ns)
	}
}

// ObserveN records n calls of ns nanoseconds each: a timed call standing for untimed ones.
func (c *Command) ObserveN(ns, n int64) {
	if c != nil {
		c.hist.ObserveN(ns, n)
	}
}

// Reject records a call refused before it ran (unknown arguments count, authentication, memory).
func (c *Command) Reject() {
	if c != nil {
		c.rejected.Add(1)
	}
}

// Fail records a call that ran and answered an error.
func (c *Command) Fail() {
	if c != nil {
		c.failed.Add(1)
	}
}

// A CommandSnapshot is a command's statistics at one moment.
type CommandSnapshot struct {
	Name             string
	Calls, Ns        int64
	Rejected, Failed int64
	Latency          HistogramSnapshot
}

// Snapshot reads the command's statistics.
func (c *Command) Snapshot() CommandSnapshot {
	return CommandSnapshot{Name: c.name, Calls: c.calls.Load(), Ns: c.ns.Load(),
		Rejected: c.rejected.Load(), Failed: c.failed.Load(), Latency: c.hist.Snapshot()}
}

func (c *Command) reset() {
	c.calls.Store(0)
	c.ns.Store(0)
	c.rejected.Store(0)
	c.failed.Store(0)
	c.hist.Reset()
}

// maxErrorCodes is how many distinct error codes are counted, as in Redis: a client that makes up
// error codes (a script's error replies) cannot grow the table without bound. Past it, further new
// codes count only in the total.
const maxErrorCodes = 128

// Stats is the server's set of statistics: per command, per error code, the slow log and the
// latency monitor. The zero value is not usable; use NewStats.
type Stats struct {
	mu   sync.Mutex
	cmds map[string]*Command

	errMu    sync.RWMutex
	errs     map[string]*atomic.Int64
	errTotal atomic.Int64
	rejected atomic.Int64 // calls rejected before they ran, unknown commands included

	SlowLog *SlowLog
	Latency *LatencyMonitor
}

// NewStats returns empty statistics.
func NewStats() *Stats {
	return &Stats{cmds: map[string]*Command{}, errs: map[string]*atomic.Int64{},
		SlowLog: NewSlowLog(), Latency: NewLatencyMonitor()}
}

// Command returns the statistics of the named command, creating them on first use. Callers keep
// the result: the lookup takes a lock.
func (s *Stats) Command(name string) *Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cmds[name]
	if c == nil {
		c = &Command{name: name}
		s.cmds[name] = c
	}
	return c
}

// Commands returns a snapshot of every command called or rejected at least once, sorted by name.
func (s *Stats) Commands() []CommandSnapshot {
	s.mu.Lock()
	cmds := make([]*Command, 0, len(s.cmds))
	for _, c := range s.cmds {
		cmds = append(cmds, c)
	}
	s.mu.Unlock()
	out := make([]CommandSnapshot, 0, len(cmds))
	for _, c := range cmds {
		if cs := c.Snapshot(); cs.Calls > 0 || cs.Rejected > 0 || cs.Failed > 0 || cs.Latency.Count > 0 {
			out = append(out, cs)
		}
	}
	slices.SortFunc(out, func(a, b CommandSnapshot) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ErrorCode returns the code of an error reply: its first word when that is in upper case
// ("WRONGTYPE", "OOM"), else "ERR", as Redis's errorstats names them.
func ErrorCode(msg string) string {
	code := msg
	if i := strings.IndexByte(msg, ' '); i >= 0 {
		code = msg[:i]
	}
	if code == "" || len(code) > 64 {
		return "ERR"
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return "ERR"
		}
	}
	return code
}

// Error counts one error reply with the given message.
func (s *Stats) Error(msg string) {
	s.errTotal.Add(1)
	code := ErrorCode(msg)
	s.errMu.RLock()
	n := s.errs[code]
	s.errMu.RUnlock()
	if n == nil {
		s.errMu.Lock()
		if n = s.errs[code]; n == nil && len(s.errs) < maxErrorCodes {
			n = new(atomic.Int64)
			s.errs[code] = n
		}
		s.errMu.Unlock()
		if n == nil {
			return
		}
	}
	n.Add(1)
}

// Rejected counts a call refused before it ran; RejectedCalls reports the total.
func (s *Stats) Rejected() { s.rejected.Add(1) }

// RejectedCalls returns the number of calls refused before they ran.
func (s *Stats) RejectedCalls() int64 { return s.rejected.Load() }

// ErrorReplies returns the number of error replies sent.
func (s *Stats) ErrorReplies() int64 { return s.errTotal.Load() }

// An ErrorCount is the number of error replies with one code.
type ErrorCount struct {
	Code  string
	Count int64
}

// Errors returns the count of each error code seen, sorted by code.
func (s *Stats) Errors() []ErrorCount {
	s.errMu.RLock()
	out := make([]ErrorCount, 0, len(s.errs))
	for code, n := range s.errs {
		out = append(out, ErrorCount{code, n.Load()})
	}
	s.errMu.RUnlock()
	slices.SortFunc(out, func(a, b ErrorCount) int { return strings.Compare(a.Code, b.Code) })
	return out
}

// Reset clears every counter, as CONFIG RESETSTAT does. The slow log and the latency monitor are
// kept, as in Redis (SLOWLOG RESET and LATENCY RESET clear them).
func (s *Stats) Reset() {
	s.mu.Lock()
	for _, c := range s.cmds {
		c.reset()
	}
	s.mu.Unlock()
	s.errMu.Lock()
	clear(s.errs)
	s.errMu.Unlock()
	s.errTotal.Store(0)
	s.rejected.Store(0)
}
