package hash

import (
	"encoding/binary"
)

// RedisBloomSeed is the seed RedisBloom passes to the first MurmurHash64A call of every item
// (bloom_calc_hash64 in RedisBloom's deps/bloom/bloom.c).
const RedisBloomSeed = 0xc6a4a7935bd1e995

// MurmurHash64A returns Austin Appleby's 64-bit MurmurHash2 ("64A", for 64-bit platforms) of data,
// reading 8-byte blocks little-endian as RedisBloom does on x86-64 and arm64.
func MurmurHash64A(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(data)) * m)
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		data = data[8:]
	}
	if n := len(data); n > 0 {
		// The reference XORs the tail bytes in one at a time (a fallthrough switch);
		// assembling them little-endian is the same value.
		var t uint64
		for i := n - 1; i >= 0; i-- {
			t = t<<8 | uint64(data[i])
		}
		h ^= t
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// RedisBloom64 returns the pair (a, b) RedisBloom derives an item's bit positions from:
// a = MurmurHash64A(item, RedisBloomSeed), b = MurmurHash64A(item, a).
func RedisBloom64(item []byte) (a, b uint64) {
	a = MurmurHash64A(item, RedisBloomSeed)
	return a, MurmurHash64A(item, a)
}
