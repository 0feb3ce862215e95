// Package migrate is the sending side of MIGRATE: it moves keys, as DUMP payloads in RESTORE
// commands, to another server (Redis or bloomd) over a connection it keeps for the next MIGRATE
// to the same place, and reports which keys the target acknowledged. It follows Redis 7.0.15's
// migrateCommand and its socket cache (src/cluster.c); the server (internal/server) parses the
// command, finds the keys, holds their writes, and deletes what was acknowledged.
//
// # What goes on the wire
//
// As Redis sends it, in one pipelined write: AUTH (with AUTH or AUTH2), SELECT when the cached
// connection has not selected the database yet, then one RESTORE per key (RESTORE-ASKING when
// asked for, as a cluster node sends it) with the key's remaining time to live in milliseconds
// (0 for none; a key whose time has passed is left out) and REPLACE when given; then the
// replies are read, one line each. A reply that is an error makes the first such error the
// answer ("ERR Target instance replied with error: BUSYKEY Target key name already exists.")
// and forgets the selected database; keys whose RESTORE succeeded count as moved either way. A
// connection that times out, or to a host that does not resolve, answers "IOERR error or
// timeout connecting to the client"; a write or a read that fails answers "IOERR error or
// timeout writing to target instance" or "... reading to target instance", after one more try
// on a new connection when the failure was not a timeout and no reply had been read (a cached
// connection that the target closed). A refused connection is a failed write, as in Redis,
// which connects without blocking and finds the refusal when it writes.
// Replies and retries are Redis's: the server's TestMigrateMatchesRedis runs the same MIGRATEs
// from redis-server and from bloomd and compares every reply; TestMigrateRetriesOnce and
// TestPoolAgainstRedis check the retry and the cache against a real redis-server.
//
// Each write and each read has the command's timeout, as in Redis; a payload is written in
// pieces as the writer takes them, each piece within the timeout, so a large filter streams
// rather than waiting behind one deadline for the whole transfer.
//
// # The connection cache
//
// As Redis's migrate_cached_sockets: one connection per host:port, at most 64 (a random one is
// closed to make room), closed once unused for 10 seconds (Pool.CloseIdle, which the server
// calls each second), and closed after any failure. bloomd runs MIGRATEs from several clients at
// once: a MIGRATE takes the cached connection for the time of its exchange, and one to a target
// whose connection is in use dials another, which replaces none (it is closed after use).
//
// # What differs on purpose
//
//   - A payload is written as it is produced (Payload.WriteTo), behind a length known before
//     its first byte, so that a filter of any size moves without a copy in memory; Redis builds
//     the whole command in memory first. The server writes a large Bloom filter's payload
//     uncompressed (rdb.DumpChainTo): the target needs proto-max-bulk-len above its size.
//   - Connections are made by the server's dialer, which binds them to bind-source-addr, as
//     bloomd's replica link is; Redis 7.0.15 binds MIGRATE's connections to nothing.
//   - Only plain TCP: Redis uses TLS here when tls-cluster is set; bloomd has no TLS for
//     outgoing connections.
package migrate
