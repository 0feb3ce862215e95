package redisfilter

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ModuleOptions configure a ModuleFilter. A nil *ModuleOptions means the defaults.
type ModuleOptions struct {
	// Expansion is the growth factor of each new sub-filter (BF.RESERVE's EXPANSION); zero means
	// RedisBloom's default, 2.
	Expansion int

	// NonScaling makes a filter that never grows: an Add beyond its capacity fails with ErrFull.
	NonScaling bool

	// BatchKeys is the number of items per BF.INSERT or BF.MEXISTS command in AddMany and
	// TestMany; zero means 1000.
	BatchKeys int

	// PipelineKeys is the number of items AddMany and TestMany send in one round trip; zero means
	// 65536.
	PipelineKeys int
}

// ModuleFilter is a filter kept by the server itself through the BF.* commands: RedisBloom's
// scalable Bloom filter, or bloomd, which speaks the same commands. The server owns the bits, the
// hashing (RedisBloom's MurmurHash64A scheme, bloom.RedisBloom64) and the growth; each call is one
// command and one round trip, with no script.
//
// Parameters: NewModule creates the filter with BF.RESERVE, or checks an existing one's capacity
// and expansion with BF.INFO (the error rate is not reported by BF.INFO, so it cannot be checked).
// The BF.* commands take no parameters to check on each call, so module mode does the next best
// thing: every add is a BF.INSERT that carries the handle's CAPACITY, ERROR and EXPANSION, so a
// filter that was deleted is recreated with this handle's parameters rather than RedisBloom's
// defaults (capacity 100, error 0.01), which BF.ADD would use.
//
// A ModuleFilter is safe for concurrent use by multiple goroutines.
type ModuleFilter struct {
	client   redis.UniversalClient
	name     string
	capacity uint64
	p        float64
	opt      ModuleOptions
	create   []any // BF.INSERT's creation options
}

// HasModule reports whether the server answers the BF.* commands (RedisBloom is loaded, or the
// server is bloomd). It probes with one BF.EXISTS of a key that need not exist.
func HasModule(ctx context.Context, c redis.UniversalClient) (bool, error) {
	if err := checkClient(c); err != nil {
		return false, err
	}
	err := c.Do(ctx, "BF.EXISTS", "redisfilter:probe", "x").Err()
	switch {
	case err == nil:
		return true, nil
	case isUnknownCommand(err):
		return false, nil
	case redis.HasErrorPrefix(err, "WRONGTYPE"):
		return true, nil // BF.EXISTS exists; the probe key merely holds something else
	}
	return false, fmt.Errorf("redisfilter: probing for BF.* commands: %w", err)
}

func isUnknownCommand(err error) bool {
	return redis.HasErrorPrefix(err, "ERR unknown command") || strings.Contains(strings.ToLower(err.Error()), "unknown command")
}

// NewModule returns a handle to the BF.* filter called name, with the given initial capacity and
// error rate, creating it with BF.RESERVE if it does not exist. If it exists with another
// capacity or expansion (as BF.INFO reports them), NewModule fails with ErrConfigMismatch. On a
// server without the BF.* commands it fails with ErrNoModule.
func NewModule(ctx context.Context, c redis.UniversalClient, name string, capacity uint64, p float64, opt *ModuleOptions) (*ModuleFilter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	var o ModuleOptions
	if opt != nil {
		o = *opt
	}
	switch {
	case name == "":
		return nil, fmt.Errorf("%w: empty filter name", ErrInvalid)
	case capacity < 1 || capacity > math.MaxInt64:
		return nil, fmt.Errorf("%w: capacity %d is not in [1, 2^63)", ErrInvalid, capacity)
	case !(p > 0 && p < 1):
		return nil, fmt.Errorf("%w: error rate %g is not in (0, 1)", ErrInvalid, p)
	case o.Expansion < 0 || o.BatchKeys < 0 || o.PipelineKeys < 0:
		return nil, fmt.Errorf("%w: negative Expansion, BatchKeys or PipelineKeys", ErrInvalid)
	case o.NonScaling && o.Expansion != 0:
		return nil, fmt.Errorf("%w: a non-scaling filter has no expansion", ErrInvalid)
	}
	if o.Expansion == 0 && !o.NonScaling {
		o.Expansion = 2
	}
	if o.BatchKeys == 0 {
		o.BatchKeys = 1000
	}
	if o.PipelineKeys == 0 {
		o.PipelineKeys = 65536
	}
	f := &ModuleFilter{client: c, name: name, capacity: capacity, p: p, opt: o}
	f.create = []any{"CAPACITY", capacity, "ERROR", formatRate(p)}
	reserve := []any{"BF.RESERVE", name, formatRate(p), capacity}
	if o.NonScaling {
		f.create = append(f.create, "NONSCALING")
		reserve = append(reserve, "NONSCALING")
	} else {
		f.create = append(f.create, "EXPANSION", o.Expansion)
		reserve = append(reserve, "EXPANSION", o.Expansion)
	}
	err := c.Do(ctx, reserve...).Err()
	switch {
	case err == nil:
		return f, nil
	case isUnknownCommand(err):
		return nil, fmt.Errorf("%w: new %q: %w", ErrNoModule, name, err)
	case !strings.Contains(err.Error(), "item exists"):
		return nil, opErr("new", name, err)
	}
	if err := f.checkInfo(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// checkInfo compares an existing filter's BF.INFO with the handle's parameters: the capacity of a
// chain of f sub-filters grown by a factor e is C·(1 + e + … + e^(f-1)).
func (f *ModuleFilter) checkInfo(ctx context.Context) error {
	v, err := f.client.Do(ctx, "BF.INFO", f.name).Result()
	if err != nil {
		return opErr("new", f.name, err)
	}
	info, err := infoFields(v)
	if err != nil {
		return opErr("new", f.name, err)
	}
	capacity, filters := info["Capacity"], info["Number of filters"]
	expansion, scaling := info["Expansion rate"]
	var diffs []string
	if filters < 1 {
		return fmt.Errorf("redisfilter: new %q: BF.INFO reports %d sub-filters", f.name, filters)
	}
	if f.opt.NonScaling != !scaling {
		diffs = append(diffs, fmt.Sprintf("scaling: stored %v, this handle %v", scaling, !f.opt.NonScaling))
	} else if scaling && expansion != int64(f.opt.Expansion) {
		diffs = append(diffs, fmt.Sprintf("expansion: stored %d, this handle %d", expansion, f.opt.Expansion))
	}
	want, term := uint64(0), f.capacity
	g := uint64(max(expansion, 1))
	for range filters {
		want += term
		term *= g
	}
	if uint64(capacity) != want {
		diffs = append(diffs, fmt.Sprintf("capacity: stored %d over %d sub-filters, where this handle's initial capacity %d gives %d",
			capacity, filters, f.capacity, want))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: new %q: %s", ErrConfigMismatch, f.name, strings.Join(diffs, "; "))
	}
	return nil
}

// infoFields decodes a full BF.INFO reply, a flat array (RESP2) or a map (RESP3), into integers;
// a nil value (the expansion of a non-scaling filter) is left out.
func infoFields(v any) (map[string]int64, error) {
	out := map[string]int64{}
	put := func(k, val any) error {
		name, ok := k.(string)
		if !ok {
			return fmt.Errorf("unexpected BF.INFO label %v", k)
		}
		switch x := val.(type) {
		case nil:
		case int64:
			out[name] = x
		default:
			return fmt.Errorf("unexpected BF.INFO value %v for %s", val, name)
		}
		return nil
	}
	switch r := v.(type) {
	case []any:
		if len(r)%2 != 0 {
			return nil, fmt.Errorf("BF.INFO reply of odd length %d", len(r))
		}
		for i := 0; i < len(r); i += 2 {
			if err := put(r[i], r[i+1]); err != nil {
				return nil, err
			}
		}
	case map[any]any:
		for k, val := range r {
			if err := put(k, val); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("unexpected BF.INFO reply %T", v)
	}
	return out, nil
}

// Add adds key with BF.INSERT and reports whether it was new. One round trip.
func (f *ModuleFilter) Add(ctx context.Context, key []byte) (bool, error) {
	r, err := f.AddMany(ctx, [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// Test reports whether key may be in the filter, with BF.EXISTS. One round trip.
func (f *ModuleFilter) Test(ctx context.Context, key []byte) (bool, error) {
	v, err := f.client.Do(ctx, "BF.EXISTS", f.name, key).Result()
	if err != nil {
		return false, opErr("test", f.name, err)
	}
	b, err := boolReply(v)
	if err != nil {
		return false, opErr("test", f.name, err)
	}
	return b, nil
}

// AddMany adds keys with BF.INSERT commands of BatchKeys items, one pipelined round trip per
// PipelineKeys keys. A non-scaling filter that fills up fails with ErrFull; the items before the
// one that did not fit were added.
func (f *ModuleFilter) AddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return f.batch(ctx, "add", keys, func(chunk [][]byte) []any {
		args := append([]any{"BF.INSERT", f.name}, f.create...)
		args = append(args, "ITEMS")
		for _, k := range chunk {
			args = append(args, k)
		}
		return args
	})
}

// TestMany tests keys with BF.MEXISTS commands of BatchKeys items, one pipelined round trip per
// PipelineKeys keys.
func (f *ModuleFilter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return f.batch(ctx, "test", keys, func(chunk [][]byte) []any {
		args := []any{"BF.MEXISTS", f.name}
		for _, k := range chunk {
			args = append(args, k)
		}
		return args
	})
}

func (f *ModuleFilter) batch(ctx context.Context, op string, keys [][]byte, command func([][]byte) []any) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for start := 0; start < len(keys); start += f.opt.PipelineKeys {
		end := min(start+f.opt.PipelineKeys, len(keys))
		var cmds []*redis.Cmd
		if end-start <= f.opt.BatchKeys { // one command: no pipeline needed
			cmds = append(cmds, f.client.Do(ctx, command(keys[start:end])...))
		} else {
			pipe := f.client.Pipeline()
			for s := start; s < end; s += f.opt.BatchKeys {
				cmds = append(cmds, pipe.Do(ctx, command(keys[s:min(s+f.opt.BatchKeys, end)])...))
			}
			_, _ = pipe.Exec(ctx)
		}
		for _, cmd := range cmds {
			v, err := cmd.Result()
			if err != nil {
				return nil, f.moduleErr(op, err)
			}
			arr, ok := v.([]any)
			if !ok {
				return nil, opErr(op, f.name, fmt.Errorf("unexpected reply %T to %s", v, cmd.Name()))
			}
			for _, x := range arr {
				if e, ok := x.(error); ok {
					return nil, f.moduleErr(op, e)
				}
				b, err := boolReply(x)
				if err != nil {
					return nil, opErr(op, f.name, err)
				}
				out = append(out, b)
			}
		}
	}
	if len(out) != len(keys) {
		return nil, opErr(op, f.name, fmt.Errorf("%d answers for %d keys", len(out), len(keys)))
	}
	return out, nil
}

func (f *ModuleFilter) moduleErr(op string, err error) error {
	switch {
	case strings.Contains(err.Error(), "non scaling filter is full"):
		return fmt.Errorf("%w: %s %q: %w", ErrFull, op, f.name, err)
	case isUnknownCommand(err):
		return fmt.Errorf("%w: %s %q: %w", ErrNoModule, op, f.name, err)
	}
	return opErr(op, f.name, err)
}

// boolReply decodes a BF.* per-item answer: an integer 1/0 under RESP2, a boolean under RESP3.
func boolReply(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case int64:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	}
	return false, fmt.Errorf("unexpected BF.* answer %v (%T)", v, v)
}

// Count returns the number of items added (BF.CARD). One round trip.
func (f *ModuleFilter) Count(ctx context.Context) (uint64, error) {
	n, err := f.client.Do(ctx, "BF.CARD", f.name).Int64()
	if err != nil {
		return 0, opErr("count", f.name, err)
	}
	return uint64(n), nil
}

// Name returns the filter's name (its one Redis key).
func (f *ModuleFilter) Name() string { return f.name }

// Delete removes the filter's key.
func (f *ModuleFilter) Delete(ctx context.Context) error {
	if err := f.client.Del(ctx, f.name).Err(); err != nil {
		return opErr("delete", f.name, err)
	}
	return nil
}
