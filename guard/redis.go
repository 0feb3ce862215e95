package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// Redis returns a Store that keeps the filter in Redis as a redisfilter.Filter (plain bitmaps, no
// module needed) called name, shared by every instance of a service that uses the same name. opt
// configures the filters as redisfilter.New takes it (nil means its defaults).
//
// Build creates the new filter under a fresh name, "name.next.<random>"; Swap renames its keys
// onto name's and deletes the keys of name's old filter that the new one does not overwrite, in
// one MULTI/EXEC transaction, so every client sees the old filter or the new one, never a mix or
// none. Handles to name whose parameters the swap changed (another instance's, attached with
// Guard.Attach) get redisfilter.ErrConfigMismatch on their next call; the filters this Store
// returns reopen name when that happens and repeat the call, so they follow swaps made anywhere.
//
// The transaction renames keys between hash slots, which Redis Cluster refuses (and go-redis would
// split it into one transaction per slot, losing its atomicity), so Build refuses a
// *redis.ClusterClient with ErrInvalid: use one Redis server (or Sentinel) for a guard that
// builds, or a Local store per instance. Attach works on any client.
func Redis(c redis.UniversalClient, name string, opt *redisfilter.Options) Store {
	return &redisStore{c: c, name: name, opt: opt}
}

type redisStore struct {
	c    redis.UniversalClient
	name string
	opt  *redisfilter.Options
}

// stagingName returns a fresh name for a filter under construction.
func stagingName(name string) string {
	var b [8]byte
	rand.Read(b[:])
	return name + ".next." + hex.EncodeToString(b[:])
}

func (s *redisStore) Build(ctx context.Context, n uint64, p float64) (Filter, error) {
	if err := s.checkSwappable(); err != nil {
		return nil, err
	}
	f, err := redisfilter.New(ctx, s.c, stagingName(s.name), n, p, s.opt)
	if err != nil {
		return nil, fmt.Errorf("guard: building a Redis filter for %d keys at p=%g: %w", n, p, err)
	}
	return f, nil
}

// checkSwappable refuses clients on which Swap's transaction cannot be atomic.
func (s *redisStore) checkSwappable() error {
	if _, ok := s.c.(*redis.ClusterClient); ok {
		return fmt.Errorf("%w: the Redis store builds and swaps filters with a transaction across hash slots, which Redis Cluster cannot run; use a single server or Sentinel, or a Local store", ErrInvalid)
	}
	return nil
}

func (s *redisStore) Swap(ctx context.Context, _, next Filter) (Filter, error) {
	if err := s.checkSwappable(); err != nil {
		return nil, err
	}
	nf, ok := next.(*redisfilter.Filter)
	if !ok {
		return nil, fmt.Errorf("%w: Swap of a %T, which this Redis store did not build", ErrInvalid, next)
	}
	var old []string
	if of, err := redisfilter.Open(ctx, s.c, s.name, s.opt); err == nil {
		old = of.Keys()
	} else if !errors.Is(err, redisfilter.ErrNotFound) {
		return nil, fmt.Errorf("guard: swapping in %s: %w", nf.Name(), err)
	}
	staged := nf.Keys()
	// A data key exists only once a bit is set: an empty filter has its parameters alone.
	exists := make([]*redis.IntCmd, len(staged))
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range staged {
			exists[i] = p.Exists(ctx, k)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("guard: swapping in %s: %w", nf.Name(), err)
	}
	from, to := "{"+nf.Name(), "{"+s.name
	if _, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(old) > 0 {
			p.Del(ctx, old...)
		}
		for i, k := range staged {
			if exists[i].Val() == 1 {
				p.Rename(ctx, k, to+strings.TrimPrefix(k, from))
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("guard: swapping in %s as %s: %w", nf.Name(), s.name, err)
	}
	live, err := s.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("guard: opening %s after the swap: %w", s.name, err)
	}
	return live, nil
}

func (s *redisStore) Discard(ctx context.Context, f Filter) error {
	if nf, ok := f.(*redisfilter.Filter); ok {
		return nf.Delete(ctx)
	}
	return nil
}

// Open returns a handle to the filter in service under the store's name.
func (s *redisStore) Open(ctx context.Context) (Filter, error) {
	f, err := redisfilter.Open(ctx, s.c, s.name, s.opt)
	if errors.Is(err, redisfilter.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", ErrNoFilter, err)
	}
	if err != nil {
		return nil, err
	}
	h := &redisLive{s: s}
	h.cur.Store(f)
	return h, nil
}

// redisLive is a handle to the filter in service that follows swaps: a call refused because the
// stored parameters changed is repeated once on a handle opened afresh.
type redisLive struct {
	s   *redisStore
	cur atomic.Pointer[redisfilter.Filter]
}

func (r *redisLive) do(ctx context.Context, call func(*redisfilter.Filter) error) error {
	f := r.cur.Load()
	err := call(f)
	if !errors.Is(err, redisfilter.ErrConfigMismatch) {
		return err
	}
	nf, oerr := redisfilter.Open(ctx, r.s.c, r.s.name, r.s.opt)
	if oerr != nil {
		return err
	}
	r.cur.CompareAndSwap(f, nf)
	return call(nf)
}

func (r *redisLive) Add(ctx context.Context, key []byte) (added bool, err error) {
	err = r.do(ctx, func(f *redisfilter.Filter) (e error) { added, e = f.Add(ctx, key); return })
	return
}

func (r *redisLive) Test(ctx context.Context, key []byte) (maybe bool, err error) {
	err = r.do(ctx, func(f *redisfilter.Filter) (e error) { maybe, e = f.Test(ctx, key); return })
	return
}

func (r *redisLive) AddMany(ctx context.Context, keys [][]byte) (added []bool, err error) {
	err = r.do(ctx, func(f *redisfilter.Filter) (e error) { added, e = f.AddMany(ctx, keys); return })
	return
}

// EstimatedFPP estimates the false-positive probability from the filter's size and its number of
// set bits (redisfilter's ApproximateCount).
func (r *redisLive) EstimatedFPP(ctx context.Context) (float64, error) {
	f := r.cur.Load()
	n, err := f.ApproximateCount(ctx)
	if err != nil {
		return 0, err
	}
	return bloom.FalsePositiveRate(f.M(), f.K(), n), nil
}

// Module returns a Store that keeps the filter in a server with the BF.* commands (bloomd, or
// Redis with RedisBloom) as a redisfilter.ModuleFilter called name: one key, held and hashed by
// the server. opt configures the filters as redisfilter.NewModule takes it (nil means its
// defaults).
//
// Build reserves the new filter under a fresh name, "name.next.<random>"; Swap renames it onto
// name (RENAME replaces the old filter in one step). ModuleFilter handles do not check parameters,
// so every handle to name, this process's or another instance's, uses the new filter from the
// swap on. The filter a handle would recreate after a deletion of name has the capacity of the
// handle's filter and, for handles from Open, a false-positive rate of 0.01 (BF.INFO does not
// report the rate).
//
// On Redis Cluster with RedisBloom the RENAME crosses hash slots and fails: the build fails, its
// filter is deleted, and the old filter stays in service.
func Module(c redis.UniversalClient, name string, opt *redisfilter.ModuleOptions) Store {
	return &moduleStore{c: c, name: name, opt: opt}
}

type moduleStore struct {
	c    redis.UniversalClient
	name string
	opt  *redisfilter.ModuleOptions
}

// moduleNext is a module filter under construction, with the sizes it was reserved with.
type moduleNext struct {
	*redisfilter.ModuleFilter
	n uint64
	p float64
}

func (s *moduleStore) Build(ctx context.Context, n uint64, p float64) (Filter, error) {
	f, err := redisfilter.NewModule(ctx, s.c, stagingName(s.name), n, p, s.opt)
	if err != nil {
		return nil, fmt.Errorf("guard: building a BF.* filter for %d keys at p=%g: %w", n, p, err)
	}
	return moduleNext{f, n, p}, nil
}

func (s *moduleStore) Swap(ctx context.Context, _, next Filter) (Filter, error) {
	nf, ok := next.(moduleNext)
	if !ok {
		return nil, fmt.Errorf("%w: Swap of a %T, which this module store did not build", ErrInvalid, next)
	}
	if err := s.c.Rename(ctx, nf.Name(), s.name).Err(); err != nil {
		return nil, fmt.Errorf("guard: swapping in %s as %s: %w", nf.Name(), s.name, err)
	}
	live, err := redisfilter.NewModule(ctx, s.c, s.name, nf.n, nf.p, s.opt)
	if err != nil {
		return nil, fmt.Errorf("guard: opening %s after the swap: %w", s.name, err)
	}
	return live, nil
}

func (s *moduleStore) Discard(ctx context.Context, f Filter) error {
	if nf, ok := f.(moduleNext); ok {
		return nf.Delete(ctx)
	}
	return nil
}

// Open returns a handle to the filter in service under the store's name.
func (s *moduleStore) Open(ctx context.Context) (Filter, error) {
	capacity, err := s.c.Do(ctx, "BF.INFO", s.name, "CAPACITY").Result()
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "not found") || errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("%w: %s: %v", ErrNoFilter, s.name, err)
		}
		return nil, fmt.Errorf("guard: opening %s: %w", s.name, err)
	}
	n := firstInt(capacity)
	if n == 0 {
		return nil, fmt.Errorf("guard: opening %s: unexpected BF.INFO CAPACITY reply %v", s.name, capacity)
	}
	f, err := redisfilter.NewModule(ctx, s.c, s.name, n, 0.01, s.opt)
	if err != nil {
		return nil, fmt.Errorf("guard: opening %s: %w", s.name, err)
	}
	return f, nil
}

// firstInt returns the integer in a BF.INFO field reply, which is the integer itself, a
// one-element array (RESP2) or a one-entry map (RESP3); 0 if there is none.
func firstInt(v any) uint64 {
	switch v := v.(type) {
	case int64:
		if v > 0 {
			return uint64(v)
		}
	case []any:
		if len(v) == 1 {
			return firstInt(v[0])
		}
	case map[any]any:
		if len(v) == 1 {
			for _, x := range v {
				return firstInt(x)
			}
		}
	case map[string]any:
		if len(v) == 1 {
			for _, x := range v {
				return firstInt(x)
			}
		}
	}
	return 0
}
