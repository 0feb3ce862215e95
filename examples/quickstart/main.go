// Command quickstart builds a Bloom filter for one million keys at a 1% false-positive rate,
// shows its answers for a few keys, and measures its false-positive rate on a million keys that
// were never added.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/bloomd/bloom"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: quickstart\n\n"+
			"Builds a Bloom filter for a million keys at p=0.01, tests a few keys and measures the\n"+
			"false-positive rate on a million keys never added. It takes no arguments.\n")
	}
	flag.Parse() // -h and -help print the usage and exit 0
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	const n, p = 1_000_000, 0.01
	f, err := bloom.New(n, p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("filter for %d keys at p=%g: %d bits (%s), k=%d\n", n, p, f.M(), bloom.FormatBytes(f.M()/8), f.K())

	for i := range n {
		f.AddString(fmt.Sprintf("user:%d", i))
	}
	for _, key := range []string{"user:42", "user:999999", "user:1000000", "nobody"} {
		fmt.Printf("  Test(%q) = %v\n", key, f.TestString(key))
	}

	fp := 0
	for i := range n {
		if f.TestString(fmt.Sprintf("absent:%d", i)) {
			fp++
		}
	}
	fmt.Printf("measured false-positive rate: %.4f%% (%d of %d absent keys); expected %.4f%%\n",
		100*float64(fp)/n, fp, n, 100*bloom.FalsePositiveRate(f.M(), f.K(), n))
	fmt.Printf("estimated count %d, fill ratio %.3f\n", f.ApproximateCount(), f.FillRatio())
}
