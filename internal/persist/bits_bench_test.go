package persist

import (
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/bloomd/bloom/redisbloom"
)

// BenchmarkWriteSnapshot writes a snapshot of one filter of 200 MB with every byte random (what
// a filter at capacity holds: the sparse format stores all of it) to io.Discard, and reports the
// process's CPU time per MB written (cpu-ns/MB; the wall time includes the pacer's sleeps when
// the machine is busy), the cost that a background snapshot takes from the event loops' cores.
func BenchmarkWriteSnapshot(b *testing.B) {
	ch, err := redisbloom.NewChain(110_000_000, 0.001, 2, true, nil)
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	seed := uint64(1)
	for iter := int64(1); ; {
		next, p := ch.ScanDumpInto(iter, buf)
		if next == 0 {
			break
		}
		buf = p
		for i := range p {
			seed = seed*6364136223846793005 + 1442695040888963407
			p[i] = byte(seed >> 56)
		}
		if err := ch.LoadChunk(next, p); err != nil {
			b.Fatal(err)
		}
		iter = next
	}
	items := []Item{{Key: "bf", Chain: ch, Header: ch.Header()}}
	var n int64
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		if n, err = WriteSnapshot(io.Discard, SnapshotHeader{}, items); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU() - cpu0
	b.SetBytes(n)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/(float64(n)/1e6), "cpu-ns/MB")
}

// processCPU returns the user and system time of the process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
