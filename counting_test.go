package bloom_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

var countingImpl = conformance.Impl{
	New: func(n uint64, p float64) (conformance.Filter, error) { return bloom.NewCounting(n, p) },
	Marshal: func(f conformance.Filter) ([]byte, error) {
		return f.(*bloom.Counting).MarshalBinary()
	},
	Unmarshal: func(b []byte) (conformance.Filter, error) {
		var f bloom.Counting
		return &f, f.UnmarshalBinary(b)
	},
	Checksummed: true,
}

func TestCountingConformance(t *testing.T) { conformance.Run(t, countingImpl) }

// A counting filter answers exactly as the classic filter of the same (m, k, scheme) holding the
// keys added and not removed: same positions, counters > 0 where bits are set.
func TestCountingMatchesClassic(t *testing.T) {
	for _, s := range []bloom.Scheme{bloom.Guava64, bloom.Guava32, bloom.RedisBloom64, bloom.Redisson} {
		m, k, _ := bloom.GuavaSize(5000, 0.01)
		if s == bloom.Redisson {
			m -= 13 // Redisson's modulus need not be whole words
		}
		f, _ := bloom.NewWithParams(m, k, s)
		c, err := bloom.NewCountingWithParams(m, k, s)
		if err != nil {
			t.Fatal(err)
		}
		keep, drop := conformance.Keys(1, 3000), conformance.Keys(2, 2000)
		for _, key := range keep {
			f.Add(key)
			c.Add(key)
		}
		for _, key := range drop {
			c.Add(key)
		}
		for i, key := range drop {
			if err := c.Remove(key); err != nil {
				t.Fatalf("%s: Remove of added key %d: %v", s, i, err)
			}
		}
		if c.NonzeroCount() != f.BitCount() || c.Count() != 3000 {
			t.Errorf("%s: %d nonzero counters for %d set bits, count %d", s, c.NonzeroCount(), f.BitCount(), c.Count())
		}
		for _, key := range conformance.Keys(3, 20_000) {
			if f.Test(key) != c.Test(key) {
				t.Fatalf("%s: counting and classic filters answer differently", s)
			}
		}
	}
}

func TestCountingRemove(t *testing.T) {
	c, _ := bloom.NewCounting(1000, 0.01)
	c.AddString("a")
	c.AddString("b")
	c.AddString("b")
	before := mustMarshal(t, c)
	// Definitely absent: an error, and nothing changes.
	for _, key := range []string{"never added", "c", "d"} {
		if c.TestString(key) {
			continue // a false positive cannot be told apart from a member
		}
		err := c.RemoveString(key)
		if !errors.Is(err, bloom.ErrNotPresent) {
			t.Errorf("Remove(%q) = %v, want ErrNotPresent", key, err)
		}
		if !bytes.Equal(before, mustMarshal(t, c)) {
			t.Fatalf("a refused Remove(%q) changed the filter", key)
		}
	}
	if err := c.RemoveString("a"); err != nil || c.TestString("a") {
		t.Errorf("Remove(a) = %v, Test(a) after = %v", err, c.TestString("a"))
	}
	if err := c.RemoveString("a"); !errors.Is(err, bloom.ErrNotPresent) {
		t.Errorf("second Remove(a) = %v, want ErrNotPresent", err)
	}
	// b was added twice: it takes two removes.
	if err := c.RemoveString("b"); err != nil || !c.TestString("b") {
		t.Errorf("after one of two Removes, Test(b) = %v (%v)", c.TestString("b"), err)
	}
	if err := c.RemoveString("b"); err != nil || c.TestString("b") || c.Count() != 0 || c.NonzeroCount() != 0 {
		t.Errorf("after both Removes: Test(b) = %v, count %d, %d nonzero (%v)", c.TestString("b"), c.Count(), c.NonzeroCount(), err)
	}
}

// A counter that reaches 15 saturates and is never decremented: the key stays present after as
// many Removes as Adds, and its other positions are not lost either.
func TestCountingSaturation(t *testing.T) {
	c, _ := bloom.NewCountingWithParams(640, 3, bloom.Guava64)
	for range 20 {
		c.AddString("hot")
	}
	if got := c.Saturated(); got == 0 || got > 3 {
		t.Fatalf("%d saturated counters after 20 Adds of one key, want 1 to 3", got)
	}
	for i := range 20 {
		if err := c.RemoveString("hot"); err != nil {
			t.Fatalf("Remove %d: %v", i, err)
		}
	}
	if !c.TestString("hot") {
		t.Error("a saturated key tests absent after as many Removes as Adds")
	}
	if c.Count() != 0 {
		t.Errorf("Count = %d after equal Adds and Removes", c.Count())
	}
}

// Concurrent Adds and Removes of distinct keys never lose a key that stays, and the count is exact.
func TestCountingConcurrentAddRemove(t *testing.T) {
	c, _ := bloom.NewCounting(40_000, 0.01)
	const workers = 4
	stay := make([][][]byte, workers)
	var wg sync.WaitGroup
	for w := range workers {
		stay[w] = conformance.Keys(uint64(200+w), 3000)
		wg.Go(func() {
			gone := conformance.Keys(uint64(300+w), 3000)
			for i := range gone {
				c.Add(stay[w][i])
				c.Add(gone[i])
				if err := c.Remove(gone[i]); err != nil {
					t.Errorf("worker %d: Remove of an added key: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		for i, key := range stay[w] {
			if !c.Test(key) {
				t.Fatalf("worker %d key %d lost", w, i)
			}
		}
	}
	if c.Count() != workers*3000 {
		t.Errorf("Count = %d, want %d", c.Count(), workers*3000)
	}
}

func TestCountingStatistics(t *testing.T) {
	c, _ := bloom.NewCounting(10_000, 0.01)
	for _, key := range conformance.Keys(5, 10_000) {
		c.Add(key)
	}
	if p := c.EstimatedFPP(); p < 0.007 || p > 0.013 {
		t.Errorf("EstimatedFPP at capacity = %g", p)
	}
	info := c.Info()
	if info.Kind != "counting" || info.Count != 10_000 || info.M != c.M() || info.Bytes != int64(c.M()/2) {
		t.Errorf("Info = %+v", info)
	}
	d := c.Clone()
	c.Reset()
	if !(c.Count() == 0 && c.NonzeroCount() == 0 && d.Count() == 10_000 && !d.Equal(c)) {
		t.Error("Reset or Clone is wrong")
	}
	if _, err := bloom.NewCounting(1e15, 0.01); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("NewCounting(1e15, 0.01): %v", err)
	}
	if _, err := bloom.NewCountingWithParams(64, 0, bloom.Guava64); !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Errorf("k=0: %v", err)
	}
}

func TestCountingAllocatesNothing(t *testing.T) {
	c, _ := bloom.NewCounting(10_000, 0.01)
	key := []byte("some key")
	c.Add(key)
	for name, fn := range map[string]func(){
		"Add":  func() { c.Add(key) },
		"Test": func() { c.Test(key) },
		"Remove": func() {
			c.Add(key)
			_ = c.Remove(key)
		},
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s allocates %.1f times per call", name, a)
		}
	}
}

func TestCountingDecodeRefuses(t *testing.T) {
	c, _ := bloom.NewCountingWithParams(640, 3, bloom.Guava64)
	c.AddString("x")
	good := mustMarshal(t, c)
	r, _ := bloom.NewCountingWithParams(100, 3, bloom.Redisson) // 7 words, 12 counters of padding
	rgood := mustMarshal(t, r)
	padded := bytes.Clone(rgood[64:])
	padded[len(padded)-5] = 0x10 // counter 106 of 100, in the last word
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"blocked record", mustMarshal(t, mustBlocked(t)), "not a counting one"},
		{"scheme", nativeHeader(4, 9, 3, 640, 0, 320, nil), "hashing scheme"},
		{"k", nativeHeader(4, 1, 0, 640, 0, 320, nil), "k=0"},
		{"m zero", nativeHeader(4, 1, 3, 0, 0, 0, nil), "counters is not in"},
		{"m words", nativeHeader(4, 1, 3, 600, 0, 304, nil), "multiple of 64"},
		{"params", nativeHeader(4, 1, 3, 640, 0, 320, []byte{1}), "nonzero parameters"},
		{"payload", nativeHeader(4, 1, 3, 640, 0, 640, nil), "does not match"},
		{"padding", append(rgood[:64:64], withCRC(padded[:len(padded)-4])...), "past the last"},
		{"truncated", good[:len(good)-3], "truncated"},
	} {
		var d bloom.Counting
		err := d.UnmarshalBinary(c.data)
		if !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrCorrupt mentioning %q", c.name, err, c.want)
		}
	}
}
