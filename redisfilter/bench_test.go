package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The benchmarks compare, in one run and against one redis-server, the ways to keep a filter in
// Redis (bench/run.sh redisfilter; BENCHMARKS.md has the table):
//
//	REDISBLOOM_SO=/path/to/redisbloom.so go test -run '^$' -bench . -count 6 ./redisfilter
//
// Each is BenchmarkOP/impl=IMPL and reports keys/s:
//
//   - k-SETBIT, k-GETBIT: the helper services write by hand, one SETBIT or GETBIT round trip per
//     bit position (perBitFilter); k-SETBIT-loop calls it for each key of a batch,
//     k-SETBIT-pipelined queues every SETBIT of a batch in one pipeline;
//   - script: New, one Lua script call per key or per batch, parameters checked;
//   - plain: NewPlain with the Spring helper's parameters for the same (n, p): m = 9,585,058,
//     k = 7, Guava32, SETBIT order;
//   - module-redisbloom: NewModule against the same redis-server with the RedisBloom module that
//     REDISBLOOM_SO names loaded (skipped without it; then the other forms run against the
//     package's shared redis-server);
//   - module-bloomd: NewModule against bloomd built from cmd/bloomd.
//
// The script forms' batch benchmarks also report the server's time inside the scripts per key
// (server-ns/key, from INFO commandstats), free of network and client time. The filters hold 1M
// keys at 1% (m = 9.6M bits, k = 7).

const (
	benchN     = 1_000_000
	benchP     = 0.01
	benchBatch = 1000
)

// perBitFilter is the helper people write by hand: the positions computed as ours are (so only
// the Redis side differs), then one SETBIT or GETBIT round trip per position.
type perBitFilter struct {
	c   redis.UniversalClient
	key string
	m   uint64
	k   int
}

func (s *perBitFilter) add(ctx context.Context, key []byte) (bool, error) {
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

// test stops at the first clear bit, as the script does.
func (s *perBitFilter) test(ctx context.Context, key []byte) (bool, error) {
	for _, b := range bloom.Guava64.Locations(nil, key, s.k, s.m) {
		v, err := s.c.GetBit(ctx, s.key, int64(b)).Result()
		if err != nil || v == 0 {
			return false, err
		}
	}
	return true, nil
}

// addPipelined queues every SETBIT of keys in one pipeline.
func (s *perBitFilter) addPipelined(ctx context.Context, keys [][]byte) error {
	pipe := s.c.Pipeline()
	for _, key := range keys {
		for _, b := range bloom.Guava64.Locations(nil, key, s.k, s.m) {
			pipe.SetBit(ctx, s.key, int64(b), 1)
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

var moduleRedis struct {
	once sync.Once
	srv  *redistest.Server
	err  error
}

// benchRedis returns a client of the redis-server the benchmarks use: one with RedisBloom loaded
// when REDISBLOOM_SO names the module (started once per test binary), and whether it has the
// module; otherwise the package's shared server.
func benchRedis(b *testing.B) (*redis.Client, bool) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		return standalone(b), false
	}
	redistest.Require(b)
	moduleRedis.once.Do(func() {
		moduleRedis.srv, moduleRedis.err = redistest.Start(&redistest.Options{
			Password: "bench-secret", Args: []string{"--loadmodule", so},
		})
		if moduleRedis.err == nil {
			redistest.AtExit(func() { moduleRedis.srv.Close() })
		}
	})
	if moduleRedis.err != nil {
		b.Fatalf("redis-server with REDISBLOOM_SO=%s: %v", so, moduleRedis.err)
	}
	c := redis.NewClient(&redis.Options{Addr: moduleRedis.srv.Addr, Password: moduleRedis.srv.Password})
	b.Cleanup(func() { c.Close() })
	return c, true
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

// benchForms holds one filter of each form for a benchmark, all made for benchN keys at benchP.
type benchForms struct {
	c       *redis.Client
	script  *Filter
	plain   *Filter
	perBit  *perBitFilter
	modules []namedFilter // module-redisbloom, module-bloomd: those available
}

// remoteFilter is what Filter and ModuleFilter have in common.
type remoteFilter interface {
	Add(ctx context.Context, key []byte) (bool, error)
	Test(ctx context.Context, key []byte) (bool, error)
	AddMany(ctx context.Context, keys [][]byte) ([]bool, error)
	TestMany(ctx context.Context, keys [][]byte) ([]bool, error)
	Delete(ctx context.Context) error
}

type namedFilter struct {
	name string
	f    remoteFilter
}

func newBenchForms(b *testing.B) *benchForms {
	ctx := context.Background()
	c, hasModule := benchRedis(b)
	fs := &benchForms{c: c}
	var err error
	if fs.script, err = New(ctx, c, uniqueName(b), benchN, benchP, nil); err != nil {
		b.Fatal(err)
	}
	params, err := SpringHelper(benchN, benchP)
	if err != nil {
		b.Fatal(err)
	}
	if fs.plain, err = NewPlain(ctx, c, uniqueName(b), params, nil); err != nil {
		b.Fatal(err)
	}
	fs.perBit = &perBitFilter{c: c, key: uniqueName(b), m: fs.script.M(), k: fs.script.K()}
	if hasModule {
		f, err := NewModule(ctx, c, uniqueName(b), benchN, benchP, nil)
		if err != nil {
			b.Fatal(err)
		}
		fs.modules = append(fs.modules, namedFilter{"module-redisbloom", f})
	}
	f, err := NewModule(ctx, bloomdProcessClient(b), uniqueName(b), benchN, benchP, nil)
	if err != nil {
		b.Fatal(err)
	}
	fs.modules = append(fs.modules, namedFilter{"module-bloomd", f})
	b.Cleanup(func() {
		ctx := context.Background()
		fs.script.Delete(ctx)
		fs.plain.Delete(ctx)
		c.Del(ctx, fs.perBit.key)
		for _, m := range fs.modules {
			m.f.Delete(ctx)
		}
	})
	return fs
}

// filters returns every form but the per-bit helper, by their benchmark names.
func (fs *benchForms) filters() []namedFilter {
	return append([]namedFilter{{"script", fs.script}, {"plain", fs.plain}}, fs.modules...)
}

func BenchmarkAdd(b *testing.B) {
	ctx := context.Background()
	fs := newBenchForms(b)
	ks := benchKeys("add", 1<<16)
	b.Run("impl=k-SETBIT", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := fs.perBit.add(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	for _, nf := range fs.filters() {
		b.Run("impl="+nf.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := nf.f.Add(ctx, ks[i&(len(ks)-1)]); err != nil {
					b.Fatal(err)
				}
			}
			reportKeys(b, 1)
		})
	}
}

func BenchmarkTest(b *testing.B) {
	ctx := context.Background()
	fs := newBenchForms(b)
	present := benchKeys("present", 1<<15)
	if err := fs.perBit.addPipelined(ctx, present); err != nil {
		b.Fatal(err)
	}
	for _, nf := range fs.filters() {
		if _, err := nf.f.AddMany(ctx, present); err != nil {
			b.Fatal(err)
		}
	}
	// Half present, half absent.
	ks := append(present[:1<<14:1<<14], benchKeys("absent", 1<<14)...)
	b.Run("impl=k-GETBIT", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := fs.perBit.test(ctx, ks[i&(len(ks)-1)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, 1)
	})
	for _, nf := range fs.filters() {
		b.Run("impl="+nf.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := nf.f.Test(ctx, ks[i&(len(ks)-1)]); err != nil {
					b.Fatal(err)
				}
			}
			reportKeys(b, 1)
		})
	}
}

func BenchmarkAddMany(b *testing.B) {
	ctx := context.Background()
	fs := newBenchForms(b)
	batches := make([][][]byte, 64)
	for i := range batches {
		batches[i] = benchKeys(fmt.Sprintf("batch%d", i), benchBatch)
	}
	b.Run("impl=k-SETBIT-loop", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			for _, key := range batches[i%len(batches)] {
				if _, err := fs.perBit.add(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportKeys(b, benchBatch)
	})
	b.Run("impl=k-SETBIT-pipelined", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := fs.perBit.addPipelined(ctx, batches[i%len(batches)]); err != nil {
				b.Fatal(err)
			}
		}
		reportKeys(b, benchBatch)
	})
	for _, nf := range fs.filters() {
		b.Run("impl="+nf.name, func(b *testing.B) {
			script := nf.name == "script" || nf.name == "plain"
			var start float64
			if script {
				start = serverUsec(b, fs.c)
			}
			for i := 0; b.Loop(); i++ {
				if _, err := nf.f.AddMany(ctx, batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			reportKeys(b, benchBatch)
			if script {
				reportServer(b, fs.c, start, benchBatch)
			}
		})
	}
}

func BenchmarkTestMany(b *testing.B) {
	ctx := context.Background()
	fs := newBenchForms(b)
	present := benchKeys("batch0", benchBatch)
	for _, nf := range fs.filters() {
		if _, err := nf.f.AddMany(ctx, present); err != nil {
			b.Fatal(err)
		}
	}
	batch := append(present[:benchBatch/2:benchBatch/2], benchKeys("absent", benchBatch/2)...)
	for _, nf := range fs.filters() {
		b.Run("impl="+nf.name, func(b *testing.B) {
			script := nf.name == "script" || nf.name == "plain"
			var start float64
			if script {
				start = serverUsec(b, fs.c)
			}
			for b.Loop() {
				if _, err := nf.f.TestMany(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			reportKeys(b, benchBatch)
			if script {
				reportServer(b, fs.c, start, benchBatch)
			}
		})
	}
}

var bloomdProc struct {
	once sync.Once
	srv  *redistest.Server
	skip string
	err  error
}

// bloomdProcess builds cmd/bloomd from this module and runs it on a free loopback port, once per
// test binary, for the benchmarks: a process of its own, as the redis-server it is compared with
// (the tests use an in-process bloomd, bloomdClient).
func bloomdProcess(tb testing.TB) *redistest.Server {
	tb.Helper()
	bloomdProc.once.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			bloomdProc.err = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "cmd", "bloomd", "main.go")); err != nil {
			bloomdProc.skip = "cmd/bloomd is not in the tree; module mode against bloomd is not tested"
			return
		}
		dir, err := os.MkdirTemp("", "redisfilter-bloomd-")
		if err != nil {
			bloomdProc.err = err
			return
		}
		redistest.AtExit(func() { os.RemoveAll(dir) })
		bin := filepath.Join(dir, "bloomd")
		build := exec.Command("go", "build", "-o", bin, "./cmd/bloomd")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			bloomdProc.err = errors.New("building cmd/bloomd: " + err.Error() + ": " + string(out))
			return
		}
		bloomdProc.srv, bloomdProc.err = redistest.StartProgram(bin, bloomdPassword, func(port int, dir string) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--requirepass", bloomdPassword}
		})
		if bloomdProc.srv != nil {
			redistest.AtExit(func() { bloomdProc.srv.Close() })
		}
	})
	if bloomdProc.skip != "" {
		tb.Skip(bloomdProc.skip)
	}
	if bloomdProc.err != nil {
		tb.Fatal(bloomdProc.err)
	}
	return bloomdProc.srv
}

func bloomdProcessClient(tb testing.TB) *redis.Client {
	s := bloomdProcess(tb)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password})
	tb.Cleanup(func() { c.Close() })
	return c
}
