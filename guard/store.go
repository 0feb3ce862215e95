package guard

import (
	"context"
	"fmt"

	"github.com/bloomd/bloom"
)

// A Store makes the filters a Guard builds and puts a finished one in service. The guard builds
// every filter afresh (at the first preload and at each rebuild) and swaps it in only when it is
// complete, so a Store never serves a half-built filter.
//
// Local keeps filters in this process; Redis and Module keep them in a Redis server or a bloomd
// (or RedisBloom) server, where every instance of a service shares them. Implementations must be
// safe for concurrent use; a Guard calls Build, Swap and Discard from one goroutine at a time.
type Store interface {
	// Build returns a new, empty filter sized for n keys at false-positive rate p. It does not
	// answer for the guard until Swap puts it in service.
	Build(ctx context.Context, n uint64, p float64) (Filter, error)

	// Swap puts next, a filter Build returned, in service in place of live (nil at the first
	// build), in one atomic step, and returns the filter to use from then on: next itself, or a
	// handle to where next now lives. On error, live stays in service.
	Swap(ctx context.Context, live, next Filter) (Filter, error)

	// Discard releases a filter Build returned that will not be swapped in.
	Discard(ctx context.Context, f Filter) error
}

// An Opener is a Store whose filter outlives the process that built it (one kept in Redis or a
// server). Guard.Attach uses it, so that instances of a service that do not build the filter
// themselves use the one another instance built.
type Opener interface {
	// Open returns the filter in service, or an error wrapping ErrNoFilter if there is none.
	Open(ctx context.Context) (Filter, error)
}

// LocalOptions configure Local. A nil *LocalOptions means the defaults.
type LocalOptions struct {
	// Blocked builds cache-line blocked filters (bloom.NewBlocked: one cache miss per test, at
	// the price of a slightly higher false-positive rate for the same memory) instead of classic
	// ones (bloom.New, Guava's layout).
	Blocked bool
}

// Local returns a Store that keeps filters in this process's memory. Swap is a pointer swap;
// the old filter is left to the garbage collector once no call uses it.
func Local(opt *LocalOptions) Store {
	var o LocalOptions
	if opt != nil {
		o = *opt
	}
	return localStore{o}
}

type localStore struct{ opt LocalOptions }

func (s localStore) Build(_ context.Context, n uint64, p float64) (Filter, error) {
	var (
		f   bloom.AnyFilter
		err error
	)
	if s.opt.Blocked {
		f, err = bloom.NewBlocked(n, p)
	} else {
		f, err = bloom.New(n, p)
	}
	if err != nil {
		return nil, fmt.Errorf("guard: building an in-process filter for %d keys at p=%g: %w", n, p, err)
	}
	return InProcess(f), nil
}

func (localStore) Swap(_ context.Context, _, next Filter) (Filter, error) { return next, nil }
func (localStore) Discard(context.Context, Filter) error                  { return nil }
