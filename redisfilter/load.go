package redisfilter

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// LoadOptions configure Load. A nil *LoadOptions means the defaults.
type LoadOptions struct {
	// BatchSize is the number of keys per AddMany call (one round trip each); zero means 1000.
	BatchSize int

	// Rate is the most keys per second Load sends, to spare a server that is also serving
	// traffic; zero means no limit.
	Rate float64

	// Progress, if set, is called after every batch with the totals so far.
	Progress func(LoadStats)
}

// LoadStats are the totals of a Load.
type LoadStats struct {
	Keys    uint64        // keys sent
	Added   uint64        // keys reported new
	Batches uint64        // AddMany calls (round trips)
	Elapsed time.Duration // since Load started
}

// Load adds every key of keys to dst in batches, for preloading a filter at start-up from a
// database cursor, a file or any other iterator. Keys are copied as they arrive, so the iterator
// may reuse its buffer. Load stops at the first error (from dst or the context) and returns it
// with the totals of the batches that completed; keys of those batches are in the filter, and
// keys of the failed batch may be. Loading again from the start is harmless: adds are idempotent.
func Load(ctx context.Context, dst Batcher, keys iter.Seq[[]byte], opt *LoadOptions) (LoadStats, error) {
	var o LoadOptions
	if opt != nil {
		o = *opt
	}
	if o.BatchSize == 0 {
		o.BatchSize = 1000
	}
	if o.BatchSize < 0 || o.Rate < 0 {
		return LoadStats{}, fmt.Errorf("%w: negative BatchSize or Rate", ErrInvalid)
	}
	start := time.Now()
	var st LoadStats
	batch := make([][]byte, 0, o.BatchSize)
	var arena []byte

	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if o.Rate > 0 {
			// Pace by the keys sent so far: batch i+1 may start at (keys sent)/rate.
			due := start.Add(time.Duration(float64(st.Keys) / o.Rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return fmt.Errorf("redisfilter: load: %w", ctx.Err())
				case <-t.C:
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("redisfilter: load: %w", err)
		}
		added, err := dst.AddMany(ctx, batch)
		if err != nil {
			return err
		}
		st.Keys += uint64(len(batch))
		st.Batches++
		for _, a := range added {
			if a {
				st.Added++
			}
		}
		st.Elapsed = time.Since(start)
		if o.Progress != nil {
			o.Progress(st)
		}
		batch, arena = batch[:0], arena[:0]
		return nil
	}

	for key := range keys {
		// Copy into an arena reused by every batch. When an append moves the arena, the keys
		// already taken keep pointing into the old copy, which stays valid.
		arena = append(arena, key...)
		batch = append(batch, arena[len(arena)-len(key):len(arena):len(arena)])
		if len(batch) == o.BatchSize {
			if err := flush(); err != nil {
				st.Elapsed = time.Since(start)
				return st, err
			}
		}
	}
	if err := flush(); err != nil {
		st.Elapsed = time.Since(start)
		return st, err
	}
	st.Elapsed = time.Since(start)
	return st, nil
}
