package redisbloom

import (
	"errors"

	"github.com/bloomd/bloom"
)

// Errors returned by this package, tested with errors.Is. Each names one RedisBloom reply, so a
// server can answer exactly as RedisBloom 2.6 does (see the table in the package documentation);
// the errors returned carry detail through %w wrapping.
var (
	// ErrFull reports an Add of a new item to a non-scaling chain whose only sub-filter holds
	// its capacity. RedisBloom answers "ERR non scaling filter is full".
	ErrFull = errors.New("redisbloom: non scaling filter is full")

	// ErrCannotGrow reports an Add that needed a new sub-filter which cannot be made: its
	// capacity overflows 64 bits, its error rate has underflowed to 0, the expansion is 0, the
	// chain has MaxFilters sub-filters, or (also wrapping bloom.ErrTooLarge) it does not fit in
	// memory. RedisBloom answers "ERR problem inserting into filter". The chain is unchanged.
	ErrCannotGrow = errors.New("redisbloom: cannot add a sub-filter")

	// ErrBadData reports a BF.LOADCHUNK header that is malformed or describes an impossible
	// or unsupported chain, or a chunk whose iterator is not positive or is smaller than its
	// length. RedisBloom answers "ERR received bad data". It matches bloom.ErrCorrupt.
	ErrBadData error = corruptError("redisbloom: received bad data")

	// ErrNoLink reports a chunk whose start offset lies outside every sub-filter.
	// RedisBloom answers "ERR invalid offset - no link found". It matches bloom.ErrCorrupt.
	ErrNoLink error = corruptError("redisbloom: invalid offset - no link found")

	// ErrChunkTooBig reports a chunk that runs past the end of the sub-filter it starts in.
	// RedisBloom answers "ERR invalid chunk - Too big for current filter". It matches
	// bloom.ErrCorrupt.
	ErrChunkTooBig error = corruptError("redisbloom: invalid chunk - too big for current filter")
)

// corruptError is a sentinel that also matches bloom.ErrCorrupt, the module-wide category of
// damaged input, without repeating that error's text in every message.
type corruptError string

func (e corruptError) Error() string { return string(e) }

func (e corruptError) Is(target error) bool { return target == bloom.ErrCorrupt }
