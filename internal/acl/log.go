package acl

import (
	"sync"
	"time"
)

// Contexts of a log entry, as ACL LOG shows them.
const (
	ContextToplevel = "toplevel"
	ContextMulti    = "multi"
	ContextLua      = "lua"
)

// A LogEntry is one line of ACL LOG: a denial, or several alike within a minute.
type LogEntry struct {
	Count      int64
	Reason     Result
	Context    string
	Object     string // the command, key, channel, or for an AUTH failure "AUTH"
	Username   string
	Time       time.Time // of the latest occurrence
	ClientInfo string    // CLIENT LIST's line for the latest client, without the newline
}

// ReasonName returns the entry's reason as ACL LOG words it.
func (e *LogEntry) ReasonName() string {
	switch e.Reason {
	case DeniedCommand:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// groupWindow is how close in time two alike denials must be to share an entry, and groupScan
// how many of the newest entries are searched for one (Redis's values).
const (
	groupWindow = 60 * time.Second
	groupScan   = 10
)

// A Log is the ACL log: the newest denials first, at most MaxLen. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry // newest first
	maxLen  int
}

// NewLog returns an empty log that keeps at most maxLen entries (acllog-max-len).
func NewLog(maxLen int) *Log { return &Log{maxLen: maxLen} }

// SetMaxLen changes the most entries kept, dropping the oldest beyond it.
func (l *Log) SetMaxLen(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxLen = n
	l.trim()
}

func (l *Log) trim() {
	if len(l.entries) > l.maxLen {
		clear(l.entries[max(l.maxLen, 0):])
		l.entries = l.entries[:max(l.maxLen, 0)]
	}
}

// Add records a denial at now. If one of the ten newest entries has the same reason, context,
// object and user and is less than a minute older, that entry is counted up, takes the new time
// and client, and moves to the front, as in Redis.
func (l *Log) Add(reason Result, context, object, username, clientInfo string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.entries[:min(len(l.entries), groupScan)] {
		d := now.Sub(e.Time)
		if d < 0 {
			d = -d
		}
		if e.Reason == reason && e.Context == context && e.Object == object && e.Username == username && d <= groupWindow {
			e.Count++
			e.Time, e.ClientInfo = now, clientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = e
			return
		}
	}
	e := &LogEntry{Count: 1, Reason: reason, Context: context, Object: object, Username: username, Time: now, ClientInfo: clientInfo}
	l.entries = append(l.entries, nil)
	copy(l.entries[1:], l.entries)
	l.entries[0] = e
	l.trim()
}

// Entries returns copies of at most n of the newest entries, newest first.
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = max(min(n, len(l.entries)), 0)
	out := make([]LogEntry, n)
	for i := range n {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}
