package bloom

import (
	"bytes"
	"fmt"
	"testing"
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
