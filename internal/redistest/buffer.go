package redistest

import (
	"strings"
	"sync"
)

// A Buffer collects output written by several goroutines (a program's stdout and stderr, a
// logger) while a test reads it. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
