// Package guava reads and writes the stream of Guava's BloomFilter.writeTo, bit for bit, so that
// filters move between Java services and Go programs in both directions.
//
// # The stream
//
// BloomFilter.writeTo writes, big-endian throughout:
//
//	offset size
//	0      1    strategy ordinal: 1 MURMUR128_MITZ_64 (bloom.Guava64, Guava's default since 17.0),
//	            0 MURMUR128_MITZ_32 (bloom.Guava32, the legacy strategy)
//	1      1    k, the number of hash functions, an unsigned byte (1..255)
//	2      4    L, the number of 64-bit words, a signed int (1..2^31-1)
//	6      8·L  the words, bit b in word b/64 under mask 1<<(b%64)
//
// The filter's modulus is 64·L bits. The stream holds no magic, no version, no funnel and no
// checksum: any 6+8L bytes whose header is valid decode to some filter. The funnel (how Java turns
// an object into bytes) is not recorded either; it must be the one the Go side uses. The typed
// helpers of bloom.Filter encode keys exactly as Guava's funnels do: AddString and TestString
// as Funnels.stringFunnel(UTF_8), AddInt64 as Funnels.longFunnel(), AddInt32 as
// Funnels.integerFunnel(), and Add with raw bytes as Funnels.byteArrayFunnel().
//
// # Java and Go
//
// A filter built in Java:
//
//	BloomFilter<String> f = BloomFilter.create(Funnels.stringFunnel(UTF_8), 1_000_000, 0.01);
//	f.put("alice@example.com");
//	try (OutputStream out = new FileOutputStream("users.bloom")) {
//	    f.writeTo(out);
//	}
//
// answers the same in Go:
//
//	data, err := os.ReadFile("users.bloom")
//	...
//	f, err := guava.Unmarshal(data)
//	...
//	f.TestString("alice@example.com") // true, as f.mightContain in Java
//
// and guava.WriteTo writes a filter that BloomFilter.readFrom(in, Funnels.stringFunnel(UTF_8))
// reads back. bloom.New(n, p) sizes a filter exactly as BloomFilter.create(funnel, n, p) does, so
// the same keys added on both sides give byte-identical streams.
//
// # Untrusted input
//
// Decoding validates the header (strategy, k, L) before it allocates, refuses sizes beyond this
// machine's memory with bloom.ErrTooLarge, and reads the words in growing steps, so a stream that
// claims 16 GiB but ends early costs memory in proportion to the bytes that arrived. Every error
// caused by the bytes, truncation included, wraps bloom.ErrCorrupt and says what is wrong; no
// filter is returned alongside an error.
//
// # Examples
//
// Example reads a filter that Java wrote with BloomFilter.writeTo and asks it what Java would;
// ExampleWriteTo writes one for Java's BloomFilter.readFrom.
package guava

//go:generate sh testdata/java/gen.sh
