package bloom

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/murmur3"
)

// The prefetching batch path runs only on arrays over 32 MiB; here it runs on small filters of
// every scheme and must give exactly what Add and Test give one key at a time.
func TestPrefetchingBatchesMatchSingle(t *testing.T) {
	defer func(old int) { classicPrefetchWords = old }(classicPrefetchWords)
	classicPrefetchWords = 0
	keys := make([][]byte, 3001)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("key-", i%2900)) // some repeats, across groups
	}
	for _, s := range []Scheme{Guava64, Guava32, RedisBloom64, Redisson} {
		a, _ := NewWithParams(20_000, 7, s)
		b, _ := NewWithParams(20_000, 7, s)
		ca, _ := NewCountingWithParams(20_000, 7, s)
		cb, _ := NewCountingWithParams(20_000, 7, s)
		var want, cwant []bool
		for _, k := range keys {
			want = append(want, a.Add(k))
			cwant = append(cwant, ca.Add(k))
		}
		got, cgot := b.AddMany(nil, keys[:1]), cb.AddMany(nil, keys[:1])
		got, cgot = b.AddMany(got, keys[1:]), cb.AddMany(cgot, keys[1:])
		for i := range want {
			if got[i] != want[i] || cgot[i] != cwant[i] {
				t.Fatalf("%s key %d: Add %v/%v, AddMany %v/%v", s, i, want[i], cwant[i], got[i], cgot[i])
			}
		}
		ma, _ := a.MarshalBinary()
		mb, _ := b.MarshalBinary()
		mca, _ := ca.MarshalBinary()
		mcb, _ := cb.MarshalBinary()
		if !bytes.Equal(ma, mb) || !bytes.Equal(mca, mcb) {
			t.Fatalf("%s: AddMany left different filters", s)
		}
		probe := make([][]byte, 5000)
		for i := range probe {
			probe[i] = []byte(fmt.Sprint("probe-", i))
		}
		probe = append(probe, keys...)
		res, cres := b.TestMany(nil, probe), cb.TestMany(nil, probe)
		for i, k := range probe {
			if res[i] != a.Test(k) || cres[i] != ca.Test(k) {
				t.Fatalf("%s: TestMany differs from Test on key %d", s, i)
			}
		}
	}
}

// Blocked batches prefetch only beyond 4 MiB; the plain path must match single operations too.
func TestBlockedBatchPathsMatchSingle(t *testing.T) {
	defer func(old int) { blockedPrefetchWords = old }(blockedPrefetchWords)
	keys := make([][]byte, 2000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("key-", i%1900))
	}
	for _, limit := range []int{0, 1 << 30} {
		blockedPrefetchWords = limit
		a, _ := NewBlocked(3000, 0.01)
		b, _ := NewBlocked(3000, 0.01)
		got := b.AddMany(nil, keys)
		for i, k := range keys {
			if want := a.Add(k); got[i] != want {
				t.Fatalf("limit %d, key %d: Add %v, AddMany %v", limit, i, want, got[i])
			}
		}
		if !a.Equal(b) {
			t.Fatalf("limit %d: AddMany left a different filter", limit)
		}
		probe := make([][]byte, 4000)
		for i := range probe {
			probe[i] = []byte(fmt.Sprint("probe-", i))
		}
		for i, r := range b.TestMany(nil, probe) {
			if r != a.Test(probe[i]) {
				t.Fatalf("limit %d: TestMany differs from Test on key %d", limit, i)
			}
		}
	}
}

// Every batch size against one key at a time, for every filter kind and every path a batch can
// take: the prefetching pipelines forced onto small filters or not, the vector hash on or off,
// 16-byte keys (the vector hash's) alone or mixed with other lengths in a group. Each batch
// repeats keys: its own earlier ones (next to each other, in the same group and in the groups
// before) and keys of earlier batches. AddMany must answer as Add did and leave the same bytes; TestMany as Test.
func TestManyMatchesOneByOne(t *testing.T) {
	defer func(c, b int, v bool) {
		classicPrefetchWords, blockedPrefetchWords, hasMurmur16x8 = c, b, v
	}(classicPrefetchWords, blockedPrefetchWords, hasMurmur16x8)
	kinds := []struct {
		name string
		make func() (AnyFilter, error)
	}{
		{"classic-guava64", func() (AnyFilter, error) { return NewWithParams(40_000, 7, Guava64) }},
		{"classic-guava32", func() (AnyFilter, error) { return NewWithParams(40_000, 7, Guava32) }},
		{"classic-redisbloom64", func() (AnyFilter, error) { return NewWithParams(40_000, 7, RedisBloom64) }},
		{"classic-redisson", func() (AnyFilter, error) { return NewWithParams(40_000, 7, Redisson) }},
		{"blocked-2x3", func() (AnyFilter, error) { return NewBlockedWithParams(40_000, 6, 2) }},
		{"blocked-2x4", func() (AnyFilter, error) { return NewBlockedWithParams(40_000, 8, 2) }},
		{"blocked-2x2", func() (AnyFilter, error) { return NewBlockedWithParams(40_000, 4, 2) }},
		{"blocked-1x5", func() (AnyFilter, error) { return NewBlockedWithParams(40_000, 5, 1) }},
		{"blocked-4x3", func() (AnyFilter, error) { return NewBlockedWithParams(40_000, 12, 4) }},
		{"blocked-8x2", func() (AnyFilter, error) { return NewBlockedWithParams(40_000, 16, 8) }},
		{"counting", func() (AnyFilter, error) { return NewCountingWithParams(40_000, 7, Guava64) }},
		{"scalable", func() (AnyFilter, error) { return NewScalable(300, 0.01, nil) }},
		{"scalable-blocked", func() (AnyFilter, error) {
			return NewScalable(300, 0.01, &ScalableOptions{Blocked: true})
		}},
	}
	var sizes []int
	for s := range 41 {
		sizes = append(sizes, s)
	}
	sizes = append(sizes, 63, 64, 65, 127, 128, 129, 255, 1000, 1024, 1025)
	avx2 := hasMurmur16x8
	if !avx2 {
		t.Log("no AVX2 here: the vector hash is not tested")
	}
	for _, pipelined := range []bool{false, true} {
		for _, vector := range []bool{false, true} {
			if vector && !avx2 {
				continue
			}
			for _, mixed := range []bool{false, true} {
				classicPrefetchWords, blockedPrefetchWords = 32<<20/8, 4<<20/8
				if pipelined {
					classicPrefetchWords, blockedPrefetchWords = 0, 0
				}
				hasMurmur16x8 = vector
				for _, kind := range kinds {
					name := fmt.Sprintf("%s/pipelined=%v/vector=%v/mixed=%v", kind.name, pipelined, vector, mixed)
					single, err1 := kind.make()
					batch, err2 := kind.make()
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					manyMatchesOneByOne(t, name, single, batch, sizes, mixed)
				}
			}
		}
	}
}

func manyMatchesOneByOne(t *testing.T, name string, single, batch AnyFilter, sizes []int, mixed bool) {
	t.Helper()
	var seen [][]byte
	next := 0
	newKey := func() []byte {
		next++
		n := 16
		if mixed && next%5 == 0 {
			n = next % 23 // 0 to 22 bytes, the empty key included
		}
		k := make([]byte, n)
		for i := range k {
			k[i] = byte(next*131 + i*7 + next>>8)
		}
		return k
	}
	for bi, size := range sizes {
		keys := make([][]byte, size)
		for i := range keys {
			switch {
			case i > 0 && i%7 == 3:
				keys[i] = keys[i-1] // next to itself
			case i >= 9 && i%11 == 9:
				keys[i] = keys[i-9] // in the group before, or in its own
			case i >= 17 && i%19 == 17:
				keys[i] = keys[i-17] // a group or two before
			case len(seen) > 0 && i%13 == 5:
				keys[i] = seen[(i*31+bi)%len(seen)] // from an earlier batch
			default:
				keys[i] = newKey()
			}
		}
		var want []bool
		for _, k := range keys {
			want = append(want, single.Add(k))
		}
		var got []bool
		if bi%2 == 0 {
			got = batch.AddMany([]bool{true}, keys)[1:] // appends after what dst holds
		} else {
			strs := make([]string, len(keys))
			for i, k := range keys {
				strs[i] = string(k)
			}
			got = batch.AddManyStrings(nil, strs)
		}
		if len(got) != len(keys) {
			t.Fatalf("%s: batch %d of %d keys: %d results", name, bi, len(keys), len(got))
		}
		for i := range keys {
			if got[i] != want[i] {
				t.Fatalf("%s: batch %d of %d keys, key %d: Add %v, AddMany %v", name, bi, size, i, want[i], got[i])
			}
		}
		seen = append(seen, keys...)
		probe := append(keys[:len(keys):len(keys)], newKey(), newKey(), newKey())
		res := batch.TestMany(nil, probe)
		strs := make([]string, len(probe))
		for i, k := range probe {
			strs[i] = string(k)
		}
		sres := batch.TestManyStrings(nil, strs)
		for i, k := range probe {
			if w := single.Test(k); res[i] != w || sres[i] != w {
				t.Fatalf("%s: batch %d, key %d: Test %v, TestMany %v, TestManyStrings %v", name, bi, i, w, res[i], sres[i])
			}
		}
	}
	a, _ := single.MarshalBinary()
	b, _ := batch.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Errorf("%s: AddMany left different bytes than Add", name)
	}
}

// hashGroup must give murmur3.Sum128 for every key, through the vector hash (a full group of
// 16-byte keys, as bytes or as strings) and through the scalar one (shorter groups, other
// lengths, no AVX2).
func TestHashGroup(t *testing.T) {
	defer func(v bool) { hasMurmur16x8 = v }(hasMurmur16x8)
	avx2 := hasMurmur16x8
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 20000 {
		n := blockedGroup
		if round%10 == 9 {
			n = 1 + rng.IntN(blockedGroup)
		}
		keys := make([][]byte, n)
		strs := make([]string, n)
		for i := range keys {
			l := 16
			if round%7 == 6 && i == round%n {
				l = rng.IntN(40) // one key of another length in the group
			}
			keys[i] = make([]byte, l)
			for j := range keys[i] {
				keys[i][j] = byte(rng.Uint32())
			}
			if round < 16 { // extremes: all zero bits, all one bits, one bit set
				for j := range keys[i] {
					keys[i][j] = [2]byte{0, 0xff}[round&1]
				}
				if round >= 2 && l == 16 {
					keys[i][(round-2)%16] ^= 1 << (i % 8)
				}
			}
			strs[i] = string(keys[i])
		}
		for _, vector := range []bool{false, true} {
			hasMurmur16x8 = vector && avx2
			var h1, h2, s1, s2 [blockedGroup]uint64
			hashGroup(&h1, &h2, keys, nil, 0, n)
			hashGroup(&s1, &s2, nil, strs, 0, n)
			for i, k := range keys {
				w1, w2 := murmur3.Sum128(k)
				if h1[i] != w1 || h2[i] != w2 || s1[i] != w1 || s2[i] != w2 {
					t.Fatalf("round %d, vector %v, key %x: %x %x (strings %x %x), want %x %x",
						round, vector, k, h1[i], h2[i], s1[i], s2[i], w1, w2)
				}
			}
		}
	}
}

// FuzzHashGroup holds the vector hash to murmur3.Sum128 for any eight 16-byte keys: the input's
// first 128 bytes, repeated as needed.
func FuzzHashGroup(f *testing.F) {
	f.Add([]byte{0})
	f.Add(bytes.Repeat([]byte{0xff}, 128))
	f.Add([]byte("0123456789abcdef0123456789abcdef"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		keys := make([][]byte, blockedGroup)
		for i := range keys {
			keys[i] = make([]byte, 16)
			for j := range keys[i] {
				keys[i][j] = data[(i*16+j)%len(data)]
			}
		}
		var h1, h2 [blockedGroup]uint64
		hashGroup(&h1, &h2, keys, nil, 0, blockedGroup)
		for i, k := range keys {
			if w1, w2 := murmur3.Sum128(k); h1[i] != w1 || h2[i] != w2 {
				t.Fatalf("key %x: %x %x, want %x %x", k, h1[i], h2[i], w1, w2)
			}
		}
	})
}
