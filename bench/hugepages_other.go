//go:build !linux

package bench

// allocWords returns a zeroed array of n words; huge pages are only requested on Linux.
func allocWords(n uint64, huge bool) []uint64 { return make([]uint64, n) }

// threadCPU returns 0 where the thread's CPU time is not read: cpu-ns/op then reads 0.
func threadCPU() int64 { return 0 }
