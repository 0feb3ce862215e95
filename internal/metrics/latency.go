package metrics

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// latencyHistoryLen is how many samples an event keeps, as in Redis: one per second at most.
const latencyHistoryLen = 160

// A LatencySample is one spike of an event: when (unix seconds) and how long (milliseconds).
type LatencySample struct {
	Time   int64
	Millis int64
}

// A LatencyEvent is what LATENCY LATEST reports for one event.
type LatencyEvent struct {
	Name   string
	Latest LatencySample
	Max    int64 // milliseconds, the largest sample kept
}

type latencySeries struct {
	samples []LatencySample // oldest first, at most latencyHistoryLen
	max     int64
}

// A LatencyMonitor records events that took at least a threshold (latency-monitor-threshold,
// milliseconds; 0 turns it off, the default), as Redis's LATENCY command reports them: per event
// name, the latest sample, the largest, and a history of one sample per second. The zero value
// is not usable; use NewLatencyMonitor.
type LatencyMonitor struct {
	threshold atomic.Int64 // ms

	mu     sync.Mutex
	events map[string]*latencySeries
}

// NewLatencyMonitor returns a monitor that is off.
func NewLatencyMonitor() *LatencyMonitor {
	return &LatencyMonitor{events: map[string]*latencySeries{}}
}

// SetThreshold sets latency-monitor-threshold in milliseconds.
func (m *LatencyMonitor) SetThreshold(ms int64) { m.threshold.Store(max(ms, 0)) }

// Threshold returns latency-monitor-threshold.
func (m *LatencyMonitor) Threshold() int64 { return m.threshold.Load() }

// Spike reports whether a duration of ns nanoseconds is to be recorded: one atomic load.
func (m *LatencyMonitor) Spike(ns int64) bool {
	t := m.threshold.Load()
	return t > 0 && ns >= t*int64(time.Millisecond)
}

// Add records a spike of event that took ns nanoseconds. Within one second, the larger sample
// is kept.
func (m *LatencyMonitor) Add(event string, ns int64) {
	ms := ns / int64(time.Millisecond)
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.events[event]
	if s == nil {
		s = &latencySeries{}
		m.events[event] = s
	}
	s.max = max(s.max, ms)
	if n := len(s.samples); n > 0 && s.samples[n-1].Time == now {
		s.samples[n-1].Millis = max(s.samples[n-1].Millis, ms)
		return
	}
	if len(s.samples) == latencyHistoryLen {
		s.samples = append(s.samples[:0], s.samples[1:]...)
	}
	s.samples = append(s.samples, LatencySample{now, ms})
}

// Latest returns each event's latest sample and maximum, sorted by name.
func (m *LatencyMonitor) Latest() []LatencyEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]LatencyEvent, 0, len(m.events))
	for name, s := range m.events {
		out = append(out, LatencyEvent{Name: name, Latest: s.samples[len(s.samples)-1], Max: s.max})
	}
	slices.SortFunc(out, func(a, b LatencyEvent) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// History returns the samples of event, oldest first.
func (m *LatencyMonitor) History(event string) []LatencySample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.events[event]; s != nil {
		return slices.Clone(s.samples)
	}
	return nil
}

// Reset forgets the named events, or every event when none is named, and returns how many it
// forgot.
func (m *LatencyMonitor) Reset(events ...string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		n := len(m.events)
		clear(m.events)
		return n
	}
	n := 0
	for _, e := range events {
		if _, ok := m.events[e]; ok {
			delete(m.events, e)
			n++
		}
	}
	return n
}
