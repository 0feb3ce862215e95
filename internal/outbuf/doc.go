// Package outbuf is client-output-buffer-limit as Redis 7.0.15 defines it: how much output a
// client may leave unread before the server closes it, so that a subscriber, a MONITOR client or
// a replica that stops reading cannot take the server's memory.
//
// The setting has a limit per class of client: normal, replica (also named slave) and pubsub,
// each a hard limit, a soft limit and the soft limit's seconds, with Redis's defaults (normal
// 0 0 0, replica 256mb 64mb 60, pubsub 32mb 8mb 60) and syntax. Limits.Set reads a value as
// CONFIG SET and a config file take it (groups of four words, sizes as Redis's memtoull reads
// them, classes not named unchanged, all or nothing, with Redis's error texts); String is
// CONFIG GET's form and Lines CONFIG REWRITE's. Limit.Over decides as Redis's
// checkClientOutputBufferLimits does: a client at or over the hard limit is closed at once;
// one at or over the soft limit is closed once it has stayed there for more than the soft
// seconds. The server (internal/server, outbuf.go) measures each connection's unwritten output
// and applies the normal and pubsub classes in every I/O mode; internal/repl applies the
// replica class to the stream waiting for each replica, its hard limit raised to
// repl-backlog-size when smaller, as in Redis.
//
// As in Redis, a MONITOR client is of the normal class (CLIENT LIST TYPE normal lists it) and
// a client is of the pubsub class while it is subscribed to something. A disconnection is
// logged with Redis's line ("Client <CLIENT LIST line> closed for overcoming of output buffer
// limits.") and counted in INFO's client_output_buffer_limit_disconnections (Redis 7.4's
// name; 7.0 has no such counter).
//
// What differs from Redis on purpose:
//
//   - A MONITOR client that leaves 64mb unread is closed whatever the normal class's limits:
//     Redis's default, normal 0 0 0, lets one that never reads take all the memory there is.
//   - A connection's own replies count once they pass 64 KB or wait for the socket; Redis counts
//     them past its 16 KB reply buffer. Limits count the bytes waiting, not the memory
//     allocated for them (which can be up to twice as much while a buffer grows).
//   - A size that does not fit in 64 bits, and soft seconds past 2³¹-1, are refused; Redis wraps
//     or truncates them into other values.
//   - A replica's soft limit is checked when stream bytes are added for it (at least every 10
//     seconds, with the stream's PING), not once a second.
//
// The proofs: TestSetAsRedis and FuzzLimits here (parsing, formatting, round trips);
// TestClientOutputBufferLimitConfigAsRedis and TestClientOutputBufferLimitRewriteAsRedis in
// internal/server (CONFIG SET, GET and REWRITE against a live redis-server); TestSlowReadersCut
// (a subscriber and a MONITOR client that never read are cut after a bounded number of 1 MB
// messages in every I/O mode, the process's resident memory bounded, the subscriber cut by
// redis-server too), TestSoftLimitAsRedis, TestMonitorIsNormalClass, TestClientListOutputMemory
// and TestReplicaOutputLimit.
package outbuf
