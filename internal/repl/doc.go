// Package repl is bloomd's replication: a primary streams its writes to replicas, which
// follow it, and Redis Sentinel (unchanged) can promote a replica when the primary fails. The
// protocol is Redis 7.0's: the replica authenticates (masterauth, masteruser), announces itself
// (REPLCONF listening-port, capa) and asks "PSYNC replid offset"; the primary answers
// "+CONTINUE" and the missing bytes from its backlog when it has them, or "+FULLRESYNC replid
// offset", a snapshot (bloomd's own snapshot format behind its length to a bloomd replica, an RDB
// file to a Redis one; see Redis primaries and replicas) and then the stream. The stream is RESP commands, the same records the append-only log
// holds (the server's Journal feeds both), and offsets count its bytes exactly as Redis's do,
// so INFO replication, ROLE, WAIT and Sentinel's view of offsets mean what they mean for Redis.
// PUBLISH is in the stream too, as Redis propagates it to replicas only (not to the log), and a
// replica delivers it to its own subscribers (TestPublishReachesReplicas, against a Redis pair).
//
// # Histories
//
// A Repl has a replication ID and an offset, and keeps a backlog of the last repl-backlog-size
// bytes of the stream. A replica's backlog is fed with the primary's stream, command for
// command in the same encoding, so its offsets are the primary's. When a replica is promoted
// (REPLICAOF NO ONE) it takes a new ID and keeps the old one as its secondary ID, valid up to
// the offset of the promotion (master_replid2, second_repl_offset): the other replicas, still on
// the old ID, then continue from the promoted one without a snapshot. When a primary is made a
// replica it asks its new primary to continue from its own ID and offset.
//
// The backlog takes memory as the stream fills it, in chunks of 16 KiB, each charged to the
// server's memory ceiling (Host.Charge), so repl-backlog-size may be set far beyond memory, as
// Redis allows: a chunk the ceiling refuses is not allocated, and the backlog then keeps less
// history (logged once). A new repl-backlog-size keeps the history, as Redis does since 7.0, so
// a replica that reconnects after a resize still continues with a partial sync
// (TestBacklogGrowsAsItFills, TestBacklogResizeKeepsHistory, TestHugeBacklogSize and
// TestBacklogResizeKeepsPartialResync, the last two against Redis).
//
// # Full syncs
//
// Replicas share snapshots, as Redis's replicas share one BGSAVE (fullsync.go). A snapshot is
// taken at one instant inside the server's pause and copies what cannot be read while writes go
// on (the cuckoo filters; Bloom filters' bits are read as they are written); those copies are
// charged to the memory ceiling until the last replica that uses the snapshot is done, and a
// snapshot whose copies do not fit is refused: the replicas get "-ERR BGSAVE failed,
// replication can't continue: ..." with the sizes, and ask again. Every replica waiting when
// the snapshot is taken is sent it; one that asks while it is being sent attaches to it if the
// backlog still holds the stream since its instant (each replica has its own writer, so a
// stalled one delays no other), and otherwise waits, sent a newline every second as Redis
// does, for the next snapshot, taken when the current one is released. There is one snapshot,
// and one copy, at a time (TestStalledFullSyncsShareOneCopy measures the resident memory of six
// stalled full syncs; TestFullSyncSharesSnapshot, TestFullSyncChargedToCeiling). Unlike Redis,
// whose diskless sync can add replicas only before the transfer starts (repl-diskless-sync-delay),
// a late replica joins a snapshot that is already being sent.
//
// # Redis primaries and replicas
//
// Replication works both ways with redis-server 7.0 and RedisBloom 2.6. A bloomd replica names
// its snapshot format in REPLCONF capa (bloomd, or bloomd-rdb); a replica that names none is a
// Redis replica and is sent an RDB file behind Redis's diskless "$EOF:<mark>" framing, its
// filters copied at the snapshot's instant (a Redis replica tests every add against its bits,
// so it must be given them exactly), and then a stream of commands that Redis applies to the
// same effect (TestRedisReplicaOfBloomd; TestFullSyncUnderAdds adds to a filter while it is
// being sent). Following a Redis primary, bloomd reads its RDB behind either framing, from the
// link as it arrives when it holds no key, and applies Redis's stream as Redis's replicas do,
// acknowledging REPLCONF GETACK with the same offsets (TestBloomdReplicaOfRedis, live;
// TestReplayRedisStream, a stream recorded from Redis by TestRecordRedisStream). What bloomd does
// not hold (another database, a command for a type it lacks) stops the link, keeping what was
// applied, or with rdb-skip-unknown-types is skipped and counted (TestReplicaOfRedisUnsupported).
// Promotions go either way without a new full sync (TestFailoverBetweenRedisAndBloomd), and
// Sentinel watches groups that mix both (TestSentinelMixedGroup). A damaged full sync or stream
// from a primary stops the link with the reason and allocates nothing the input does not hold
// (internal/server's TestReplicaHostilePrimary).
//
// # Replicas and expiry
//
// A replica never expires keys itself: a key whose time has passed stays until its primary's
// DEL arrives, and the primary's stream still finds it; but the replica's clients see it as
// gone, as Redis 7.0's expireIfNeeded answers on a replica (TestReplicaHidesExpiredKeys, against
// a Redis pair). That is the server's keyspace's rule (internal/server, Conn.expired).
//
// # Outgoing connections
//
// Repl.Dial is how the server connects to other servers (the replica's link, and MIGRATE's):
// with bind-source-addr it binds the connection's local address as Redis 7.0 does, best effort:
// an address it cannot bind is logged and the connection made from the address the system picks
// (TestDialFrom, TestBindSourceAddrBestEffort against Redis). So replicas on hosts with several
// addresses are listed by their primary, and found by Sentinel, under the address they listen on
// (TestBindSourceAddrSentinel, with a real redis-sentinel). Redis 7.0.15 itself binds its
// replica link, cluster bus and Sentinel connections to bind-source-addr, but not MIGRATE's.
//
// # What a client may see after a failover
//
// Bloom filter adds only set bits, so a replica that applied a prefix of the stream never has
// a bit the primary lacked. An add acknowledged together with a successful WAIT 1 is on at
// least one replica and survives the failover that Sentinel makes (Sentinel promotes the most
// advanced replica). An add not waited for may be lost if the primary dies before sending it,
// as in Redis.
//
// # Concurrency
//
// A Repl is safe for concurrent use. Feed is called with the server's write locks held and
// only appends to memory; every socket is served by the package's own goroutines. The server
// supplies what the package cannot do itself through Host. The stream waiting for a replica is
// bounded by the replica class of client-output-buffer-limit (Config.OutputLimit, Redis's
// rules, internal/outbuf): a replica past it is disconnected, and resynchronises when it comes
// back (internal/server's TestReplicaOutputLimit).
package repl
