package bloom_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomd/bloom"
)

// A blocked filter answers with one memory access per key; it needs a little more memory than a
// classic filter for the same false-positive rate.
func ExampleBlocked() {
	f, err := bloom.NewBlocked(100_000, 0.01)
	if err != nil {
		panic(err)
	}
	for i := range 100_000 {
		f.AddString(fmt.Sprint("user:", i))
	}
	fp := 0
	for i := range 100_000 {
		if f.TestString(fmt.Sprint("visitor:", i)) {
			fp++
		}
	}
	fmt.Printf("k=%d in %d words per key, %.2f bits per key\n", f.K(), f.Sectors(), float64(f.M())/100_000)
	fmt.Println("user:42 present:", f.TestString("user:42"))
	fmt.Printf("false positives: %.2f%%\n", float64(fp)/1000)
	// Output:
	// k=6 in 2 words per key, 10.35 bits per key
	// user:42 present: true
	// false positives: 0.98%
}

// A scalable filter need not know how many keys will come: it grows by adding filters, and its
// false-positive rate stays below p.
func ExampleScalable() {
	s, err := bloom.NewScalable(1000, 0.01, nil) // a first guess of 1000 keys
	if err != nil {
		panic(err)
	}
	for i := range 100_000 {
		s.AddString(fmt.Sprint("order-", i))
	}
	fp := 0
	for i := range 100_000 {
		if s.TestString(fmt.Sprint("refund-", i)) {
			fp++
		}
	}
	// Keys that test present when they arrive (false positives, about 1%) are not added again:
	// they test present anyway, so Count is a little below the number of distinct keys.
	fmt.Printf("%d keys in %d links, capacity %d\n", s.Count(), s.Links(), s.Capacity())
	fmt.Printf("false positives: %.2f%%\n", float64(fp)/1000)
	// Output:
	// 99101 keys in 7 links, capacity 127000
	// false positives: 0.95%
}

// A counting filter can remove keys: here, sessions that end.
func ExampleCounting() {
	sessions, err := bloom.NewCounting(10_000, 0.001)
	if err != nil {
		panic(err)
	}
	sessions.AddString("s-1")
	sessions.AddString("s-2")
	fmt.Println(sessions.TestString("s-1"), sessions.Count())

	if err := sessions.RemoveString("s-1"); err != nil {
		panic(err)
	}
	fmt.Println(sessions.TestString("s-1"), sessions.Count())

	err = sessions.RemoveString("s-1") // removed already: definitely absent now
	fmt.Println(errors.Is(err, bloom.ErrNotPresent))
	// Output:
	// true 2
	// false 1
	// true
}

// Decode reads a filter of any kind, as a tool that is handed a file does.
func ExampleDecode() {
	f, _ := bloom.NewBlocked(1000, 0.01)
	f.AddString("alice")
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}

	g, err := bloom.Decode(&file)
	if err != nil {
		panic(err)
	}
	info := g.Info()
	fmt.Printf("%s filter: k=%d, m=%d bits, %d bytes, about %d keys\n", info.Kind, info.K, info.M, info.Bytes, info.Count)
	fmt.Println(g.TestString("alice"), g.TestString("bob"))
	// Output:
	// blocked filter: k=6, m=10752 bits, 1344 bytes, about 1 keys
	// true false
}

// Batches: AddMany and TestMany hash all keys first and then touch memory, so that the cache
// misses of a large filter overlap. Reusing the result slice avoids allocation.
func ExampleFilter_TestMany() {
	f, _ := bloom.New(1000, 0.01)
	f.AddManyStrings(nil, []string{"a", "b", "c"})
	results := make([]bool, 0, 16)
	results = f.TestManyStrings(results[:0], []string{"a", "x", "c"})
	fmt.Println(results)
	// Output:
	// [true false true]
}
