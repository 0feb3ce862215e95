// Package redisfilter keeps Bloom filters in Redis, so that every instance of a service shares
// one filter: the classic use is a cache-penetration guard, which answers "definitely not in the
// database" for keys that were never written, before the cache and the database are asked.
//
// Filters work over any go-redis v9 client (redis.UniversalClient: a single server, Sentinel or
// Cluster); authentication and TLS come from the client's own options. Every kind works against
// Redis and against bloomd, which runs the same Lua scripts over the same bitmaps and hashes;
// the package's tests run against both. Every call takes a context. Contexts bound calls only
// when the client has ContextTimeoutEnabled set; otherwise the client's read and write timeouts
// do.
//
// # Kinds and layouts
//
//   - Filter (New, Open): a classic filter in plain Redis bitmaps, no module needed, hashed as the
//     core library hashes (bloom.Guava64 by default). The keys are "{name}:meta", a hash whose
//     field "params" holds the parameter line, and "{name}:bits". The bytes of "{name}:bits" are
//     exactly the bit array of a bloom.Filter with the same parameters (Snapshot returns one).
//   - Filter (NewRedisson, OpenRedisson): the layout of Redisson's RBloomFilter with StringCodec:
//     the bitmap at "name", the config hash at "{name}:config" with the fields size,
//     hashIterations, expectedInsertions and falseProbability as Redisson writes them, Redisson's
//     HighwayHash scheme (bloom.Redisson) and its SETBIT bit order. A Java service using Redisson
//     and a Go service share one filter.
//   - Filter (NewPlain, OpenPlain): the plain layout, one Redis string of bits at a key of the
//     caller's choosing and nothing beside it, read and written with parameters the caller gives
//     (PlainParams: m, k, scheme, bit order). It is the layout of Java services that copy the
//     Spring BloomFilterHelper and write with RedisTemplate.setBit: SpringHelper gives its
//     parameters from (n, p). Nothing records the parameters, so nothing can check them beyond
//     the string's type and length: every program using the key must agree on them.
//   - CountingFilter (NewCounting): 4-bit saturating counters (BITFIELD u4 OVERFLOW SAT) with
//     Remove.
//   - ScalableFilter (NewScalable): a chain of bitmaps that grows as keys arrive, with the
//     growth factor (2) and tightening ratio (0.5) of bloom.Scalable and RedisBloom.
//   - ModuleFilter (NewModule): the server's own BF.* commands, where the server runs RedisBloom
//     or is bloomd (HasModule tells).
//
// All of them implement Interface (Add, Test, AddMany, TestMany).
//
// # One round trip per call
//
// Add and Test are one EVALSHA of a Lua script that checks the stored parameters and sets or
// reads the key's k bits in the same atomic call: never k separate SETBIT round trips. Positions
// are computed in Go (bloom.Scheme.Locations), so the scripts only set and read bits. AddMany and
// TestMany send a whole batch as one pipeline of script calls (ScriptKeys keys per call,
// PipelineKeys keys per round trip). When the server has lost the script (restart, failover,
// SCRIPT FLUSH) the call is sent once more with EVAL, which also reloads it. Load preloads a
// filter from any iterator, in batches, with a progress callback and a rate limit.
//
// # Parameters are checked on every call
//
// The parameters (layout version, kind, scheme, m, k, n, p, and the part layout) are stored beside
// the bits as one line, for example
//
//	redisfilter/1 kind=classic scheme=guava64 m=9600 k=7 n=1000 p=0.01 parts=1
//
// and every script call compares it with the handle's own before touching a bit. Two services
// built with different settings therefore get ErrConfigMismatch, which names each differing field,
// instead of silently different answers. The Redisson layout checks Redisson's four config fields
// the same way. The plain layout has nothing stored to compare: each call checks only that the
// string is no longer than the handle's m allows. Module mode cannot check per call (see
// ModuleFilter).
//
// # Nothing half-written
//
// A Test never writes. An Add on a missing filter writes the parameters before its first bit, in
// the same script, so bits never exist without parameters; bits found without parameters are
// refused as a mismatch. Each script checks everything (parameters, the data key's type) before
// its first write, because Redis keeps the writes of a script that fails midway; so a call that
// returns ErrConfigMismatch, ErrWrongType or ErrNotPresent has changed nothing. A call that fails
// in transit (timeout, lost connection, canceled context) may or may not have run, but each script
// runs entirely or not at all, and adding is idempotent: calling Add again is always safe, and a
// key whose Add returned without error tests present from then on, on that server. (Only Add's
// "new" answer can suffer: if the client retries a call that had run, the retry reports the key
// as not new.) (Redis
// replicates asynchronously: a failover can lose recent writes, and with them recent adds, unless
// the application uses WAIT.)
//
// # Filters larger than one Redis string
//
// A Redis string holds at most 2^32 bits (512 MB). A native Filter larger than Options.PartBits
// (2^32 by default) is split into parts of PartBits bits: part i has its own keys "{name:i}:meta"
// and "{name:i}:bits", and its own copy of the parameter line (which also names the part). The
// hash tags differ, so Redis Cluster spreads the parts over its nodes, and each key is routed by
// its own slot; a script may only touch keys of one slot, so each part is checked and written by
// its own script call. An Add computes the key's positions, groups them by part, and sends one
// call per part that holds some of them, all in one pipeline (the client sends them to the nodes
// in parallel). The atomicity caveat: each part's call is atomic, but the calls of one Add are not
// atomic together. A concurrent Test may see a key in some parts and not yet in others and answer
// "absent" while the Add is in flight (as it would a moment earlier); an Add that fails in
// transit may have set the bits in some parts only, so the key may test absent until the Add is
// retried; an Add that returns without error has set every bit. Counting and scalable filters are
// not split (their atomic check-then-write cannot span slots): a counting filter holds at most
// MaxCounters counters, and each link of a scalable chain at most PartBits bits.
//
// # Concurrency
//
// Handles hold parameters and a client, never bits; they are safe for concurrent use by multiple
// goroutines, and any number of handles in any number of processes may share one filter.
//
// # Examples
//
// Example_cachePenetrationGuard keeps the filter of existing user ids in Redis in front of a
// database; ExampleNewPlain shares a key with Java services that use the Spring
// BloomFilterHelper. Both need a Redis server on localhost:6379, so go test compiles them without
// running them. The ExampleSpringHelper examples run: they show the helper's sizes and how each
// Java funnel's keys are written from Go.
package redisfilter
