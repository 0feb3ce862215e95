package guard

import (
	"context"

	"github.com/bloomd/bloom"
)

// Filter is the filter a Guard asks and feeds. Every filter of this module has this shape or is
// adapted to it: the redisfilter kinds (Filter, CountingFilter, ScalableFilter, ModuleFilter)
// satisfy it as they are, and InProcess adapts an in-process bloom.AnyFilter.
//
// Implementations must be safe for concurrent use. Test must never report false for a key that
// an Add or AddMany has returned for without error.
type Filter interface {
	Add(ctx context.Context, key []byte) (bool, error)
	Test(ctx context.Context, key []byte) (bool, error)
	AddMany(ctx context.Context, keys [][]byte) ([]bool, error)
}

// An FPPer is a Filter that can estimate its own false-positive probability from its content.
// Stats uses it when the live filter offers it, and otherwise estimates the probability from the
// keys the guard added and the size it asked for.
type FPPer interface {
	EstimatedFPP(ctx context.Context) (float64, error)
}

// InProcess adapts f, a filter in this process's memory, to Filter: its methods never fail and
// ignore the context. It also implements FPPer. f's own methods are safe for concurrent use, and
// so is the result.
func InProcess(f bloom.AnyFilter) Filter { return inProcess{f} }

type inProcess struct{ f bloom.AnyFilter }

func (l inProcess) Add(_ context.Context, key []byte) (bool, error)  { return l.f.Add(key), nil }
func (l inProcess) Test(_ context.Context, key []byte) (bool, error) { return l.f.Test(key), nil }
func (l inProcess) AddMany(_ context.Context, keys [][]byte) ([]bool, error) {
	return l.f.AddMany(nil, keys), nil
}
func (l inProcess) EstimatedFPP(context.Context) (float64, error) { return l.f.EstimatedFPP(), nil }
