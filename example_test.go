package bloom_test

import (
	"fmt"

	"github.com/bloomd/bloom"
)

// A cache-penetration guard: requests for keys that do not exist would all miss the cache and hit
// the database. A filter of every existing key answers "definitely not present" for almost all of
// them in memory, so only about 1% of bogus requests still reach the database.
func Example_cachePenetrationGuard() {
	existing, err := bloom.New(100_000, 0.01)
	if err != nil {
		panic(err)
	}
	for id := range int64(100_000) { // at start-up: every primary key in the table
		existing.AddInt64(id)
	}

	dbQueries := 0
	lookup := func(id int64) {
		if !existing.TestInt64(id) {
			return // definitely absent: answer "not found" without touching the database
		}
		dbQueries++ // present, or a rare false positive: ask the database
	}
	for id := range int64(200_000) { // half of these ids do not exist
		lookup(id)
	}
	fp := dbQueries - 100_000
	fmt.Printf("database queries: %d; bogus ids let through: %d (%.2f%%)\n", dbQueries, fp, float64(fp)/1000)
	// Output:
	// database queries: 100992; bogus ids let through: 992 (0.99%)
}

// De-duplication: Add reports whether a key is definitely new, so a crawler visits each URL once
// (a false positive skips a new URL with probability p; a URL is never visited twice).
func Example_deduplication() {
	seen, _ := bloom.New(1_000, 0.001)
	for _, url := range []string{
		"https://example.com/",
		"https://example.com/about",
		"https://example.com/",
		"https://example.com/contact",
		"https://example.com/about",
	} {
		if seen.AddString(url) {
			fmt.Println("visit", url)
		}
	}
	// Output:
	// visit https://example.com/
	// visit https://example.com/about
	// visit https://example.com/contact
}

// Sizing: how many bits and hash functions a filter needs, and how it degrades when overfilled.
func ExampleGuavaSize() {
	m, k, _ := bloom.GuavaSize(1_000_000, 0.01)
	fmt.Printf("m=%d bits (%s), k=%d\n", m, bloom.FormatBytes(m/8), k)
	for _, n := range []uint64{500_000, 1_000_000, 2_000_000} {
		fmt.Printf("after %d keys: p=%.4f\n", n, bloom.FalsePositiveRate(m, k, n))
	}
	// Output:
	// m=9585088 bits (1.1 MiB), k=7
	// after 500000 keys: p=0.0003
	// after 1000000 keys: p=0.0100
	// after 2000000 keys: p=0.1575
}
