package guard

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/bloomd/bloom"
)

// minCapacity is the smallest filter a build sizes from the source's count.
const minCapacity = 1024

// Preload builds the guard's first filter from the source and puts it in service, which makes
// the guard ready (see Ready). It streams the keys in batches, calling Config.Progress after each
// and logging a line every Config.LogEvery. If the guard already has a filter, Preload rebuilds
// it, as Rebuild does. On error the guard stays as it was: not ready, or serving its old filter.
func (g *Guard[V]) Preload(ctx context.Context) error { return g.build(ctx) }

// Rebuild builds a new filter from the source and swaps it in place of the one in service, in
// one atomic step: keys deleted from the database stop passing the filter, and a filter grown past
// its capacity is resized. Until the swap, Get keeps using the old filter; keys reported with
// Added during the build (and within Config.InsertWindow before it) are added to the new filter
// before the swap, so none is answered absent after it. Builds are serialized: a Rebuild called
// while another build runs waits for it and then builds again. On error, the old filter stays in
// service.
func (g *Guard[V]) Rebuild(ctx context.Context) error { return g.build(ctx) }

// Run preloads the guard and then rebuilds it every Config.RebuildEvery until ctx ends, and
// returns ctx's error. A failed preload is retried after a pause (one second, doubling up to
// RebuildEvery or a minute); a failed rebuild is logged and tried again at the next period.
func (g *Guard[V]) Run(ctx context.Context) error {
	pause := time.Second
	for {
		err := g.build(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		limit := g.cfg.RebuildEvery
		if limit == 0 || limit > time.Minute {
			limit = time.Minute
		}
		pause = min(2*pause, limit)
	}
	if g.cfg.RebuildEvery == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	t := time.NewTicker(g.cfg.RebuildEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			g.build(ctx) // logged and kept in Stats.LastError; the old filter stays
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *Guard[V]) build(ctx context.Context) (err error) {
	g.buildMu.Lock()
	defer g.buildMu.Unlock()

	start := time.Now()
	g.mu.Lock()
	rebuild := g.live != nil
	g.building = true
	g.pending = g.pending[:0]
	for _, r := range g.recent {
		if start.Sub(r.at) <= g.cfg.InsertWindow {
			g.pending = append(g.pending, []byte(r.key))
		}
	}
	g.mu.Unlock()
	var next Filter
	defer func() {
		g.mu.Lock()
		if err != nil {
			g.building = false
			g.pending = nil
			g.lastErr = err
		}
		g.mu.Unlock()
		if err != nil {
			if next != nil {
				if derr := g.cfg.Store.Discard(context.WithoutCancel(ctx), next); derr != nil {
					g.log.Warn("guard: discarding the unfinished filter", "err", derr)
				}
			}
			g.log.Error("guard: build failed", "rebuild", rebuild, "err", err)
		}
	}()

	total, err := g.cfg.Source.Count(ctx)
	if err != nil {
		return err
	}
	n := g.cfg.Capacity
	if n == 0 {
		h := float64(total) * g.cfg.Headroom
		if h >= math.MaxUint64/2 {
			return fmt.Errorf("%w: %d keys with headroom %g is too many", ErrInvalid, total, g.cfg.Headroom)
		}
		n = max(uint64(math.Ceil(h)), minCapacity)
	}
	g.log.Info("guard: build started", "rebuild", rebuild, "rows", total, "capacity", n, "fpp", g.cfg.FPP)
	next, err = g.cfg.Store.Build(ctx, n, g.cfg.FPP)
	if err != nil {
		return err
	}

	var (
		keys    uint64
		batch   = make([][]byte, 0, g.cfg.BatchSize)
		arena   []byte
		lastLog = start
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if _, err := next.AddMany(ctx, batch); err != nil {
			return fmt.Errorf("guard: adding keys to the new filter: %w", err)
		}
		keys += uint64(len(batch))
		batch, arena = batch[:0], arena[:0]
		p := Progress{Rebuild: rebuild, Keys: keys, Total: total, Elapsed: time.Since(start)}
		if g.cfg.Progress != nil {
			g.cfg.Progress(p)
		}
		if now := time.Now(); now.Sub(lastLog) >= g.cfg.LogEvery {
			lastLog = now
			g.log.Info("guard: building", "rebuild", rebuild, "keys", keys, "rows", total, "elapsed", p.Elapsed.Round(time.Millisecond))
		}
		return nil
	}
	err = g.cfg.Source.Keys(ctx, func(key []byte) error {
		// Copy into one arena per batch: the source may reuse key's memory.
		if len(arena)+len(key) > cap(arena) {
			arena = make([]byte, 0, max(64<<10, len(key)))
		}
		arena = append(arena, key...)
		batch = append(batch, arena[len(arena)-len(key):len(arena):len(arena)])
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}

	// Replay the keys Added reported during the build; the last (usually empty) round runs with
	// g.mu held, so no Added slips between it and the swap.
	replayed := 0
	for {
		g.mu.Lock()
		todo := g.pending
		g.pending = nil
		if len(todo) == 0 {
			break // g.mu stays held for the swap
		}
		g.mu.Unlock()
		if _, err := next.AddMany(ctx, todo); err != nil {
			g.mu.Lock()
			g.pending = append(g.pending, todo...)
			g.mu.Unlock()
			return fmt.Errorf("guard: adding keys reported during the build: %w", err)
		}
		replayed += len(todo)
	}
	live, err := g.cfg.Store.Swap(ctx, g.live, next)
	if err != nil {
		g.mu.Unlock()
		return err
	}
	next = nil // in service: not to be discarded
	g.live = live
	g.building = false
	g.sized, g.p = n, g.cfg.FPP
	g.inLive = keys + uint64(replayed)
	g.lastErr = nil
	g.readyOnce.Do(func() { close(g.ready) })
	g.mu.Unlock()

	elapsed := time.Since(start)
	g.builds.Add(1)
	g.buildKeys.Store(keys)
	g.buildTime.Store(int64(elapsed))
	g.log.Info("guard: build done; filter in service", "rebuild", rebuild, "keys", keys, "replayed", replayed, "capacity", n, "elapsed", elapsed.Round(time.Millisecond))
	return nil
}

// estimateFPP estimates the false-positive probability of a filter sized for n keys at rate p by
// Guava's rule, holding keys keys.
func estimateFPP(n uint64, p float64, keys uint64) float64 {
	if n == 0 {
		return 0
	}
	m, k, err := bloom.GuavaSize(n, p)
	if err != nil {
		return 0
	}
	return bloom.FalsePositiveRate(m, k, keys)
}
