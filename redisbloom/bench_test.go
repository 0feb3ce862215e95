package redisbloom

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"testing"
)

// Benchmarks report MKeys/s besides ns/op. The "links" variants use a chain grown from the
// default BF.ADD parameters (capacity 100, expansion 2) to 14 links by 1.6M items, which is
// what a server holds after redis-benchmark's random BF.ADDs: every Add and Exists of an absent
// item probes all 14 links. Run with -cpu 1,2 to see the lock-free scaling.

func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte("bench:" + strconv.Itoa(i))
	}
	return keys
}

var benchChains = map[string]*Chain{}

// grownChain returns a default chain holding n items (built once per process).
func grownChain(b *testing.B, n int) *Chain {
	name := strconv.Itoa(n)
	if c, ok := benchChains[name]; ok {
		return c
	}
	c, err := NewChain(DefaultCapacity, DefaultErrorRate, DefaultExpansion, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		c.Add([]byte("fill:" + strconv.Itoa(i)))
	}
	benchChains[name] = c
	return c
}

func mkeys(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "MKeys/s")
}

func BenchmarkAdd(b *testing.B) {
	for _, tc := range []struct {
		name  string
		items int
	}{{"1link", 0}, {"14links", 1_600_000}} {
		b.Run(tc.name, func(b *testing.B) {
			keys := benchKeys(1 << 16)
			var c *Chain
			if tc.items == 0 {
				var err error
				// One link of 20 MB that b.N adds do not fill.
				if c, err = NewChain(1<<24, 0.01, 2, false, nil); err != nil {
					b.Fatal(err)
				}
			} else {
				c = grownChain(b, tc.items)
			}
			var i atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.Add(keys[i.Add(1)&(1<<16-1)])
				}
			})
			mkeys(b)
		})
	}
}

func BenchmarkExists(b *testing.B) {
	for _, tc := range []struct {
		name  string
		items int
	}{{"1link", 50}, {"14links", 1_600_000}} {
		c := grownChain(b, tc.items)
		for _, absent := range []bool{false, true} {
			prefix, name := "fill:", tc.name+"/present"
			if absent {
				prefix, name = "absent:", tc.name+"/absent"
			}
			keys := make([][]byte, 1<<16)
			for i := range keys {
				keys[i] = []byte(prefix + strconv.Itoa(i%max(tc.items, 1)))
			}
			b.Run(name, func(b *testing.B) {
				var i atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						c.Exists(keys[i.Add(1)&(1<<16-1)])
					}
				})
				mkeys(b)
			})
		}
	}
}

// BenchmarkScanDump copies a 27.5 MB link (capacity 20M at 1%) out and back in 16 MiB chunks.
func BenchmarkScanDump(b *testing.B) {
	c, err := NewChain(20_000_000, 0.01, 2, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(c.Size()))
	for b.Loop() {
		for it, data := range c.Chunks() {
			if it > 1 {
				if err := c.LoadChunk(it, data); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

func BenchmarkDumpFile(b *testing.B) {
	c, err := NewChain(20_000_000, 0.01, 2, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.SetBytes(int64(c.Size()))
	for b.Loop() {
		buf.Reset()
		if _, err := c.WriteTo(&buf); err != nil {
			b.Fatal(err)
		}
		if _, err := ReadDump(bytes.NewReader(buf.Bytes()), nil); err != nil {
			b.Fatal(err)
		}
	}
}
