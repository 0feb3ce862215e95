package bench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocWords returns a zeroed array of n words, on huge pages if asked: aligned to 2 MiB and
// marked MADV_HUGEPAGE before first touch, as package bloom allocates its large arrays.
func allocWords(n uint64, huge bool) []uint64 {
	if !huge {
		return make([]uint64, n)
	}
	const page = 2 << 20
	raw := make([]uint64, n+page/8)
	off := (page - uint64(uintptr(unsafe.Pointer(&raw[0])))%page) % page / 8
	a := raw[off : off+n : off+n]
	b := unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a)*8)
	_ = unix.Madvise(b[:len(b)&^(page-1)], unix.MADV_HUGEPAGE)
	return a
}

// threadCPU returns the CPU time the calling thread has used, in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
