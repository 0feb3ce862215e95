package redisfilter

import "context"

// Interface is what every filter kind of this package offers: code that only adds and tests keys
// (a cache guard, a de-duplicator) can take any of them, and choose module mode where HasModule
// says the server has the BF.* commands. *Filter, *CountingFilter, *ScalableFilter and
// *ModuleFilter implement it.
type Interface interface {
	Batcher
	Add(ctx context.Context, key []byte) (bool, error)
	Test(ctx context.Context, key []byte) (bool, error)
	TestMany(ctx context.Context, keys [][]byte) ([]bool, error)
}

// A Batcher adds keys in batches, reporting for each whether it was new; Load takes one.
type Batcher interface {
	AddMany(ctx context.Context, keys [][]byte) ([]bool, error)
}

var (
	_ Interface = (*Filter)(nil)
	_ Interface = (*CountingFilter)(nil)
	_ Interface = (*ScalableFilter)(nil)
	_ Interface = (*ModuleFilter)(nil)
)
