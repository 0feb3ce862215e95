package guava_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
)

// benchFilter is the filter of BloomFilter.create(funnel, 1_000_000, 0.01): 1.2 MB.
func benchFilter(b *testing.B) *bloom.Filter {
	f, err := bloom.New(1_000_000, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1_000_000 {
		f.AddInt64(int64(i))
	}
	return f
}

func BenchmarkWriteTo(b *testing.B) {
	f := benchFilter(b)
	b.SetBytes(f.ByteLen())
	for b.Loop() {
		if _, err := guava.WriteTo(io.Discard, f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFrom(b *testing.B) {
	data, err := guava.Marshal(benchFilter(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := guava.ReadFrom(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	data, err := guava.Marshal(benchFilter(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := guava.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}
