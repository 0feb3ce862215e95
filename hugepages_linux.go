package bloom

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Large bit arrays are backed by transparent huge pages where the kernel allows it (the "madvise"
// mode most distributions ship). A filter far larger than the cache costs a TLB miss on almost
// every access with 4 KiB pages, and under virtualisation a TLB miss walks two page tables; with
// 2 MiB pages the TLB covers gigabytes. Go's heap does not ask for huge pages, so allocWords
// aligns large arrays to 2 MiB and asks for them itself. BenchmarkHugePages measures the gain at
// n = 1e8 (bench/results/hugepages.txt, medians of 5): blocked Test 214 -> 193 ns, TestMany 26.5
// -> 22.6 ns per key; classic Test 325 -> 322 ns and TestMany 129 -> 127 ns, within noise (its
// k misses per key overlap, so the page walks hide behind them). It is kept: it helps the fast
// path and costs the classic filter nothing.

const (
	hugePageSize = 2 << 20
	hugePageMin  = 16 << 20 // from this size on the array is aligned to be wholly huge-paged
	// From this size on, the whole 2 MiB pages inside the array (it is not aligned: no memory is
	// given up) are marked for huge pages. A second-level TLB of 2,048 4 KiB entries covers 8 MiB:
	// a 10M-item RedisBloom filter (11.4 MiB) measured 360 -> 235 CPU-ns per Test and 715 -> 430
	// per test-and-add of a new key with huge pages (AMD EPYC, virtual).
	hugePageInterior = 4 << 20
)

// hugePages switches huge-page backing on; BenchmarkHugePages turns it off to compare.
var hugePages = true

// allocWords returns a zeroed array of n words; from 4 MiB on, its whole 2 MiB pages are marked
// for huge pages; from 16 MiB on, it starts on a 2 MiB boundary and
// is marked for huge pages before anything touches it, so the first touch maps huge pages. The
// array is ordinary Go memory (at most 2 MiB of the allocation is left unused before it) and the
// garbage collector frees it as usual.
func allocWords(n uint64) bitArray {
	if !hugePages || n*8 < hugePageInterior {
		return make(bitArray, n)
	}
	if n*8 < hugePageMin {
		a := make(bitArray, n)
		madviseHuge(a, unix.MADV_HUGEPAGE)
		return a
	}
	raw := make(bitArray, n+hugePageSize/8)
	off := (hugePageSize - uint64(uintptr(unsafe.Pointer(&raw[0])))%hugePageSize) % hugePageSize / 8
	a := raw[off : off+n : off+n]
	madviseHuge(a, unix.MADV_HUGEPAGE)
	return a
}

// adviseHugePages marks an array that is already in use (a decoded one) for huge pages; the
// kernel's khugepaged then collapses its small pages in the background. Collapsing at once
// (MADV_COLLAPSE) made decoding a 130 MB filter 170 ms slower here, for no gain measurable
// right after, so it is left to the kernel.
func adviseHugePages(a []uint64) {
	if !hugePages || uint64(len(a))*8 < hugePageInterior {
		return
	}
	madviseHuge(a, unix.MADV_HUGEPAGE)
}

// madviseHuge applies advice to the whole 2 MiB pages inside a. Errors are ignored: the advice
// only changes speed, never contents.
func madviseHuge(a []uint64, advice int) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	end := start + uintptr(len(a))*8
	first := (start + hugePageSize - 1) &^ (hugePageSize - 1)
	last := end &^ (hugePageSize - 1)
	if last <= first {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a)*8)
	_ = unix.Madvise(b[first-start:last-start], advice)
}
