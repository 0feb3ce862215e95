// Package bloom implements Bloom filters: compact sets that answer "definitely not present" or
// "probably present", exactly compatible with Guava, RedisBloom and Redisson where asked.
//
// # The math
//
// A filter of m bits answers with k positions per key. After n distinct keys a never-added key
// tests present with probability p ≈ (1 - e^(-kn/m))^k. For a target (n, p) the optimal sizes are
//
//	m = -n·ln(p) / ln²(2)    k = (m/n)·ln(2)
//
// so 1% costs 9.6 bits and 7 probes per key, and every tenfold cut of p adds 4.8 bits per key.
// New uses Guava 31.1's exact rule (GuavaSize); RedisBloomSize gives RedisBloom's. FalsePositiveRate
// and Capacity answer the other questions: what rate a filter reaches at n, how many keys it holds
// at a rate.
//
// # Hashing
//
// Each key is hashed once to two 64-bit values h1, h2, and its k positions are derived by double
// hashing (h1 + i·h2 mod m, with each scheme's exact variations). A Scheme names the combination;
// Guava64 (murmur3 x64_128, Guava's MURMUR128_MITZ_64) is the default. Keys are bytes; the typed
// helpers encode as Guava's funnels do, so the same key answers the same in Java and Go:
// strings as their UTF-8 bytes, int64/uint64 as 8 little-endian bytes, int32 as 4.
//
// # Types
//
// Filter is the classic filter, Guava- and RedisBloom-compatible. Blocked puts all of a key's bits
// in one 64-byte cache line: one memory access per operation instead of k, for about 8% more
// memory at p = 0.01; use it when speed matters more than compatibility. Scalable is a chain of
// classic or blocked filters that grows with the keys while its false-positive rate stays below
// p; use it when the number of keys is unknown. Counting has 4-bit counters instead of bits, so
// keys can be removed, at four times the memory. All of them satisfy AnyFilter, and all have
// batch forms, AddMany and TestMany, which overlap the cache misses of many keys. Cuckoo is a
// cuckoo filter laid out as RedisBloom's CF.* filters: one fingerprint per key, so keys can be
// removed and counted.
//
// # Concurrency
//
// Filters are safe for concurrent use without locks. Bits live in 64-bit words that adds set with
// an atomic OR (as Guava's LockFreeBitArray does) and tests read with atomic loads.
//
// # Files
//
// WriteTo, ReadFrom, MarshalBinary and UnmarshalBinary use the native format, documented in
// encoding.go: a checksummed 64-byte header (magic, version, kind, scheme, k, m, count), then the
// words, then a checksum of the words. The kind byte says which type wrote the record (classic,
// blocked, scalable, counting; each type's file documents its parameters and payload), and
// Decode reads a record of any kind into an AnyFilter, so a program can open a file without
// knowing what it holds. Decoding validates everything before it allocates and reports damage
// as ErrCorrupt. Guava's stream format is in package guava, RedisBloom's BF.SCANDUMP format in
// package redisbloom.
//
// # Usage
//
//	f, err := bloom.New(1_000_000, 0.01) // 1M keys at 1% false positives: 1.2 MB, k = 7
//	if err != nil { ... }
//	f.AddString("alice@example.com")
//	f.TestString("alice@example.com") // true
//	f.TestString("bob@example.com")   // false, except for 1% of such keys
//
// # Examples
//
// The runnable examples (go doc -all github.com/bloomd/bloom, or go test -run Example) cover a
// first filter in front of a database (Example_cachePenetrationGuard), de-duplicating a stream
// (Example_deduplication), Guava's sizing (ExampleGuavaSize), each type (ExampleBlocked,
// ExampleScalable, ExampleCounting, ExampleCuckoo), batches (ExampleFilter_TestMany) and opening a
// file of any kind (ExampleDecode).
//
// # See also
//
// Package redisfilter keeps filters in Redis, shared by every instance of a service; package
// guava reads and writes Guava's BloomFilter streams; package redisbloom is RedisBloom's scalable
// filter and dump format; package guard puts a filter in front of a cache and a database.
// BENCHMARKS.md, at the module's root, measures every type against other Go libraries.
package bloom
