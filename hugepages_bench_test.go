package bloom

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// BenchmarkHugePages measures what huge pages gain on filters far larger than the cache: the same
// filter types at n = 1e8 (about 120 MB each), allocated with and without MADV_HUGEPAGE, in the
// same run. It is slow to set up (it fills four filters of 1e8 keys) and runs only when asked:
//
//	go test -run '^$' -bench HugePages -count 6 -timeout 0
func BenchmarkHugePages(b *testing.B) {
	const n = 100_000_000
	defer func(old bool) { hugePages = old }(hugePages)
	type subject struct {
		test     func([]byte) bool
		testMany func([]bool, [][]byte) []bool
	}
	made := map[string]subject{}
	for _, huge := range []bool{false, true} {
		hugePages = huge
		blocked, err := NewBlocked(n, 0.01)
		if err != nil {
			b.Fatal(err)
		}
		classic, err := New(n, 0.01)
		if err != nil {
			b.Fatal(err)
		}
		keys := benchKeys(1024)
		for i := 0; i < n; i += len(keys) {
			for j := range keys {
				benchKey(keys[j], uint64(i+j))
			}
			blocked.AddMany(nil, keys)
			classic.AddMany(nil, keys)
		}
		made[fmt.Sprint("blocked/huge=", huge)] = subject{blocked.Test, blocked.TestMany}
		made[fmt.Sprint("classic/huge=", huge)] = subject{classic.Test, classic.TestMany}
	}
	for _, kind := range []string{"blocked", "classic"} {
		for _, huge := range []bool{false, true} {
			s := made[fmt.Sprint(kind, "/huge=", huge)]
			b.Run(fmt.Sprintf("%s/op=Test/huge=%v", kind, huge), func(b *testing.B) {
				var k [16]byte
				for i := range b.N {
					benchKey(k[:], uint64(i%n))
					if !s.test(k[:]) {
						b.Fatal("false negative")
					}
				}
			})
			b.Run(fmt.Sprintf("%s/op=TestMany/huge=%v", kind, huge), func(b *testing.B) {
				keys := benchKeys(1024)
				res := make([]bool, 0, len(keys))
				for i := 0; i < b.N; i += len(keys) {
					m := min(len(keys), b.N-i)
					for j := range m {
						benchKey(keys[j], uint64((i+j)%n))
					}
					res = s.testMany(res[:0], keys[:m])
				}
			})
		}
	}
}

func benchKeys(n int) [][]byte {
	buf := make([]byte, 16*n)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = buf[16*i : 16*i+16]
	}
	return keys
}

func benchKey(dst []byte, i uint64) {
	binary.LittleEndian.PutUint64(dst, i*0x9e3779b97f4a7c15)
	binary.LittleEndian.PutUint64(dst[8:], i)
}
