package rdb

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bloomd/bloom/redisbloom"
)

// BenchmarkLZFCompress compresses 16 MiB read in pieces, as a filter's bits are during a save:
// random bytes (a full filter: nothing to gain, the whole input is tried) and a filter a tenth
// full (a bit in ten set).
func BenchmarkLZFCompress(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 16<<20)
	sparse := make([]byte, 16<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
		for j := range 8 {
			if rng.IntN(10) == 0 {
				sparse[i] |= 1 << j
			}
		}
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"random", random}, {"tenth", sparse}} {
		b.Run(c.name, func(b *testing.B) {
			var z lzfCompressor
			b.SetBytes(int64(len(c.data)))
			window := make([]byte, 0, lzfWindow+lzfMaxOff+lzfMaxRef+8)
			for b.Loop() {
				z.compressFrom(nil, int64(len(c.data)), int64(len(c.data))-4, window, func(p []byte, off int64) { copy(p, c.data[off:]) })
			}
		})
	}
}

// TestIncompressibleFilterProbe: a filter's bits of 4 MiB or more are compressed only when their
// first MiB shrinks: random bits (a full filter) are written as they are after a probe of one
// MiB, sparse ones compressed as Redis compresses them; all decode to the same filter. Bits
// random in their first MiB and zero after it are written as they are, where Redis compresses.
func TestIncompressibleFilterProbe(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name       string
		density    int  // one bit in density set
		firstMiB   bool // only in the first MiB
		compressed bool
	}{{"full", 2, false, false}, {"sparse", 400, false, true},
		// Not as Redis: its first MiB is random, the rest zero, which Redis compresses.
		{"full first MiB", 2, true, false}} {
		ch, err := redisbloom.NewChain(4_000_000, 0.01, 2, true, nil) // 4.8 MB
		if err != nil {
			t.Fatal(err)
		}
		hdr := ch.Header()
		ld, _ := redisbloom.LoadHeader(hdr, nil)
		first := true
		var at int
		for it, d := range ch.Chunks() {
			if first {
				first = false
				continue
			}
			buf := make([]byte, len(d))
			for i := range buf {
				if c.firstMiB && at+i >= 1<<20 {
					break
				}
				for j := range 8 {
					if rng.IntN(c.density) == 0 {
						buf[i] |= 1 << j
					}
				}
			}
			ld.LoadChunk(it, buf)
			at += len(buf)
		}
		p, err := DumpChain(ld, nil)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := DumpChainLen(ld.Header(), nil)
		if got := int64(len(p)) < plain; got != c.compressed {
			t.Errorf("%s: payload of %d bytes, %d uncompressed: compressed %v, want %v", c.name, len(p), plain, got, c.compressed)
		}
		e, err := ReadDump(p, Version70)
		if err != nil {
			t.Fatal(err)
		}
		back, err := e.ReadChain(nil)
		if err != nil {
			t.Fatal(err)
		}
		a, b := make([]byte, ld.Size()), make([]byte, back.Size())
		ld.ReadAt(a, 0)
		back.ReadAt(b, 0)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the bits differ after a round trip", c.name)
		}
	}
}
