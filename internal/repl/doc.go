// Package repl is bloomd's replication: a primary streams its writes to replicas, which
// follow it, and Redis Sentinel (unchanged) can promote a replica when the primary fails. The
// protocol is Redis's: the replica authenticates (masterauth, masteruser), announces itself
// (REPLCONF listening-port, capa) and asks "PSYNC replid offset"; the primary answers
// "+CONTINUE" and the missing bytes from its backlog when it has them, or "+FULLRESYNC replid
// offset", a snapshot (bloomd's own snapshot format, behind its length, like an RDB payload)
// and then the stream. The stream is RESP commands, the same records the append-only log
// holds (the server's Journal feeds both), and offsets count its bytes exactly as Redis's do,
// so INFO replication, ROLE, WAIT and Sentinel's view of offsets mean what they mean for Redis.
//
// # Histories
//
// A Repl has a replication ID and an offset, and keeps a backlog: a ring of the last
// repl-backlog-size bytes of the stream. A replica's backlog is fed with the primary's stream,
// command for command in the same encoding, so its offsets are the primary's. When a replica is promoted (REPLICAOF NO ONE)
// it takes a new ID and keeps the old one as its secondary ID, valid up to the offset of the
// promotion (master_replid2, second_repl_offset): the other replicas, still on the old ID,
// then continue from the promoted one without a snapshot. When a primary is made a replica it
// asks its new primary to continue from its own ID and offset.
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
