// Package hash holds the hash functions whose output reaches files or wires and for which no
// reachable, maintained Go library exists. Each is pinned by golden vectors from the reference
// implementation (see the tests), because a one-bit change would silently break every stored filter.
//
// MurmurHash64A is written here by hand: RedisBloom hashes every item with Austin Appleby's
// MurmurHash64A (twice, the second time seeded with the first result), and the Go murmur
// packages on the module proxy implement only MurmurHash3 or have been abandoned.
package hash
