//go:build !linux

package bloom

// totalMemory returns 0 (unknown) where the physical memory is not read; only the fixed upper
// bound of checkAlloc applies there.
func totalMemory() uint64 { return 0 }
