package redisfilter

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// MaxCounters is the most counters a CountingFilter holds: 4 bits each in one Redis string.
const MaxCounters = MaxPartBits / 4

// CountingFilter is a counting Bloom filter kept in Redis: m 4-bit saturating counters in one
// Redis string ("{name}:counters", read and written with BITFIELD u4 OVERFLOW SAT) and the
// parameter hash "{name}:meta". Add increments a key's k counters, Remove decrements them, Test
// checks that all are nonzero. A counter that reaches 15 stays at 15 forever, because its true
// count is no longer known; decrementing it could make another key's counter reach 0 and turn that
// key into a false negative. Like Filter, every call is one round trip and one atomic script call
// that checks the stored parameters.
//
// Counting filters are not split: they hold at most MaxCounters counters (about 110 million keys
// at 1%). A CountingFilter is safe for concurrent use by multiple goroutines.
type CountingFilter struct {
	f *Filter
}

// NewCounting returns a handle to the counting filter called name, with m and k chosen by
// opt.Scheme's sizing rule for n keys at false-positive rate p (Guava's by default), creating it
// if it does not exist; if it exists with other parameters, NewCounting fails with
// ErrConfigMismatch. opt.PartBits is ignored.
func NewCounting(ctx context.Context, c redis.UniversalClient, name string, n uint64, p float64, opt *Options) (*CountingFilter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	m, k, err := size(o.Scheme, n, p)
	if err != nil {
		return nil, err
	}
	if m > MaxCounters {
		return nil, fmt.Errorf("%w: %d keys at p=%g need %d counters; a counting filter holds at most %d", ErrInvalid, n, p, m, uint64(MaxCounters))
	}
	f := newNative(c, name, o, "counting", m, k, n, p, MaxPartBits)
	if err := f.init(ctx, "new"); err != nil {
		return nil, err
	}
	return &CountingFilter{f}, nil
}

// OpenCounting returns a handle to the existing counting filter called name, with its stored
// parameters. It fails with ErrNotFound if there is none.
func OpenCounting(ctx context.Context, c redis.UniversalClient, name string, opt *Options) (*CountingFilter, error) {
	f, err := openNative(ctx, c, name, opt, "counting")
	if err != nil {
		return nil, err
	}
	if f.m > MaxCounters {
		return nil, fmt.Errorf("%w: counting filter %q claims %d counters (at most %d)", ErrConfigMismatch, name, f.m, uint64(MaxCounters))
	}
	return &CountingFilter{f}, nil
}

// Add increments key's counters and reports whether it was new: true when one of them was zero.
func (c *CountingFilter) Add(ctx context.Context, key []byte) (bool, error) { return c.f.Add(ctx, key) }

// Test reports whether key may be in the filter: false means definitely not.
func (c *CountingFilter) Test(ctx context.Context, key []byte) (bool, error) {
	return c.f.Test(ctx, key)
}

// AddMany adds keys in one pipelined round trip per PipelineKeys keys; see Filter.AddMany.
func (c *CountingFilter) AddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return c.f.AddMany(ctx, keys)
}

// TestMany tests keys in one pipelined round trip per PipelineKeys keys.
func (c *CountingFilter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return c.f.TestMany(ctx, keys)
}

// Remove decrements key's counters (those not saturated at 15), undoing one Add of it. If key is
// definitely not in the filter (one of its counters is below the number of times the key uses
// it), Remove fails with ErrNotPresent and changes nothing. The check and the decrement are one
// atomic script call. Removing a key that was never added but tests present (a false positive)
// cannot be detected, and takes counts that belong to other keys: remove only keys you added.
func (c *CountingFilter) Remove(ctx context.Context, key []byte) error {
	r, err := c.f.do(ctx, "remove", "r", [][]byte{key})
	if err != nil {
		return err
	}
	if !r[0] {
		return fmt.Errorf("%w: remove from %q: the key is not in the filter", ErrNotPresent, c.f.name)
	}
	return nil
}

// Name returns the filter's name.
func (c *CountingFilter) Name() string { return c.f.name }

// M returns the number of counters.
func (c *CountingFilter) M() uint64 { return c.f.m }

// K returns the number of counters per key.
func (c *CountingFilter) K() int { return c.f.k }

// Keys returns the filter's Redis keys: the parameter hash and the counters.
func (c *CountingFilter) Keys() []string { return c.f.Keys() }

// Delete removes the filter's keys.
func (c *CountingFilter) Delete(ctx context.Context) error { return c.f.Delete(ctx) }
