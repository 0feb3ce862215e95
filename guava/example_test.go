package guava_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
)

// Reading a filter Java wrote. These 14 bytes are what Guava 31.1 writes for
//
//	BloomFilter<String> f = BloomFilter.create(Funnels.stringFunnel(UTF_8), 10, 0.1);
//	for (int i = 0; i < 10; i++) f.put("tiny-" + i);
//	f.writeTo(out);
func Example() {
	stream := []byte{
		0x01,                   // strategy MURMUR128_MITZ_64
		0x03,                   // k = 3
		0x00, 0x00, 0x00, 0x01, // one 64-bit word
		0x2d, 0x08, 0xe4, 0x5a, 0x41, 0x64, 0x2f, 0x24,
	}
	f, err := guava.Unmarshal(stream)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Scheme(), f.M(), f.K())
	fmt.Println(f.TestString("tiny-0"), f.TestString("tiny-9"), f.TestString("tiny-10"))
	// Output:
	// guava64 64 3
	// true true false
}

// Writing a filter for Java: BloomFilter.readFrom(in, Funnels.stringFunnel(UTF_8)) reads it back
// and answers mightContain("alice@example.com") with true.
func ExampleWriteTo() {
	f, err := bloom.New(1000, 0.01) // as BloomFilter.create(funnel, 1000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	f.AddString("alice@example.com")
	var out bytes.Buffer
	n, err := guava.WriteTo(&out, f)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes, header % x\n", n, out.Bytes()[:guava.HeaderSize])
	// Output:
	// 1206 bytes, header 01 07 00 00 00 96
}
