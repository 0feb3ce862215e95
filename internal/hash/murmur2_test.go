package hash

import (
	"encoding/binary"
	"testing"
)

// reference64A is MurmurHash64A as Appleby's reference states it (and RedisBloom's copy in
// deps/murmur2/MurmurHash2.c): 8-byte blocks read little-endian, then the 1 to 7 tail bytes
// XORed in by a fallthrough switch from the last one down, then one multiply; here the switch
// is a loop over the same cases. MurmurHash64A assembles the tail in one word instead; the two
// must agree for every length.
func reference64A(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(data))*m
	nblocks := len(data) / 8
	for i := range nblocks {
		k := binary.LittleEndian.Uint64(data[8*i:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := data[8*nblocks:]
	switch len(tail) & 7 {
	case 0:
	default:
		for i := len(tail) - 1; i >= 0; i-- { // case 7 falls through to case 1
			h ^= uint64(tail[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

func TestMurmurHash64AMatchesReference(t *testing.T) {
	data := make([]byte, 64)
	for i := range data {
		data[i] = byte(i*151 + 7)
	}
	seen := map[uint64]int{}
	for n := range len(data) + 1 { // every tail length, with 0 to 8 blocks before it
		for _, seed := range []uint64{0, 1, RedisBloomSeed, 1 << 63} {
			got, want := MurmurHash64A(data[:n], seed), reference64A(data[:n], seed)
			if got != want {
				t.Fatalf("MurmurHash64A(%d bytes, seed %#x) = %#x, reference gives %#x", n, seed, got, want)
			}
			if seed == RedisBloomSeed {
				if prev, dup := seen[got]; dup {
					t.Fatalf("lengths %d and %d hash alike (%#x): the length is not mixed in", prev, n, got)
				}
				seen[got] = n
			}
		}
	}
}

// RedisBloom seeds the second hash with the first (bloom_calc_hash64).
func TestRedisBloom64SeedsSecondWithFirst(t *testing.T) {
	for _, item := range []string{"", "a", "hello", "a somewhat longer item of 33 bytes"} {
		a, b := RedisBloom64([]byte(item))
		wa := reference64A([]byte(item), RedisBloomSeed)
		if a != wa {
			t.Errorf("%q: a = %#x, want %#x", item, a, wa)
		}
		if wb := reference64A([]byte(item), wa); b != wb {
			t.Errorf("%q: b = %#x, want MurmurHash64A(item, a) = %#x", item, b, wb)
		}
	}
}

func FuzzMurmurHash64A(f *testing.F) {
	f.Add([]byte(""), uint64(0))
	f.Add([]byte("1234567"), uint64(RedisBloomSeed))
	f.Add([]byte("12345678"), uint64(RedisBloomSeed))
	f.Add([]byte("123456789abcdefghijklmnopqrstuv"), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		if got, want := MurmurHash64A(data, seed), reference64A(data, seed); got != want {
			t.Fatalf("MurmurHash64A(%x, %#x) = %#x, reference gives %#x", data, seed, got, want)
		}
	})
}
