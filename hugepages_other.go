//go:build !linux

package bloom

// hugePages is meaningless where huge pages are not requested; it exists for the benchmarks.
var hugePages = false

// allocWords returns a zeroed array of n words.
func allocWords(n uint64) bitArray { return make(bitArray, n) }

// adviseHugePages does nothing outside Linux.
func adviseHugePages([]uint64) {}
