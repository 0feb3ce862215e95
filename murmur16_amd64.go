package bloom

import "golang.org/x/sys/cpu"

// hasMurmur16x8 reports whether murmur16x8 can run: it needs AVX2.
var hasMurmur16x8 = cpu.X86.HasAVX2

// murmur16x8 sets h1[i], h2[i] to murmur3.Sum128 of the 16 bytes at keys[i], for eight keys.
// It reads exactly 16 bytes at each pointer.
//
//go:noescape
func murmur16x8(keys *[8]*byte, h1, h2 *[8]uint64)
