package redisfilter

import "errors"

// Errors returned by this package, tested with errors.Is. Returned errors wrap one of these (or
// the client's own error: a network failure, a timeout, the context's error) and name the
// operation and the filter.
var (
	// ErrConfigMismatch reports a filter whose stored parameters (layout, kind, scheme, size,
	// number of hash functions, expected items, false-positive rate, format version, part layout)
	// differ from this handle's. The message says which fields differ and how. Nothing was
	// written by the call that returned it.
	ErrConfigMismatch = errors.New("redisfilter: config mismatch")

	// ErrNotFound reports an Open of a filter that does not exist in Redis.
	ErrNotFound = errors.New("redisfilter: filter not found")

	// ErrWrongType reports a key of the filter that holds another kind of Redis value (Redis's
	// WRONGTYPE). Nothing was written by the call that returned it.
	ErrWrongType = errors.New("redisfilter: key holds the wrong kind of value")

	// ErrNotPresent reports a Remove from a counting filter of a key that is definitely not in
	// it. The filter is unchanged.
	ErrNotPresent = errors.New("redisfilter: key not present")

	// ErrFull reports an Add that a filter cannot take: a scalable filter whose next link would
	// exceed the largest Redis string, or a non-scaling RedisBloom filter at capacity.
	ErrFull = errors.New("redisfilter: filter full")

	// ErrInvalid reports an argument a filter cannot be built from or used with: a bad name,
	// sizes out of range, an unsupported combination of options. It wraps bloom's
	// ErrInvalidParameter where the core library rejected the sizes.
	ErrInvalid = errors.New("redisfilter: invalid argument")

	// ErrNoModule reports module mode on a server without the BF.* commands (neither RedisBloom
	// nor bloomd).
	ErrNoModule = errors.New("redisfilter: server has no BF.* commands")
)
