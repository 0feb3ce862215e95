// Command spam keeps a sender block list in bloomd (a filter behind the BF.* commands) that mail
// checkers share, and updates it as they go: checkers, each on its own connection, test the
// senders of incoming messages in batches (BF.MEXISTS), in rounds; between two rounds an
// updater adds a batch of newly reported spam senders (BF.INSERT). It prints the checks made,
// the spam caught, the good senders wrongly flagged (false positives), and the spam senders a
// checker let through after their batch was published, which must be none.
//
//	go run ./examples/spam                            # bloomd started in this process
//	go run ./examples/spam -addr 127.0.0.1:6379       # an existing bloomd, or Redis with RedisBloom
//
// With no -addr, bloomd (internal/server) runs in this process on a free loopback port, without
// persistence. Senders are synthetic addresses from fixed seeds, and a round sees exactly the
// batches published before it, so the counts are the same in every run; only the times differ.
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
		if errors.Is(err, flag.ErrHelp) {
			return // -h or -help: the flag package has printed the usage; asking is no error
		}
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
	batches := fs.Int("batches", 20, "batches of newly reported senders, published between rounds of checks")
	batchSize := fs.Int("batch", 2_000, "senders per batch")
	checkers := fs.Int("checkers", 4, "concurrent checkers")
	perRound := fs.Int("checks", 20, "batches of 100 checks each checker makes in a round")
	p := fs.Float64("p", 0.001, "false-positive rate of the block list")
	if err := fs.Parse(args); err != nil {
		return result{}, err
	}
	if *initial <= 0 || *batches < 0 || *batchSize <= 0 || *checkers <= 0 || *perRound <= 0 || !(*p > 0 && *p < 1) {
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

	// The checkers check in rounds; between two rounds the updater publishes a batch. Each
	// checker draws its senders from a seed of its own and the round's number, and a round
	// sees exactly the batches published before it, so every count printed is the same from
	// run to run; only the times differ.
	var (
		r        result
		firstErr error
		errOnce  sync.Once
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	lists := make([]*redisfilter.ModuleFilter, *checkers)
	for c := range lists {
		// Each checker is its own client, as separate services would be.
		cc := redis.NewClient(&redis.Options{Addr: *addr})
		defer cc.Close()
		if lists[c], err = redisfilter.NewModule(ctx, cc, name, capacity, *p, opts); err != nil {
			return result{}, err
		}
	}
	published := *initial // senders on the list: spam-0 .. spam-(published-1)
	start = time.Now()
	for round := 0; round <= *batches && firstErr == nil; round++ {
		if round > 0 {
			if _, err := list.AddMany(ctx, senders("spam", published, *batchSize)); err != nil {
				fail(err)
				break
			}
			published += *batchSize // only now may checkers expect them flagged
			r.updates++
		}
		var wg sync.WaitGroup
		for c, mine := range lists {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(c), uint64(round))) // fixed seed
				var checks, caught, missed, good, fp int64
				defer func() {
					atomic.AddInt64(&r.checks, checks)
					atomic.AddInt64(&r.spamCaught, caught)
					atomic.AddInt64(&r.spamMissed, missed)
					atomic.AddInt64(&r.good, good)
					atomic.AddInt64(&r.falsePositive, fp)
				}()
				for range *perRound {
					// A batch of 100 incoming messages: half from good senders, half from
					// spam senders on the list (the newest most often).
					keys := make([][]byte, 100)
					spam := make([]bool, 100)
					for i := range keys {
						if rng.IntN(2) == 0 {
							keys[i] = []byte(fmt.Sprintf("user%d@mail.example", rng.IntN(1_000_000_000)))
							continue
						}
						spam[i] = true
						n := published - 1 - rng.IntN(min(published, 5000))
						if rng.IntN(2) == 0 {
							n = rng.IntN(published)
						}
						keys[i] = sender("spam", n)
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
		wg.Wait()
	}
	r.elapsed = time.Since(start)
	if firstErr != nil {
		return r, firstErr
	}
	fmt.Fprintf(out, "%d checkers, %d rounds of %d checks each; %d batches of %d senders published between rounds\n",
		*checkers, *batches+1, *perRound*100, r.updates, *batchSize)
	fmt.Fprintf(out, "checks: %d\n", r.checks)
	fmt.Fprintf(out, "spam caught: %d, let through after publication: %d\n", r.spamCaught, r.spamMissed)
	fmt.Fprintf(out, "good senders flagged: %d of %d (%.4f%%; sized for %.4f%%)\n",
		r.falsePositive, r.good, 100*float64(r.falsePositive)/float64(max(r.good, 1)), 100**p)
	fmt.Fprintf(out, "time: %s (%.0f checks/s)\n", r.elapsed.Round(time.Millisecond), float64(r.checks)/r.elapsed.Seconds())
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
