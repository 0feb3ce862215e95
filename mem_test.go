package bloom_test

import "runtime"

// runtimeMem reads the cumulative bytes allocated by the Go heap.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
