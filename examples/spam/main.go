// Command spam keeps a sender block list in bloomd (a filter behind the BF.* commands) that mail
// checkers share, and updates it while they run: an updater adds newly reported spam senders in
// batches (BF.INSERT), and checkers test the senders of incoming messages in batches (BF.MEXISTS).
// It prints the checks made, the spam caught, the good senders wrongly flagged (false
// positives), and the spam senders a checker let through after their batch was published, which
// must be none.
//
//	go run ./examples/spam                            # bloomd started in this process
//	go run ./examples/spam -addr 127.0.0.1:6379       # an existing bloomd, or Redis with RedisBloom
//
// With no -addr, bloomd (internal/server) runs in this process on a free loopback port, without
// persistence. Senders are synthetic addresses from a fixed seed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

func main() {
	if _, err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// result is what a run counted.
type result struct {
	checks        int64 // senders checked
	spamCaught    int64 // blocked senders flagged
	spamMissed    int64 // blocked senders, published before the check began, not flagged
	good          int64 // good senders checked
	falsePositive int64 // good senders flagged
	updates       int   // batches published while the checkers ran
	elapsed       time.Duration
}

func run(args []string, out io.Writer) (result, error) {
	fs := flag.NewFlagSet("spam", flag.ContinueOnError)
	addr := fs.String("addr", "", "bloomd or RedisBloom address; empty: start bloomd in this process")
	initial := fs.Int("initial", 100_000, "senders on the block list at start")
	batches := fs.Int("batches", 20, "batches of newly reported senders added while the checkers run")
	batchSize := fs.Int("batch", 2_000, "senders per batch")
	every := fs.Duration("every", 50*time.Millisecond, "pause between batches")
	checkers := fs.Int("checkers", 4, "concurrent checkers")
	p := fs.Float64("p", 0.001, "false-positive rate of the block list")
	if err := fs.Parse(args); err != nil {
		return result{}, err
	}
	if *initial <= 0 || *batches < 0 || *batchSize <= 0 || *checkers <= 0 || *every < 0 || !(*p > 0 && *p < 1) {
		return result{}, errors.New("spam: sizes must be positive and 0 < -p < 1")
	}
	ctx := context.Background()
	if *addr == "" {
		a, stop, err := startBloomd()
		if err != nil {
			return result{}, err
		}
		defer stop()
		*addr = a
	}
	client := redis.NewClient(&redis.Options{Addr: *addr})
	defer client.Close()
	name := fmt.Sprintf("blocklist.%d", time.Now().UnixNano())
	capacity := uint64(*initial + *batches**batchSize)
	opts := &redisfilter.ModuleOptions{NonScaling: true}
	list, err := redisfilter.NewModule(ctx, client, name, capacity, *p, opts)
	if err != nil {
		return result{}, err
	}
	defer list.Delete(ctx)

	start := time.Now()
	if _, err := list.AddMany(ctx, senders("spam", 0, *initial)); err != nil {
		return result{}, err
	}
	fmt.Fprintf(out, "block list %s on %s: %d senders loaded in %s (capacity %d, p=%g)\n",
		name, *addr, *initial, time.Since(start).Round(time.Millisecond), capacity, *p)

	var (
		published atomic.Int64 // senders on the list: spam-0 .. spam-(published-1)
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		r         result
		firstErr  error
		errOnce   sync.Once
	)
	published.Store(int64(*initial))
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }

	for c := range *checkers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 3)) // fixed seed
			// Each checker is its own client, as separate services would be.
			cc := redis.NewClient(&redis.Options{Addr: *addr})
			defer cc.Close()
			mine, err := redisfilter.NewModule(ctx, cc, name, capacity, *p, opts)
			if err != nil {
				fail(err)
				return
			}
			var checks, caught, missed, good, fp int64
			defer func() {
				atomic.AddInt64(&r.checks, checks)
				atomic.AddInt64(&r.spamCaught, caught)
				atomic.AddInt64(&r.spamMissed, missed)
				atomic.AddInt64(&r.good, good)
				atomic.AddInt64(&r.falsePositive, fp)
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A batch of 100 incoming messages: half from good senders, half from spam
				// senders on the list when the batch starts (the newest most often).
				onList := published.Load()
				keys := make([][]byte, 100)
				spam := make([]bool, 100)
				for i := range keys {
					if rng.IntN(2) == 0 {
						keys[i] = []byte(fmt.Sprintf("user%d@mail.example", rng.IntN(1_000_000_000)))
						continue
					}
					spam[i] = true
					n := onList - 1 - int64(rng.IntN(min(int(onList), 5000)))
					if rng.IntN(2) == 0 {
						n = int64(rng.IntN(int(onList)))
					}
					keys[i] = sender("spam", int(n))
				}
				flagged, err := mine.TestMany(ctx, keys)
				if err != nil {
					fail(err)
					return
				}
				for i, f := range flagged {
					checks++
					switch {
					case spam[i] && f:
						caught++
					case spam[i]:
						missed++
					case f:
						good++
						fp++
					default:
						good++
					}
				}
			}
		})
	}

	start = time.Now()
	for b := range *batches {
		time.Sleep(*every)
		from := *initial + b**batchSize
		if _, err := list.AddMany(ctx, senders("spam", from, *batchSize)); err != nil {
			fail(err)
			break
		}
		published.Store(int64(from + *batchSize)) // only now may checkers expect them flagged
		r.updates++
	}
	time.Sleep(*every)
	close(stop)
	wg.Wait()
	r.elapsed = time.Since(start)
	if firstErr != nil {
		return r, firstErr
	}
	fmt.Fprintf(out, "%d checkers, %d batches of %d senders added while they ran, in %s\n",
		*checkers, r.updates, *batchSize, r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "checks: %d (%.0f/s)\n", r.checks, float64(r.checks)/r.elapsed.Seconds())
	fmt.Fprintf(out, "spam caught: %d, let through after publication: %d\n", r.spamCaught, r.spamMissed)
	fmt.Fprintf(out, "good senders flagged: %d of %d (%.4f%%; sized for %.4f%%)\n",
		r.falsePositive, r.good, 100*float64(r.falsePositive)/float64(max(r.good, 1)), 100**p)
	return r, nil
}

// sender returns the address of sender n of a kind.
func sender(kind string, n int) []byte {
	return []byte(fmt.Sprintf("%s-%d@%s-offers.example", kind, n, []string{"cheap", "win", "crypto", "pharma"}[n%4]))
}

func senders(kind string, from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = sender(kind, from+i)
	}
	return out
}

// startBloomd runs bloomd in this process on a free loopback port, without persistence.
func startBloomd() (string, func(), error) {
	cfg := server.DefaultConfig()
	dir, err := os.MkdirTemp("", "spam-bloomd-")
	if err != nil {
		return "", nil, err
	}
	cfg.Dir = dir
	cfg.Save = nil
	cfg.AppendOnly = false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	go s.ServeListener(ln)
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		os.RemoveAll(dir)
	}, nil
}
