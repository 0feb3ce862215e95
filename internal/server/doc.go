// Package server is bloomd: a server that speaks RESP2 and RESP3 and answers RedisBloom 2.6's
// BF.* and CF.* commands exactly (package redisbloom holds the Bloom filters, bloom.Cuckoo the
// cuckoo filters), with the Redis commands that
// clients need around them: connection handshakes (HELLO, AUTH, CLIENT), keys (DEL, SCAN, TYPE,
// RENAME, expiry, DUMP, RESTORE, MIGRATE), strings with the bitmap commands and hashes
// (internal/value; cmd_string.go, cmd_bitmap.go, cmd_hash.go), transactions (MULTI/EXEC),
// keyspace notifications (notify.go),
// introspection (INFO, CONFIG, COMMAND). Command tables, error texts and limits follow Redis 7.0 and RedisBloom 2.6.28; where
// bloomd differs on purpose, README.md's compatibility table says so.
//
// A Server is made from a Config (redis.conf names: bind, port, requirepass, maxclients,
// maxmemory, timeout, tls-port, ...) by New, and runs until Shutdown; Run is the whole of
// cmd/bloomd.
//
// # A request's path
//
// On Linux, plain TCP connections are served by event loops (io-threads, by default one per
// core but one), as Redis serves its clients: an iteration takes what arrived on each socket
// into the connection's resp.Reader, runs every complete request in the buffer, waits once for
// the journal (all of the iteration's writes), then writes each connection's replies at once.
// Where the kernel has io_uring with multishot receives and deferred task work (Linux 6.1,
// internal/uring), a loop keeps its goroutine on one thread and waits in io_uring_enter
// (loop_wait_linux.go): each connection has one receive that goes on for its life, bringing its
// bytes in buffers the ring provides, and the system call that sends an iteration's replies
// also waits for the next requests, so a request costs no system call of its own and no pass
// through Go's scheduler. Elsewhere a loop waits for readable sockets with epoll, parked in the
// Go runtime's poller (its epoll descriptor is registered there) rather than in a blocking
// system call, and reads each socket once; with io_uring (Linux 5.6), the reads of an iteration
// are one system call for all its sockets, and so are the writes. TLS connections, and all
// connections elsewhere, have a goroutine each, which reads, runs the complete requests, and
// flushes once before it reads again: one write per pipelined batch either way.
//
// A request is looked up in the command table (a Mux: name, arity, flags, key positions),
// checked for authentication, for the user's permissions (internal/acl: Redis 7.0's ACL users,
// rules and NOPERM errors; the default user's +@all ~* &* costs one flag test) and for memory
// (deny-oom commands are refused over maxmemory), queued if
// a MULTI is open, and otherwise run by its handler, which writes its reply. MONITOR's feed
// and the slow log show a command with the secrets its redaction rule names (internal/redact,
// found by the command's name) as "(redacted)", and MONITOR leaves admin commands out, as
// Redis 7.0 does (TestRedactionMatchesRedis). Steady-state
// requests allocate nothing (TestHotPathAllocs, TestLoopAllocs).
//
// # Concurrency
//
// The keyspace is split into 256 shards, each a map under its own RWMutex; the maps are touched
// only to look a key up (read lock) or to add or remove one (write lock). A command's handler
// works on the entry it looked up with no lock: a filter's adds are atomic ORs on its bit
// arrays and its counts atomic increments (see redisbloom.Chain), and tests atomic loads, so adds
// and tests to one filter run in parallel on every core.
//
// Removing or replacing an entry (DEL, UNLINK, RENAME, FLUSHALL, SET, expiry), copying one
// (COPY) and overwriting bits with BF.LOADCHUNK are the only operations that do not commute
// with adds. They run alone:
// a gate lets one goroutine wait until no command is in flight and run while new ones wait. A
// connection marks itself in flight from the first command of a batch to the flush, with two
// stores to its own cache line, so the gate costs the hot path no shared write. EXEC runs its
// queued commands alone too, which makes transactions atomic as in Redis. This trades latency of
// rare structural commands (microseconds of pause) for adds that take no lock at all.
//
// A Lua script (cmd_script.go, internal/script) runs alone as well, on its caller's goroutine or
// event loop. Past busy-reply-threshold it declares itself busy: the commands waiting for the
// gate give up and are answered -BUSY, whether they wait at their start or midway to run alone
// (BF.LOADCHUNK over a filter, a creation over an expired key: TestUpgradeBehindBusyScript);
// the allow_busy ones, SCRIPT KILL and SHUTDOWN NOSAVE among them, run beside it; and a helper
// goroutine serves the caller's event loop meanwhile (loop.serveBusy), so no client waits behind
// a script that does not end.
//
// MIGRATE moves keys without stopping the server: it marks them inside an exclusive instant,
// sends them while other commands run, and deletes them once the target acknowledged; writes to
// a marked key (and an EXEC or FLUSHALL that would touch it) wait meanwhile, on a connection that
// stops being served as during WAIT, and run once the move ended (migrating.go, cmd_migrate.go).
//
// Cuckoo filters are the exception: an insertion moves fingerprints between buckets, so writes
// to one cuckoo filter (CF.ADD, CF.INSERT, CF.DEL, CF.COMPACT, CF.LOADCHUNK) hold a mutex of its
// value across the change and its journal record, and reads take the filter's read lock
// (cmd_cf.go). Writes to other keys, and reads of the same filter, still run in parallel.
// Strings and hashes, changed in place (SETBIT, SETRANGE, APPEND, BITFIELD, HSET, HINCRBY, ...),
// do the same with their own read-write lock: a write holds it across the change, its record and
// its events, a read holds its read lock; MGET takes the read locks of its keys in key order and
// reads them as one instant. The writes that replace or delete a key (SET, MSET, BITOP, HDEL of
// the last field) run alone like DEL.
//
// # Memory
//
// Every key is charged its name plus a fixed overhead, and a filter its BF.INFO Size, through
// redisbloom's Reserve hook, before anything is allocated. The limit is maxmemory, and never
// more than the ceiling found at start (memory.go): what the tightest of RLIMIT_AS, RLIMIT_DATA,
// the memory cgroup, GOMEMLIMIT and the machine's memory leaves free, less a margin for the rest
// of the process (internal/memlimit finds them). A creation, growth or BF.LOADCHUNK header that
// would pass it is refused with RedisBloom's "Insufficient memory" error naming the bytes asked,
// the limit and what sets it, so that a filter that cannot fit is refused rather than taking the
// process down. Loading the data files at start is held to the ceiling too (not to maxmemory);
// data that cannot fit stops the start-up with persist.ErrNoMemory and leaves the files as they
// were. Under a limit on address space (RLIMIT_AS, RLIMIT_DATA), which counts the Go runtime's
// large unused reservations, Run warns when less than half the limit is left for filters and
// stops at start, in one line, when none is (TestAddressSpaceRoom). Run also sets the Go
// runtime's soft memory limit under a process limit (unless
// GOMEMLIMIT is set), and a large reservation after keys were removed first collects garbage,
// so that freed filters are reused rather than added to the process.
//
// What a client leaves unread is bounded by client-output-buffer-limit (internal/outbuf): each
// connection keeps the length of its waiting output where any goroutine can read it, and is
// closed when that passes its class's limit (outbuf.go).
//
// # Durability
//
// Run opens internal/persist's Store on the durability settings (appendonly, appendfsync, save,
// dir, dbfilename, appendfilename, auto-aof-rewrite-*), makes it the Journal, and loads the data
// files while it already listens (commands Redis refuses while loading get -LOADING); SAVE,
// BGSAVE, BGREWRITEAOF, LASTSAVE and SHUTDOWN call the store (persistence.go). What follows is
// what the server guarantees the store.
//
// Every write goes through one place, Conn.propagate, which hands the command to the Journal
// (Config.Journal) after it took effect and before its reply is flushed; the connection calls
// the journal's wait function before it writes the batch's replies, so appendfsync always can
// group-commit across connections. The order of records is the order of effects for each key:
//
//   - adds to an existing filter commute, and are journaled without any lock; replaying them in
//     any order gives the same bits (a filter's counts, and the sub-filter that receives an item
//     right at a growth boundary, can differ between orders when two clients add at the same
//     instant). An add is journaled with only the items it found new, the ones it counted, so
//     that a replay can count each as new again (redisbloom.Chain.AddNew), even over bits copied
//     while adds went on;
//   - creating a key journals under its shard's write lock before the key is visible, so every
//     later command on it is journaled after its creation;
//   - everything that removes, replaces or overwrites runs alone (above), so its record is
//     ordered against all others; a transaction's writes are journaled between MULTI and EXEC;
//   - a COPY is journaled as what the copy holds (cmd_copy.go): a filter as its dump, a string
//     as SET, since the source a replay finds may hold bits copied after the COPY;
//   - expiry times are absolute unix milliseconds (EXPIRE is journaled as PEXPIREAT, SET's EX as
//     PXAT), and an expired key's removal is journaled as DEL, as Redis propagates it;
//   - a write to a string or hash is journaled under the value's lock, in the form that replays
//     exactly over a snapshot copied while clients went on (BITFIELD as the values it wrote,
//     BITOP as a SET of its result, HINCRBYFLOAT as HSET; see cmd_string.go and cmd_hash.go).
//
// Replaying the records with Server.Exec while SetLoading(true) (expiry suspended, as Redis does
// while loading its AOF; adds counted as new) rebuilds the keyspace; TestJournalReplay checks
// this against every transcript, a random workload and concurrent clients, and
// TestReplayOverLaterBits over a filter whose bits were copied after its header. For snapshots, the keyspace can be
// walked shard by shard while adds continue (they only set bits, so a copy taken during adds
// plus the records from the snapshot's start gives the same bits); Server.Pause runs a function
// with no command in flight, to mark the point where a snapshot starts and a new log begins.
// Reads may see writes of other clients whose records are not yet durable; a journal that must
// prevent that can make reads wait too.
//
// # Replication and publish/subscribe
//
// The records Conn.propagate hands the journal go, in the same call, to internal/repl, which
// streams them to replicas (one stream of changes, two consumers). replication.go holds the hooks:
// the settings (replicaof, masterauth, repl-backlog-size, ...), REPLICAOF/SLAVEOF, PSYNC (which
// hands the connection over to internal/repl), REPLCONF, WAIT, ROLE, CONFIG REWRITE, the
// -READONLY/-MASTERDOWN/-NOREPLICAS checks, and replHost, through which replication takes
// snapshots (Pause, then persist's snapshot writer), loads a primary's snapshot and applies its
// stream on a connection of its own. A replica applies the stream in loading mode, as a log is
// replayed: adds counted as the primary counted them, keys removed only by the primary's DEL;
// meanwhile the replica's clients see a key whose time has passed as gone (keyspace.expired),
// while the stream still finds it (Conn.expired). The snapshots full syncs share charge their
// copies of cuckoo filters, and the backlog its chunks, to the memory ceiling (chargeRepl).
// cmd_pubsub.go connects internal/pubsub: published messages reach a connection in an event
// loop through its loop, and one with its own goroutine through a writer goroutine, in order;
// PUBLISH goes to the replicas too, not to the journal (Conn.propagateRepl).
//
// # Cluster mode
//
// With cluster-enabled yes, bloomd is a node of a Redis Cluster 7.0 (internal/cluster holds the
// bus, the state machine and the routing; cluster.go connects them): before a command runs or is
// queued, its keys, found by its key specs as the ACL check finds them, are checked against the
// cluster's routing snapshot (one atomic load, no lock, no allocation), and a command this node
// does not serve is answered -MOVED, -ASK, -TRYAGAIN, -CROSSSLOT or -CLUSTERDOWN as Redis answers
// it; EXEC checks the keys of the whole transaction. Commands of the primary's stream and of the
// data files are never redirected. The keyspace lists the keys of each hash slot (slotindex.go)
// for CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT and for deleting a lost slot's keys, which runs
// alone and journals a DEL per key. The cluster drives replication (REPLICAOF is refused, as in
// Redis's cluster mode); PUBLISH goes over the bus to every node instead of the replication
// stream. Writes that arrive while a manual failover pauses them are answered, once the pause
// ends, with where their keys are served then.
package server
