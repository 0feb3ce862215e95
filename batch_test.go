package bloom_test

import (
	"bytes"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

// batchKinds makes one empty filter of every type, for n keys at 1%.
func batchKinds(t *testing.T, n uint64) map[string]bloom.AnyFilter {
	t.Helper()
	classic, err1 := bloom.New(n, 0.01)
	redis, err2 := bloom.NewWithParams(n*10, 7, bloom.RedisBloom64)
	blocked, err3 := bloom.NewBlocked(n, 0.01)
	blocked4, err4 := bloom.NewBlockedWithParams(n*16, 12, 4)
	scalable, err5 := bloom.NewScalable(n/10, 0.01, nil) // grows while the batch is added
	scalableB, err6 := bloom.NewScalable(n/10, 0.01, &bloom.ScalableOptions{Blocked: true})
	counting, err7 := bloom.NewCounting(n, 0.01)
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return map[string]bloom.AnyFilter{"classic": classic, "classic-redisbloom": redis, "blocked": blocked,
		"blocked-4": blocked4, "scalable": scalable, "scalable-blocked": scalableB, "counting": counting}
}

// AddMany must give exactly the answers and the state of Add called key by key, including for
// keys repeated inside one batch and batches longer than the internal chunk; TestMany and the
// string forms must agree with Test.
func TestBatchMatchesSingle(t *testing.T) {
	const n = 5000
	keys := conformance.Keys(60, n)
	keys = append(keys, keys[10], keys[11], keys[4000]) // repeats inside the batch
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	singles, batches, stringBatches := batchKinds(t, n), batchKinds(t, n), batchKinds(t, n)
	for name, single := range singles {
		batch, sbatch := batches[name], stringBatches[name]
		var want []bool
		for _, k := range keys {
			want = append(want, single.Add(k))
		}
		// Uneven pieces: 1 key, 63, 64, 65, the rest.
		var got, sgot []bool
		for _, cut := range [][2]int{{0, 1}, {1, 64}, {64, 128}, {128, 193}, {193, len(keys)}} {
			got = batch.AddMany(got, keys[cut[0]:cut[1]])
			sgot = sbatch.AddManyStrings(sgot, strs[cut[0]:cut[1]])
		}
		for i := range want {
			if got[i] != want[i] || sgot[i] != want[i] {
				t.Fatalf("%s: key %d: Add = %v, AddMany = %v, AddManyStrings = %v", name, i, want[i], got[i], sgot[i])
			}
		}
		a, b, c := mustMarshal(t, single), mustMarshal(t, batch), mustMarshal(t, sbatch)
		if !bytes.Equal(a, b) || !bytes.Equal(a, c) {
			t.Errorf("%s: AddMany left a different filter than Add", name)
		}
		probe := append(conformance.Keys(61, 3000), keys[:1000]...)
		pstrs := make([]string, len(probe))
		for i, k := range probe {
			pstrs[i] = string(k)
		}
		res := batch.TestMany([]bool{true}, probe) // appends after what dst holds
		sres := batch.TestManyStrings(nil, pstrs)
		if len(res) != len(probe)+1 || !res[0] || len(sres) != len(probe) {
			t.Fatalf("%s: TestMany returned %d results for %d keys", name, len(res), len(probe))
		}
		for i, k := range probe {
			if w := single.Test(k); res[i+1] != w || sres[i] != w || batch.TestString(pstrs[i]) != w {
				t.Fatalf("%s: key %d: Test = %v, TestMany = %v, TestManyStrings = %v", name, i, w, res[i+1], sres[i])
			}
		}
		if len(batch.TestMany(nil, nil)) != 0 || len(batch.AddManyStrings(nil, nil)) != 0 {
			t.Errorf("%s: empty batches gave results", name)
		}
	}
}

func TestBatchAllocatesNothing(t *testing.T) {
	keys := conformance.Keys(62, 300)
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	dst := make([]bool, 0, len(keys))
	for name, f := range batchKinds(t, 100_000) {
		f.AddMany(nil, keys) // scalable filters grow here, not in the measured runs
		for op, fn := range map[string]func(){
			"AddMany":         func() { dst = f.AddMany(dst[:0], keys) },
			"TestMany":        func() { dst = f.TestMany(dst[:0], keys) },
			"AddManyStrings":  func() { dst = f.AddManyStrings(dst[:0], strs) },
			"TestManyStrings": func() { dst = f.TestManyStrings(dst[:0], strs) },
		} {
			if a := testing.AllocsPerRun(20, fn); a != 0 {
				t.Errorf("%s %s allocates %.1f times per call", name, op, a)
			}
		}
	}
}
