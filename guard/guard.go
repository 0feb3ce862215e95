package guard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// A Cache is the optional cache between the guard and the loader, such as an in-process LRU or
// Redis. Get reports whether key was found; errors from either method are not fatal: the guard
// goes on to the loader (after Get) or returns the loaded value (after Set).
type Cache[V any] interface {
	Get(ctx context.Context, key string) (V, bool, error)
	Set(ctx context.Context, key string, v V) error
}

// Config configures a Guard. Store, Source and Load are required.
type Config[V any] struct {
	// Store makes the filters: Local, Redis or Module.
	Store Store

	// Source yields the keys that exist, for the preload and every rebuild (SQL reads them from
	// a database).
	Source Source

	// Load looks a key up in the database. It returns ErrNotFound (or an error wrapping it, or
	// sql.ErrNoRows) when there is no such key.
	Load func(ctx context.Context, key string) (V, error)

	// Cache, if set, is asked before Load and filled after it.
	Cache Cache[V]

	// FPP is the false-positive rate the filters are sized for; zero means 0.01.
	FPP float64

	// Capacity is the number of keys a new filter is sized for. Zero means the source's count
	// times Headroom (and at least 1024), computed afresh at every build.
	Capacity uint64

	// Headroom multiplies the source's count when Capacity is zero, so that the filter stays
	// within its false-positive rate while keys are added until the next rebuild; zero means 2.
	Headroom float64

	// RebuildEvery is the period of Run's rebuilds; zero means Run preloads and never rebuilds
	// (Rebuild can still be called).
	RebuildEvery time.Duration

	// BatchSize is the number of keys per AddMany during a build; zero means 1000.
	BatchSize int

	// Progress, if set, is called after every batch of a build with the totals so far.
	Progress func(Progress)

	// Logger receives a line when a build starts, every LogEvery while it runs, when it ends
	// or fails, and when a filter call fails; nil means slog.Default().
	Logger *slog.Logger

	// LogEvery is the interval of a build's progress lines; zero means 5s.
	LogEvery time.Duration

	// InsertWindow is the longest time between an Added call and the commit of its insert; zero
	// means one minute. A build also adds the keys reported this long before it started, whose
	// rows its read of the source may not have seen yet.
	InsertWindow time.Duration
}

// Progress reports a build under way.
type Progress struct {
	Rebuild bool          // false for the first build (the preload)
	Keys    uint64        // keys added to the new filter so far
	Total   uint64        // the source's count (0 if it gave none)
	Elapsed time.Duration // since the build started
}

// Guard answers "definitely absent" for keys the database does not have, before the cache and
// the database are asked: Get returns ErrNotFound at once for a key its filter says was never
// added. Keys the filter may hold go to the cache and then to the loader, with concurrent loads
// of one key collapsed into one.
//
// Until the first build (Preload or Run) has completed, Get asks the cache and the loader for
// every key: the guard never answers absent for a key it has not loaded. Keys added to the
// database must be reported with Added; the guard records the keys reported while a build runs
// and adds them to the new filter before it is swapped in, so no key reported at any time is
// answered absent after Added returns.
//
// A failing filter (a Redis outage, say) makes Get go to the cache and the loader, as if the
// filter had said "maybe": errors of the filter never produce ErrNotFound.
//
// A Guard is safe for concurrent use by multiple goroutines.
type Guard[V any] struct {
	cfg   Config[V]
	log   *slog.Logger
	group singleflight.Group

	buildMu sync.Mutex // one build at a time

	mu        sync.Mutex
	live      Filter      // nil until the first build completes
	building  bool        // a build is under way: Added records keys in pending
	pending   [][]byte    // keys reported by Added during the build
	recent    []recentKey // keys reported within InsertWindow, oldest first
	ready     chan struct{}
	readyOnce sync.Once
	sized     uint64 // capacity of the live filter
	p         float64
	inLive    uint64 // keys added to the live filter: the build's plus Added's since
	lastErr   error

	builds, buildKeys                        atomic.Uint64
	buildTime                                atomic.Int64
	requests, absent, passed, maybeNotFound  atomic.Uint64
	unguarded, filterErrors, cacheHits, load atomic.Uint64
}

// New returns a Guard for cfg. The guard lets every request through until Preload or Run has
// built its first filter (or Attach has found one).
func New[V any](cfg Config[V]) (*Guard[V], error) {
	if cfg.Store == nil || cfg.Source == nil || cfg.Load == nil {
		return nil, fmt.Errorf("%w: Store, Source and Load are required", ErrInvalid)
	}
	if cfg.FPP == 0 {
		cfg.FPP = 0.01
	}
	if !(cfg.FPP > 0 && cfg.FPP < 1) {
		return nil, fmt.Errorf("%w: FPP %g is not between 0 and 1", ErrInvalid, cfg.FPP)
	}
	if cfg.Headroom == 0 {
		cfg.Headroom = 2
	}
	if !(cfg.Headroom >= 1 && cfg.Headroom <= 1e6) {
		return nil, fmt.Errorf("%w: Headroom %g is not between 1 and 1e6", ErrInvalid, cfg.Headroom)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 1000
	}
	if cfg.BatchSize < 0 || cfg.RebuildEvery < 0 || cfg.LogEvery < 0 || cfg.InsertWindow < 0 {
		return nil, fmt.Errorf("%w: negative BatchSize, RebuildEvery, LogEvery or InsertWindow", ErrInvalid)
	}
	if cfg.InsertWindow == 0 {
		cfg.InsertWindow = time.Minute
	}
	if cfg.LogEvery == 0 {
		cfg.LogEvery = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Guard[V]{cfg: cfg, log: log, ready: make(chan struct{})}, nil
}

// Ready returns a channel that is closed when the guard's first filter is in service; from then
// on Get may answer ErrNotFound without asking the database.
func (g *Guard[V]) Ready() <-chan struct{} { return g.ready }

// Get returns the value of key: ErrNotFound at once if the filter says key was never added;
// otherwise the cache's value, or else the loader's (stored in the cache). Concurrent Gets of a
// key that is not cached share one call of the loader; each waits for it until its own ctx ends.
// The shared load runs with the first caller's context values but without its cancelation.
func (g *Guard[V]) Get(ctx context.Context, key string) (V, error) {
	var zero V
	g.requests.Add(1)
	guarded := false
	if f := g.current(); f == nil {
		g.unguarded.Add(1)
	} else if maybe, err := f.Test(ctx, []byte(key)); err != nil {
		g.filterErrors.Add(1)
		g.unguarded.Add(1)
		g.log.Warn("guard: filter test failed; asking the database", "key", key, "err", err)
	} else if !maybe {
		g.absent.Add(1)
		return zero, ErrNotFound
	} else {
		g.passed.Add(1)
		guarded = true
	}

	if c := g.cfg.Cache; c != nil {
		if v, ok, err := c.Get(ctx, key); err == nil && ok {
			g.cacheHits.Add(1)
			return v, nil
		}
	}
	ch := g.group.DoChan(key, func() (any, error) {
		g.load.Add(1)
		v, err := g.cfg.Load(context.WithoutCancel(ctx), key)
		if errors.Is(err, sql.ErrNoRows) && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		if err == nil && g.cfg.Cache != nil {
			g.cfg.Cache.Set(context.WithoutCancel(ctx), key, v)
		}
		return v, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			if guarded && errors.Is(r.Err, ErrNotFound) {
				g.maybeNotFound.Add(1)
			}
			return zero, r.Err
		}
		v, _ := r.Val.(V) // a nil interface value stays the zero V
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// current returns the filter in service, or nil before the first build.
func (g *Guard[V]) current() Filter {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live
}

// Added reports a key added to the database, so that the filter answers "maybe" for it. Call it
// before the insert commits (a key whose insert then fails only costs a false positive); a key
// reported after the commit may be answered absent by Gets in between. While a build runs, the
// key is also recorded and added to the new filter before it goes into service.
//
// The error is the filter's; the key is recorded for the running build even then, and a later
// rebuild finds it in the database.
func (g *Guard[V]) Added(ctx context.Context, key string) error {
	now := time.Now()
	g.mu.Lock()
	if g.building {
		g.pending = append(g.pending, []byte(key))
	}
	g.remember(now, key)
	live := g.live
	if live != nil {
		g.inLive++
	}
	g.mu.Unlock()
	if live == nil {
		return nil
	}
	if _, err := live.Add(ctx, []byte(key)); err != nil {
		g.filterErrors.Add(1)
		return fmt.Errorf("guard: adding %q: %w", key, err)
	}
	return nil
}

// recentKey is a key reported by Added, with when.
type recentKey struct {
	at  time.Time
	key string
}

// remember records key as reported at now and forgets keys older than InsertWindow. g.mu is held.
func (g *Guard[V]) remember(now time.Time, key string) {
	cut := 0
	for cut < len(g.recent) && now.Sub(g.recent[cut].at) > g.cfg.InsertWindow {
		cut++
	}
	if cut > 0 && cut >= len(g.recent)/2 {
		g.recent = append(g.recent[:0], g.recent[cut:]...) // amortized: move at most once per halving
	} else if cut > 0 {
		g.recent = g.recent[cut:]
	}
	g.recent = append(g.recent, recentKey{now, key})
}

// Attach puts in service the filter that the store already holds (built by another instance
// of the service through Preload, Run or Rebuild), without building one, and makes the guard
// ready. The store must be an Opener (Redis and Module are); if it holds no filter yet, Attach
// returns an error wrapping ErrNoFilter and the guard stays as it was.
//
// An attached guard's Added adds to the shared filter. Keys added by one instance while another
// rebuilds are found by the rebuild only if their rows were committed before its read of the
// source began; after a rebuild by another instance, keys inserted during it and reported only to
// other instances may be answered absent until the next rebuild. Keep such inserts on the
// instance that rebuilds, or rebuild where the database's writers are quiet.
func (g *Guard[V]) Attach(ctx context.Context) error {
	o, ok := g.cfg.Store.(Opener)
	if !ok {
		return fmt.Errorf("%w: Attach needs a store whose filter is shared (Redis or Module), not %T", ErrInvalid, g.cfg.Store)
	}
	f, err := o.Open(ctx)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = f
		g.p = g.cfg.FPP
		g.readyOnce.Do(func() { close(g.ready) })
	}
	return nil
}

// Stats are a guard's figures. Counters count since New.
type Stats struct {
	Ready      bool          // a filter is in service
	Builds     uint64        // completed builds (preload and rebuilds)
	BuildKeys  uint64        // keys the last build read from the source
	BuildTime  time.Duration // how long the last build took
	Capacity   uint64        // keys the filter in service was sized for (0 if attached)
	Keys       uint64        // keys added to it by this guard: its build's and Added's since
	FPP        float64       // the filter's estimated false-positive probability now
	LastError  error         // the last build's error, nil if it succeeded
	Requests   uint64        // Get calls
	Absent     uint64        // answered ErrNotFound by the filter alone
	Passed     uint64        // the filter said "maybe"
	Unguarded  uint64        // no filter in service yet, or it failed: let through
	FilterErrs uint64        // failed filter calls (Test in Get, Add in Added)
	CacheHits  uint64        // answered by the cache
	Loads      uint64        // calls of the loader (after singleflight)

	// MaybeNotFound counts Gets the filter let through ("maybe") that the loader answered with
	// ErrNotFound: the false positives the database paid for.
	MaybeNotFound uint64
}

// MaybeNotFoundRate is the share of the absent keys asked for that the filter let through to
// the database: MaybeNotFound / (Absent + MaybeNotFound), the false-positive rate observed on
// the traffic. It is 0 when no absent key was asked for.
func (s Stats) MaybeNotFoundRate() float64 {
	if s.Absent+s.MaybeNotFound == 0 {
		return 0
	}
	return float64(s.MaybeNotFound) / float64(s.Absent+s.MaybeNotFound)
}

// Stats returns the guard's figures. The FPP of a filter kept in Redis costs one round trip.
func (g *Guard[V]) Stats(ctx context.Context) Stats {
	g.mu.Lock()
	live, sized, inLive, p, lastErr := g.live, g.sized, g.inLive, g.p, g.lastErr
	g.mu.Unlock()
	s := Stats{
		Ready:         live != nil,
		Builds:        g.builds.Load(),
		BuildKeys:     g.buildKeys.Load(),
		BuildTime:     time.Duration(g.buildTime.Load()),
		Capacity:      sized,
		Keys:          inLive,
		LastError:     lastErr,
		Requests:      g.requests.Load(),
		Absent:        g.absent.Load(),
		Passed:        g.passed.Load(),
		Unguarded:     g.unguarded.Load(),
		FilterErrs:    g.filterErrors.Load(),
		CacheHits:     g.cacheHits.Load(),
		Loads:         g.load.Load(),
		MaybeNotFound: g.maybeNotFound.Load(),
	}
	if live == nil {
		return s
	}
	if f, ok := live.(FPPer); ok {
		if fpp, err := f.EstimatedFPP(ctx); err == nil {
			s.FPP = fpp
			return s
		}
	}
	s.FPP = estimateFPP(sized, p, inLive)
	return s
}
