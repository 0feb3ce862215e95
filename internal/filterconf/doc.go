// Package filterconf holds bloomd's settings for filters made without explicit parameters
// (BF.ADD, BF.MADD and BF.INSERT on a missing key, BF.RESERVE without EXPANSION, CF.ADD,
// CF.ADDNX and CF.INSERT on a missing key, CF.RESERVE without its options) and the per-filter
// size limits.
//
// The settings carry Redis 8's names and ranges (bf-error-rate, bf-initial-size,
// bf-expansion-factor, cf-initial-size, cf-bucket-size, cf-max-iterations, cf-expansion-factor,
// cf-max-expansions), and a value out of range is refused with Redis 8's words, so that a
// redis.conf written for Redis 8 means the same to bloomd. Their defaults are RedisBloom's
// built-in values, which are also what RedisBloom 2.6 uses.
//
// Two settings are bloomd's own: bf-max-filter-bytes and cf-max-filter-bytes, the most bytes one
// Bloom or one cuckoo filter may hold (0, the default, for no limit). A filter that would pass
// its limit is not created, and a scalable filter that would pass it by growing refuses the add
// that needed the growth with a *SizeError; what it holds stays.
//
// A Settings value is plain data; Live publishes the current one to many goroutines at once.
package filterconf
