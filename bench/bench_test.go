package bench

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"testing"

	bbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/bloomd/bloom"
	"github.com/twmb/murmur3"
)

// Run with, for example:
//
//	go test -run '^$' -bench . -count 6 -timeout 0 | tee new.txt
//	go test -run '^$' -bench . -large -count 6 -timeout 0   # also n = 1e8
//	benchstat -col /impl new.txt
//
// Every benchmark is BenchmarkFilters/n=N/op=OP/impl=IMPL with one key per op, so ns/op is
// nanoseconds per key, whatever the operation. Keys are 16 bytes, derived from a counter by a
// mixing function (the cost is the same for every implementation, about 2 ns, and shown by
// op=KeyGen; op=Hash adds the murmur3 our filters hash with). Every implementation is called
// through one closure of the same shape, so call overhead is equal too.

var large = flag.Bool("large", false, "also benchmark n = 1e8 (several GB of filters, minutes of filling)")

const p = 0.01

// subject is one filter under test, behind closures of the same shape for every library.
type subject struct {
	add      func(key []byte)
	test     func(key []byte) bool
	addMany  func(dst []bool, keys [][]byte) []bool // nil when the library has no batch form
	testMany func(dst []bool, keys [][]byte) []bool
	reset    func()
	bits     func() uint64 // memory of the filter's array now, in bits
}

type impl struct {
	name string
	make func(n uint64) (subject, error)
}

// ours adapts any filter of this module. The single-key closures call the concrete type's
// methods, as the peers' closures do: through the interface, every call would pay an indirect
// call more than the peers' (about 1 ns at n = 1e6) that a user holding a *bloom.Blocked never
// pays.
func ours(f interface {
	bloom.AnyFilter
	Reset()
	ByteLen() int64
}) subject {
	s := subject{
		addMany:  f.AddMany,
		testMany: f.TestMany,
		reset:    f.Reset,
		bits:     func() uint64 { return uint64(f.ByteLen()) * 8 },
	}
	switch f := f.(type) {
	case *bloom.Filter:
		s.add, s.test = func(key []byte) { f.Add(key) }, f.Test
	case *bloom.Blocked:
		s.add, s.test = func(key []byte) { f.Add(key) }, f.Test
	case *bloom.Scalable:
		s.add, s.test = func(key []byte) { f.Add(key) }, f.Test
	case *bloom.Counting:
		s.add, s.test = func(key []byte) { f.Add(key) }, f.Test
	default:
		panic(fmt.Sprintf("ours: no single-key adapter for %T", f))
	}
	return s
}

// impls are the filters compared; allImpls adds extraImpls, through which a scratch copy of this
// module adds peers that cannot be required from it (see blobloom.sh).
var impls = []impl{
	{"classic", func(n uint64) (subject, error) {
		f, err := bloom.New(n, p)
		if err != nil {
			return subject{}, err
		}
		return ours(f), nil
	}},
	{"blocked", func(n uint64) (subject, error) {
		f, err := bloom.NewBlocked(n, p)
		if err != nil {
			return subject{}, err
		}
		return ours(f), nil
	}},
	// At half the rate, for comparison with blocked filters whose rate at p = 0.01 is lower.
	{"blocked-p0.005", func(n uint64) (subject, error) {
		f, err := bloom.NewBlocked(n, p/2)
		if err != nil {
			return subject{}, err
		}
		return ours(f), nil
	}},
	// Grown to n from n/8: four links.
	{"scalable", func(n uint64) (subject, error) {
		f, err := bloom.NewScalable(n/8, p, nil)
		if err != nil {
			return subject{}, err
		}
		return ours(f), nil
	}},
	{"scalable-blocked", func(n uint64) (subject, error) {
		f, err := bloom.NewScalable(n/8, p, &bloom.ScalableOptions{Blocked: true})
		if err != nil {
			return subject{}, err
		}
		return ours(f), nil
	}},
	{"counting", func(n uint64) (subject, error) {
		f, err := bloom.NewCounting(n, p)
		if err != nil {
			return subject{}, err
		}
		return ours(f), nil
	}},
	{"bitsandblooms", func(n uint64) (subject, error) {
		f := bbloom.NewWithEstimates(uint(n), p)
		return subject{
			add:   func(key []byte) { f.Add(key) },
			test:  func(key []byte) bool { return f.Test(key) },
			reset: func() { f.ClearAll() },
			bits:  func() uint64 { return uint64(f.Cap()) },
		}, nil
	}},
}

var extraImpls []impl

func allImpls() []impl { return append(impls[:len(impls):len(impls)], extraImpls...) }

func sizes() []uint64 {
	if *large {
		return []uint64{1e6, 1e7, 1e8}
	}
	return []uint64{1e6, 1e7}
}

// Keys: key(i, salt) is 16 bytes, distinct for distinct (i, salt) (the mix is a bijection).
const (
	saltPresent = 1
	saltAbsent  = 2
	saltFPP     = 3
)

func makeKey(dst []byte, i, salt uint64) {
	binary.LittleEndian.PutUint64(dst[0:8], mix(i))
	binary.LittleEndian.PutUint64(dst[8:16], mix(i^salt<<56))
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// prepared holds, per implementation and n, an empty instance for the Add benchmarks and a filled
// one for the Test benchmarks, built once per process (filling n = 1e8 takes minutes).
type prepared struct {
	empty, full subject
	fpp         float64
	err         error
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*prepared{}
)

func prepare(b *testing.B, im impl, n uint64) *prepared {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	key := fmt.Sprint(im.name, n)
	if pr, ok := cache[key]; ok {
		return pr
	}
	pr := &prepared{}
	cache[key] = pr
	if pr.empty, pr.err = im.make(n); pr.err != nil {
		return pr
	}
	if pr.full, pr.err = im.make(n); pr.err != nil {
		return pr
	}
	fill(pr.full, n, saltPresent)
	const trials = 1_000_000
	var k [16]byte
	fp := 0
	for i := range uint64(trials) {
		makeKey(k[:], i, saltFPP)
		if pr.full.test(k[:]) {
			fp++
		}
	}
	pr.fpp = float64(fp) / trials
	return pr
}

func fill(s subject, n uint64, salt uint64) {
	const batch = 1024
	buf := make([]byte, 16*batch)
	keys := make([][]byte, batch)
	for i := range keys {
		keys[i] = buf[16*i : 16*i+16]
	}
	var res []bool
	for i := uint64(0); i < n; i += batch {
		m := min(batch, n-i)
		for j := range m {
			makeKey(keys[j], i+j, salt)
		}
		if s.addMany != nil {
			res = s.addMany(res[:0], keys[:m])
		} else {
			for _, k := range keys[:m] {
				s.add(k)
			}
		}
	}
}

var sink uint64

// cpuClock measures the CPU time of the benchmarking thread, reported as cpu-ns/op beside Go's
// wall-clock ns/op: on a machine shared with other work, wall time includes the time other
// processes held the core, CPU time does not. It pauses with the benchmark timer.
type cpuClock struct {
	b     *testing.B
	start int64
	total int64
}

func startCPU(b *testing.B) *cpuClock {
	runtime.LockOSThread()
	c := &cpuClock{b: b}
	b.ResetTimer()
	c.start = threadCPU()
	return c
}

func (c *cpuClock) pause() {
	c.b.StopTimer()
	c.total += threadCPU() - c.start
}

func (c *cpuClock) resume() {
	c.start = threadCPU()
	c.b.StartTimer()
}

func (c *cpuClock) stop() {
	c.pause()
	runtime.UnlockOSThread()
	c.b.ReportMetric(float64(c.total)/float64(c.b.N), "cpu-ns/op")
}

func BenchmarkFilters(b *testing.B) {
	for _, n := range sizes() {
		name := fmt.Sprintf("n=1e%d", len(fmt.Sprint(n))-1)
		b.Run(name+"/op=KeyGen/impl=none", func(b *testing.B) { benchKeyGen(b) })
		b.Run(name+"/op=Hash/impl=murmur3", func(b *testing.B) { benchHash(b) })
		for _, op := range []struct {
			name  string
			batch bool
			run   func(b *testing.B, pr *prepared, n uint64)
		}{
			{"Add", false, benchAdd},
			{"TestPresent", false, func(b *testing.B, pr *prepared, n uint64) { benchTest(b, pr, n, saltPresent) }},
			{"TestAbsent", false, func(b *testing.B, pr *prepared, n uint64) { benchTest(b, pr, n, saltAbsent) }},
			{"AddMany", true, benchAddMany},
			{"TestManyPresent", true, func(b *testing.B, pr *prepared, n uint64) { benchTestMany(b, pr, n, saltPresent) }},
			{"TestManyAbsent", true, func(b *testing.B, pr *prepared, n uint64) { benchTestMany(b, pr, n, saltAbsent) }},
		} {
			for _, im := range allImpls() {
				b.Run(fmt.Sprintf("%s/op=%s/impl=%s", name, op.name, im.name), func(b *testing.B) {
					pr := prepare(b, im, n)
					if pr.err != nil {
						b.Skip(pr.err)
					}
					if op.batch && pr.full.addMany == nil {
						b.Skip("no batch operations")
					}
					op.run(b, pr, n)
				})
			}
		}
		// The baseline for batches: independent random 8-byte loads over an array the size of
		// the blocked filter, with and without huge pages, and dependent loads (the latency).
		m, _, _, _ := bloom.BlockedSize(n, p)
		for _, huge := range []bool{false, true} {
			pages := "4KiB"
			if huge {
				pages = "2MiB"
			}
			b.Run(fmt.Sprintf("%s/op=RandomLoad/impl=pages-%s", name, pages), func(b *testing.B) {
				benchRandomLoad(b, baseline(m/64, huge), false)
			})
			b.Run(fmt.Sprintf("%s/op=DependentLoad/impl=pages-%s", name, pages), func(b *testing.B) {
				benchRandomLoad(b, baseline(m/64, huge), true)
			})
		}
	}
}

// benchHash is KeyGen plus the hash of our filters (murmur3 x64_128), called through a closure
// as the filters are: the part of a single-key call that does not touch the filter.
func benchHash(b *testing.B) {
	var k [16]byte
	var acc uint64
	hash := func(key []byte) uint64 { h1, h2 := murmur3.Sum128(key); return h1 ^ h2 }
	c := startCPU(b)
	for i := range uint64(b.N) {
		makeKey(k[:], i, saltPresent)
		acc += hash(k[:])
	}
	c.stop()
	sink += acc
}

func benchKeyGen(b *testing.B) {
	var k [16]byte
	c := startCPU(b)
	for i := range uint64(b.N) {
		makeKey(k[:], i, saltPresent)
	}
	c.stop()
	sink += uint64(k[0])
}

// benchAdd adds distinct keys to an empty filter; every n keys (outside the timer) it empties the
// filter again, so the cost is averaged over fills from empty to capacity, or over the first
// b.N keys of one fill when b.N < n (a less full filter, where more adds set new bits).
func benchAdd(b *testing.B, pr *prepared, n uint64) {
	s := pr.empty
	s.reset()
	var k [16]byte
	j := uint64(0)
	c := startCPU(b)
	for range b.N {
		if j == n {
			c.pause()
			s.reset()
			j = 0
			c.resume()
		}
		makeKey(k[:], j, saltPresent)
		s.add(k[:])
		j++
	}
	c.stop()
}

func benchTest(b *testing.B, pr *prepared, n uint64, salt uint64) {
	s := pr.full
	var k [16]byte
	found := 0
	j := uint64(0)
	c := startCPU(b)
	for range b.N {
		if j == n {
			j = 0
		}
		makeKey(k[:], j, salt)
		if s.test(k[:]) {
			found++
		}
		j++
	}
	c.stop()
	if salt == saltPresent && found != b.N {
		b.Fatalf("%d of %d present keys not found", b.N-found, b.N)
	}
	if salt == saltAbsent {
		b.ReportMetric(float64(pr.full.bits())/float64(n), "bits/key")
		b.ReportMetric(pr.fpp*100, "fpp%")
	}
}

const batchLen = 1024

func batchKeys() [][]byte {
	buf := make([]byte, 16*batchLen)
	keys := make([][]byte, batchLen)
	for i := range keys {
		keys[i] = buf[16*i : 16*i+16]
	}
	return keys
}

func benchAddMany(b *testing.B, pr *prepared, n uint64) {
	s := pr.empty
	s.reset()
	keys := batchKeys()
	res := make([]bool, 0, batchLen)
	j := uint64(0)
	c := startCPU(b)
	for i := 0; i < b.N; i += batchLen {
		if j >= n {
			c.pause()
			s.reset()
			j = 0
			c.resume()
		}
		m := min(batchLen, b.N-i)
		for x := range m {
			makeKey(keys[x], j+uint64(x), saltPresent)
		}
		res = s.addMany(res[:0], keys[:m])
		j += uint64(m)
	}
	c.stop()
}

func benchTestMany(b *testing.B, pr *prepared, n uint64, salt uint64) {
	s := pr.full
	keys := batchKeys()
	res := make([]bool, 0, batchLen)
	found := 0
	j := uint64(0)
	c := startCPU(b)
	for i := 0; i < b.N; i += batchLen {
		m := min(batchLen, b.N-i)
		for x := range m {
			if j == n {
				j = 0
			}
			makeKey(keys[x], j, salt)
			j++
		}
		res = s.testMany(res[:0], keys[:m])
		for _, r := range res {
			if r {
				found++
			}
		}
	}
	c.stop()
	if salt == saltPresent && found != b.N {
		b.Fatalf("%d of %d present keys not found", b.N-found, b.N)
	}
}

var (
	baselineMu sync.Mutex
	baselines  = map[string][]uint64{}
)

// baseline returns an array of the given number of words filled with random values (so every
// page is mapped before timing), on 4 KiB or on 2 MiB pages.
func baseline(words uint64, huge bool) []uint64 {
	baselineMu.Lock()
	defer baselineMu.Unlock()
	key := fmt.Sprint(words, huge)
	if a, ok := baselines[key]; ok {
		return a
	}
	a := allocWords(words, huge)
	for i := range a {
		a[i] = mix(uint64(i))
	}
	baselines[key] = a
	return a
}

// benchRandomLoad reads words at random positions: independent loads (the next address does not
// depend on the last value, so the CPU overlaps the misses, as a batch does) or dependent ones
// (each address depends on the previous load: the latency of one miss, as a lone Test pays).
func benchRandomLoad(b *testing.B, a []uint64, dependent bool) {
	n := uint64(len(a))
	x := uint64(0x9e3779b97f4a7c15)
	var sum uint64
	c := startCPU(b)
	// Two loops: a conditional "y ^= sum" in one loop compiles to a conditional move, which
	// makes every address depend on the previous load even when the condition is false.
	if dependent {
		for range b.N {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			i, _ := bits.Mul64(x^sum, n)
			sum += a[i]
		}
	} else {
		for range b.N {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			i, _ := bits.Mul64(x, n)
			sum += a[i]
		}
	}
	c.stop()
	sink += sum
}
