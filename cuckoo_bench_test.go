package bloom_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/bloomd/bloom"
)

// BenchmarkCuckooVsBloom compares the cuckoo filter's Add, Test and Remove with the classic and
// blocked filters at n = 1e6 and 1e7 keys (1e7 only without -short). The Bloom filters are
// sized for the false-positive rate the cuckoo filter measures when full (about 1.5% with
// RedisBloom's default buckets of 2), so bits/key compare filters of equal accuracy; each reports
// bits/key and its measured FPP. Keys are 8-byte counters; "Test" asks for keys that are present.
// Names are n=N/impl=FILTER/op=OP, for benchstat's projections (bench/run.sh cuckoo).
//
//	go test -run '^$' -bench CuckooVsBloom -benchtime 300000x -count 6 .
func BenchmarkCuckooVsBloom(b *testing.B) {
	sizes := []int{1_000_000, 10_000_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		keys := make([][]byte, n)
		buf := make([]byte, 8*n)
		for i := range keys {
			keys[i] = buf[8*i : 8*i+8 : 8*i+8]
			binary.LittleEndian.PutUint64(keys[i], uint64(i)*0x9e3779b97f4a7c15)
		}
		absent := func(i int) []byte {
			var k [8]byte
			binary.LittleEndian.PutUint64(k[:], uint64(n+i)*0x9e3779b97f4a7c15)
			return k[:]
		}
		full, _ := bloom.NewCuckoo(uint64(n), nil)
		for _, k := range keys {
			if err := full.Add(k); err != nil {
				b.Fatal(err)
			}
		}
		const trials = 200_000
		fp := 0
		for i := range trials {
			if full.Test(absent(i)) {
				fp++
			}
		}
		p := float64(fp) / trials
		type impl struct {
			name  string
			make  func() (add func([]byte), test func([]byte) bool, remove func([]byte), bits func() uint64)
			nodel bool
		}
		impls := []impl{
			{name: "cuckoo", make: func() (func([]byte), func([]byte) bool, func([]byte), func() uint64) {
				c, _ := bloom.NewCuckoo(uint64(n), nil)
				return func(k []byte) { _ = c.Add(k) }, c.Test, func(k []byte) { c.Remove(k) }, func() uint64 { return c.Info().Bytes * 8 }
			}},
			{name: "classic", nodel: true, make: func() (func([]byte), func([]byte) bool, func([]byte), func() uint64) {
				f, _ := bloom.New(uint64(n), p)
				return func(k []byte) { f.Add(k) }, f.Test, nil, func() uint64 { return f.Info().M }
			}},
			{name: "blocked", nodel: true, make: func() (func([]byte), func([]byte) bool, func([]byte), func() uint64) {
				f, _ := bloom.NewBlocked(uint64(n), p)
				return func(k []byte) { f.Add(k) }, f.Test, nil, func() uint64 { return f.Info().M }
			}},
			{name: "counting", make: func() (func([]byte), func([]byte) bool, func([]byte), func() uint64) {
				f, _ := bloom.NewCounting(uint64(n), p)
				return func(k []byte) { f.Add(k) }, f.Test, func(k []byte) { _ = f.Remove(k) }, func() uint64 { return f.Info().M * 4 }
			}},
		}
		for _, im := range impls {
			add, test, _, bits := im.make()
			for _, k := range keys {
				add(k)
			}
			fp := 0
			for i := range trials {
				if test(absent(i)) {
					fp++
				}
			}
			filled := bits() // after n keys: a cuckoo filter may have grown
			report := func(b *testing.B) {
				b.ReportMetric(float64(filled)/float64(n), "bits/key")
				b.ReportMetric(float64(fp)/trials, "FPP")
			}
			b.Run(fmt.Sprintf("n=1e%d/impl=%s/op=Test", len(fmt.Sprint(n))-1, im.name), func(b *testing.B) {
				for i := range b.N {
					test(keys[i%n])
				}
				report(b)
			})
			b.Run(fmt.Sprintf("n=1e%d/impl=%s/op=Add", len(fmt.Sprint(n))-1, im.name), func(b *testing.B) {
				add, _, _, _ := im.make()
				for i := range b.N {
					if i%n == 0 && i > 0 {
						b.StopTimer()
						add, _, _, _ = im.make()
						b.StartTimer()
					}
					add(keys[i%n])
				}
				report(b)
			})
			if im.nodel {
				continue
			}
			b.Run(fmt.Sprintf("n=1e%d/impl=%s/op=Remove", len(fmt.Sprint(n))-1, im.name), func(b *testing.B) {
				add2, _, rm2, _ := im.make()
				for _, k := range keys {
					add2(k)
				}
				b.ResetTimer()
				for i := range b.N {
					if i%n == 0 && i > 0 {
						b.StopTimer()
						for _, k := range keys {
							add2(k)
						}
						b.StartTimer()
					}
					rm2(keys[i%n])
				}
				report(b)
			})
		}
	}
}

// BenchmarkCuckooParallel measures the cost of the filter's RWMutex under parallel use: Test
// from every P (read lock), and Add+Remove pairs from every P (write lock), on a filter of 1e6
// keys, against one goroutine doing the same.
//
//	go test -run - -bench CuckooParallel -cpu 1,2 .
func BenchmarkCuckooParallel(b *testing.B) {
	const n = 1_000_000
	c, _ := bloom.NewCuckoo(2*n, nil)
	var k [8]byte
	for i := range n {
		binary.LittleEndian.PutUint64(k[:], uint64(i))
		_ = c.Add(k[:])
	}
	b.Run("Test", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			var k [8]byte
			for i := uint64(0); pb.Next(); i++ {
				binary.LittleEndian.PutUint64(k[:], i%n)
				c.Test(k[:])
			}
		})
	})
	b.Run("AddRemove", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			var k [8]byte
			for i := uint64(0); pb.Next(); i++ {
				binary.LittleEndian.PutUint64(k[:], n+i%n)
				_ = c.Add(k[:])
				c.Remove(k[:])
			}
		})
	})
}
