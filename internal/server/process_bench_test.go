//go:build linux

package server

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
)

// BenchmarkProcessBFAdd measures an event loop's user-space work per BF.ADD of a pipelined batch
// (loop.process: preparing the batch's filter memory, parsing, lookup, accounting, the filter and
// the reply), without system calls: batches of 16 requests, as redis-benchmark -P 16 sends them,
// on a filter of 10M capacity (12 MiB, beyond the CPU's cache) with random items.
func BenchmarkProcessBFAdd(b *testing.B) { benchmarkProcess(b, "BF.ADD") }

// BenchmarkProcessBFExists is BenchmarkProcessBFAdd for BF.EXISTS.
func BenchmarkProcessBFExists(b *testing.B) { benchmarkProcess(b, "BF.EXISTS") }

// processDepth is the number of requests in each batch of benchmarkProcess.
const processDepth = 16

func benchmarkProcess(b *testing.B, name string) {
	s := startServer(b, nil)
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.01"), []byte("10000000"))
	// 4096 batches of distinct random items, spread over the whole filter, run in turn.
	rng := rand.New(rand.NewPCG(1, 2))
	var in []byte
	var ends []int
	for range 4096 {
		for range processDepth {
			item := strconv.Itoa(rng.IntN(100_000_000))
			in = resp.AppendCommand(in, []byte(name), []byte("bf"), []byte(item))
		}
		ends = append(ends, len(in))
	}
	rw := &loopConn{}
	c := s.newConn(rw)
	defer c.close()
	lp := &loop{srv: s}
	c.batch = &lp.batch
	b.ReportAllocs()
	b.ResetTimer()
	from := 0
	for i := 0; i < b.N; i += processDepth {
		j := i / processDepth % len(ends)
		if j == 0 {
			from = 0
		}
		rw.in, rw.off = in[from:ends[j]], 0
		from = ends[j]
		c.rd.Reset(rw)
		if err := c.rd.Fill(); err != nil {
			b.Fatal(err)
		}
		lp.process(c)
		if c.closing || c.rd.Buffered() != 0 {
			b.Fatalf("batch %d not run whole: closing %v, %d bytes left", j, c.closing, c.rd.Buffered())
		}
		clear(lp.dirty)
		lp.dirty = lp.dirty[:0]
		rw.out.Reset()
		if err := c.flush(); err != nil {
			b.Fatal(err)
		}
	}
}
