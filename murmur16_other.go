//go:build !amd64

package bloom

// hasMurmur16x8 is false where murmur16x8 has no vector implementation.
var hasMurmur16x8 = false

func murmur16x8(keys *[8]*byte, h1, h2 *[8]uint64) { panic("bloom: murmur16x8 without AVX2") }
