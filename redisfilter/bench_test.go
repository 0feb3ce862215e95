package redisfilter

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// The benchmarks run against the package's local redis-server (and bloomd, when the tree has it),
// all in one run, so the numbers compare like with like:
//
//	go test -run '^$' -bench . -benchtime 2s ./redisfilter
//
// Each reports keys/s; the batch benchmarks also report the time the server spent inside the
// scripts per key (server-ns/key, from INFO commandstats), free of network and client time. The
// filter holds 1M keys at 1% (m = 9.6M bits, k = 7); the plain-layout
// filter ("plain") has the Spring helper's parameters for the same (n, p): m = 9,585,058, k = 7,
// Guava32, SETBIT order.

const (
	benchN     = 1_000_000
	benchP     = 0.01
	benchBatch = 1000
)

// seedFilter is the helper people write today, before this package: the positions are computed
// as ours are (so only the Redis side differs), then one SETBIT or GETBIT round trip per
// position. seedAddMany is the same helper called in a loop; seedAddPipelined is its better
// variant that queues every SETBIT of a batch in one pipeline.
type seedFilter struct {
	c   redis.UniversalClient
	key string
	m   uint64
	k   int
}

func (s *seedFilter) add(ctx context.Context, key []byte) (bool, error) {
	added := false
	for _, b := range bloom.Guava64.Locations(nil, key, s.k, s.m) {
		old, err := s.c.SetBit(ctx, s.key, int64(b), 1).Result()
		if err != nil {
			return false, err
		}
		added = added || old == 0
	}
	return added, nil
}

func (s *seedFilter) test(ctx context.Context, key []byte) (bool, error) {
	for _, b := range bloom.Guava64.Locations(nil, key, s.k, s.m) {
		v, err := s.c.GetBit(ctx, s.key, int64(b)).Result()
		if err != nil || v == 0 {
			return false, err
		}
	}
	return true, nil
}

func (s *seedFilter) addPipelined(ctx context.Context, keys [][]byte) error {
	pipe := s.c.Pipeline()
	for _, key := range keys {
		for _, b := range bloom.Guava64.Locations(nil, key, s.k, s.m) {
			pipe.SetBit(ctx, s.key, int64(b), 1)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

func benchKeys(prefix string, n int) [][]byte { return keys(prefix, n) }

func reportKeys(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "keys/s")
}

// serverUsec returns the server's total time inside EVALSHA and EVAL calls so far, in
// microseconds (INFO commandstats' usec): the cost of the scripts alone.
func serverUsec(b *testing.B, c redis.UniversalClient) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, cmd := range []string{"evalsha", "eval"} {
		if m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=\d+,usec=(\d+)`).FindStringSubmatch(info); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			total += v
		}
	}
	return total
}

// reportServer reports the server's script time per key since start (from serverUsec).
func reportServer(b *testing.B, c redis.UniversalClient, start float64, perOp int) {
	b.ReportMetric((serverUsec(b, c)-start)*1000/float64(b.N*perOp), "server-ns/key")
}

func newBenchFilter(b *testing.B, c redis.UniversalClient) (*Filter, *seedFilter) {
	ctx := context.Background()
	f, err := New(ctx, c, uniqueName(b), benchN, benchP, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Delete(context.Background()) })
	seed := &seedFilter{c: c, key: uniqueName(b), m: f.M(), k: f.K()}
	b.Cleanup(func() { c.Del(context.Background(), seed.key) })
	return f, seed
}

// newBenchPlain returns a plain-layout filter with the Spring helper's parameters for the
// benchmarks' n and p.
func newBenchPlain(b *testing.B, c redis.UniversalClient) *Filter {
	ctx := context.Background()
	params, err := SpringHelper(benchN, benchP)
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewPlain(ctx, c, uniqueName(b), params, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Delete(context.Background()) })
	return f
}

func BenchmarkAdd(b *testing.B) {
	c := standalone(b)
	ctx := context.Background()
	f, seed := newBenchFilter(b, c)
	ks := benchKeys("add", 1<<16)
	b.Run("seed-k-SETBIT", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := seed.add(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	b.Run("redisfilter", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := f.Add(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	plain := newBenchPlain(b, c)
	b.Run("plain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := plain.Add(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
}

func BenchmarkTest(b *testing.B) {
	c := standalone(b)
	ctx := context.Background()
	f, seed := newBenchFilter(b, c)
	present := benchKeys("present", 1<<15)
	if _, err := f.AddMany(ctx, present); err != nil {
		b.Fatal(err)
	}
	if err := seed.addPipelined(ctx, present); err != nil {
		b.Fatal(err)
	}
	// Half present, half absent: the seed helper stops at the first clear bit, as ours does.
	ks := append(present[:1<<14:1<<14], benchKeys("absent", 1<<14)...)
	b.Run("seed-k-GETBIT", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := seed.test(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	b.Run("redisfilter", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := f.Test(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	plain := newBenchPlain(b, c)
	if _, err := plain.AddMany(ctx, present); err != nil {
		b.Fatal(err)
	}
	b.Run("plain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := plain.Test(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
}

func BenchmarkAddMany(b *testing.B) {
	c := standalone(b)
	ctx := context.Background()
	f, seed := newBenchFilter(b, c)
	batches := make([][][]byte, 64)
	for i := range batches {
		batches[i] = benchKeys(fmt.Sprintf("batch%d", i), benchBatch)
	}
	b.Run("seed-k-SETBIT-loop", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			for _, key := range batches[i%len(batches)] {
				if _, err := seed.add(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportKeys(b, benchBatch)
	})
	b.Run("seed-k-SETBIT-pipelined", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := seed.addPipelined(ctx, batches[i%len(batches)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, benchBatch)
	})
	plain := newBenchPlain(b, c)
	for _, tc := range []struct {
		name string
		f    *Filter
	}{{"redisfilter", f}, {"plain", plain}} {
		b.Run(tc.name, func(b *testing.B) {
			start := serverUsec(b, c)
			for i := 0; b.Loop(); i++ {
				if _, err := tc.f.AddMany(ctx, batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			reportKeys(b, benchBatch)
			reportServer(b, c, start, benchBatch)
		})
	}
}

func BenchmarkTestMany(b *testing.B) {
	c := standalone(b)
	ctx := context.Background()
	f, _ := newBenchFilter(b, c)
	if _, err := f.AddMany(ctx, benchKeys("batch0", benchBatch)); err != nil {
		b.Fatal(err)
	}
	batch := append(benchKeys("batch0", benchBatch/2), benchKeys("absent", benchBatch/2)...)
	plain := newBenchPlain(b, c)
	if _, err := plain.AddMany(ctx, benchKeys("batch0", benchBatch)); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *Filter
	}{{"redisfilter", f}, {"plain", plain}} {
		b.Run(tc.name, func(b *testing.B) {
			start := serverUsec(b, c)
			for b.Loop() {
				if _, err := tc.f.TestMany(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			reportKeys(b, benchBatch)
			reportServer(b, c, start, benchBatch)
		})
	}
}

// BenchmarkModuleBloomd measures module mode with bloomd as the server: BF.INSERT and BF.EXISTS
// per key, BF.INSERT and BF.MEXISTS per batch.
func BenchmarkModuleBloomd(b *testing.B) {
	c := bloomdClient(b)
	ctx := context.Background()
	f, err := NewModule(ctx, c, uniqueName(b), benchN, benchP, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Delete(context.Background()) })
	ks := benchKeys("add", 1<<16)
	b.Run("Add", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := f.Add(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	b.Run("Test", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := f.Test(ctx, ks[(i*7)&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	batch := benchKeys("batch", benchBatch)
	b.Run("AddMany", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.AddMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, benchBatch)
	})
	b.Run("TestMany", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.TestMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, benchBatch)
	})
}
