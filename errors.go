package bloom

import "errors"

// Errors returned by this package. Callers test for them with errors.Is; the error values
// themselves carry detail (which field, which offset, what was expected) through %w wrapping.
var (
	// ErrInvalidParameter reports a size, rate or count outside what a filter can be built from:
	// p not in (0, 1), k of zero, a zero or negative size, an unknown scheme.
	ErrInvalidParameter = errors.New("bloom: invalid parameter")

	// ErrTooLarge reports a filter that would need more memory than is allowed: more than
	// the decoder's limit, or more than this machine has.
	ErrTooLarge = errors.New("bloom: filter too large")

	// ErrIncompatible reports an operation on two filters that do not share their scheme,
	// number of hash functions and size (union, intersection, copying bits).
	ErrIncompatible = errors.New("bloom: incompatible filters")

	// ErrCorrupt is the category of every decoding failure caused by the bytes themselves:
	// bad magic, unknown version, checksum mismatch, truncation, impossible sizes. A filter
	// is never returned half-loaded alongside it.
	ErrCorrupt = errors.New("bloom: corrupt data")

	// ErrFull reports an insertion into a cuckoo filter that found no free slot and may not
	// grow (it does not scale, or has reached its most sub-filters); the filter is unchanged.
	ErrFull = errors.New("bloom: filter is full")

	// ErrNotPresent reports a Remove from a counting filter of a key that is definitely not in it
	// (one of its counters is zero); the filter is left unchanged.
	ErrNotPresent = errors.New("bloom: key is not in the filter")
)
