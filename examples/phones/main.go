// Command phones de-duplicates a stream of phone numbers (100 million by default) three ways:
// with a Bloom filter, with a Go map, and by sorting a slice, and prints each one's memory, wall
// time and CPU time on this machine (on a machine shared with other work, compare CPU times). The filter keeps a small fixed memory and is as fast as the map; the
// price is the false-positive rate: a few new numbers it takes for repeats, counted here against
// the exact answer.
//
//	go run ./examples/phones                 # 100 million numbers (about 3 GB of memory at peak)
//	go run ./examples/phones -n 1000000      # a quick run
//
// The numbers are North American (+1 NXX NXX XXXX, as a uint64), drawn from a fixed seed; a
// share of them (-dup) repeat an earlier number. Each method reads the same stream, so the
// differences are the methods' own.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/bloomd/bloom"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h or -help: the flag package has printed the usage; asking is no error
		}
		log.Fatal(err)
	}
}

// result is one method's measurement.
type result struct {
	name   string
	unique uint64        // numbers the method reports as first seen
	bytes  uint64        // heap the method's structure holds when the stream ends
	time   time.Duration // to read the stream and de-duplicate it
	cpu    time.Duration // CPU time of the process meanwhile (GC included)
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("phones", flag.ContinueOnError)
	n := fs.Uint64("n", 100_000_000, "numbers in the stream")
	dup := fs.Float64("dup", 0.1, "share of numbers that repeat an earlier one")
	p := fs.Float64("p", 0.001, "false-positive rate the filters are sized for")
	only := fs.String("only", "", "run one method only: gen, classic, blocked, map, sorted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n == 0 || *dup < 0 || *dup >= 1 || !(*p > 0 && *p < 1) {
		return fmt.Errorf("phones: need -n > 0, 0 <= -dup < 1, 0 < -p < 1")
	}
	s := stream{n: *n, dup: *dup}
	fmt.Fprintf(out, "%d phone numbers, %.0f%% repeats; filters sized for %d at p=%g; GOMAXPROCS=%d\n",
		*n, 100**dup, *n, *p, runtime.GOMAXPROCS(0))

	methods := []struct {
		name string
		fn   func() (uint64, any, error)
	}{
		{"gen", func() (uint64, any, error) { // the stream alone: its cost is in every method
			var x uint64
			s.each(func(v uint64) { x ^= v })
			return 0, x, nil
		}},
		{"classic", func() (uint64, any, error) {
			f, err := bloom.New(*n, *p)
			if err != nil {
				return 0, nil, err
			}
			var u uint64
			s.each(func(v uint64) {
				if f.AddUint64(v) {
					u++
				}
			})
			return u, f, nil
		}},
		{"blocked", func() (uint64, any, error) {
			f, err := bloom.NewBlocked(*n, *p)
			if err != nil {
				return 0, nil, err
			}
			var u uint64
			var b [8]byte
			s.each(func(v uint64) {
				putLE(b[:], v)
				if f.Add(b[:]) {
					u++
				}
			})
			return u, f, nil
		}},
		{"map", func() (uint64, any, error) {
			m := map[uint64]struct{}{} // no size hint: the stream's length is not known up front
			var u uint64
			s.each(func(v uint64) {
				if _, ok := m[v]; !ok {
					m[v] = struct{}{}
					u++
				}
			})
			return u, m, nil
		}},
		{"sorted", func() (uint64, any, error) {
			var all []uint64 // appended as the stream arrives, then sorted and compacted
			s.each(func(v uint64) { all = append(all, v) })
			slices.Sort(all)
			all = slices.Compact(all)
			return uint64(len(all)), all, nil
		}},
	}
	var results []result
	for _, m := range methods {
		if *only != "" && *only != m.name {
			continue
		}
		runtime.GC()
		debug.FreeOSMemory()
		before := heap()
		start, cpu := time.Now(), cpuTime()
		u, keep, err := m.fn()
		if err != nil {
			return err
		}
		elapsed, cpu := time.Since(start), cpuTime()-cpu
		runtime.GC()
		r := result{name: m.name, unique: u, time: elapsed, cpu: cpu, bytes: sub(heap(), before)}
		runtime.KeepAlive(keep)
		results = append(results, r)
	}

	var exact uint64
	for _, r := range results {
		if r.name == "map" || r.name == "sorted" {
			exact = r.unique
		}
	}
	fmt.Fprintf(out, "%-8s %12s %10s %10s %10s %11s %s\n", "method", "memory", "bytes/num", "wall", "CPU", "CPU ns/num", "unique found")
	for _, r := range results {
		line := fmt.Sprintf("%-8s %12s %10.2f %10s %10s %11.1f", r.name, bloom.FormatBytes(r.bytes),
			float64(r.bytes)/float64(*n), r.time.Round(time.Millisecond), r.cpu.Round(time.Millisecond), float64(r.cpu.Nanoseconds())/float64(*n))
		switch {
		case r.name == "gen":
			line += " (the stream alone)"
		case exact > 0 && r.unique < exact:
			line += fmt.Sprintf(" %d (%d new numbers taken for repeats: %.4f%%)", r.unique, exact-r.unique, 100*float64(exact-r.unique)/float64(exact))
		default:
			line += fmt.Sprintf(" %d", r.unique)
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

// stream is the sequence of numbers: number i is a fresh draw, or with probability dup a repeat
// of an earlier one; both come from the index by a fixed mixing function, so every pass yields
// the same sequence without holding it.
type stream struct {
	n   uint64
	dup float64
}

func (s stream) each(fn func(uint64)) {
	threshold := uint64(s.dup * (1 << 53))
	for i := range s.n {
		j := i
		for { // follow repeats back to the fresh draw they repeat
			r := mix(j ^ 0x9e3779b97f4a7c15)
			if j == 0 || r>>11 >= threshold {
				break
			}
			j = mix(r) % j
		}
		fn(phone(mix(j)))
	}
}

// phone maps a random word to a North American number 1 NXX NXX XXXX (N in 2..9).
func phone(r uint64) uint64 {
	npa := 200 + r%800
	r /= 800
	nxx := 200 + r%800
	r /= 800
	line := r % 10000
	return 10_000_000_000 + npa*10_000_000 + nxx*10_000 + line
}

// mix is SplitMix64's finalizer: a fixed, well-spread function of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func putLE(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func heap() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
