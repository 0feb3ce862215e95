// Package persist keeps bloomd's keyspace on disk: snapshots of every key, and an append-only
// log of every write since the last snapshot, with Redis's settings and meanings (appendonly,
// appendfsync, dir, dbfilename, appendfilename, save, auto-aof-rewrite-*). A Store is the
// server's Journal; Load rebuilds the keyspace at start-up; Save, BackgroundSave and
// BackgroundRewrite serve SAVE, BGSAVE and BGREWRITEAOF; CheckLog is `bloomd check-aof`.
//
// # Files
//
// In dir: the snapshot (dbfilename, default dump.bdb) and the logs that follow it, numbered
// (appendfilename.N, default appendonly.aof.1, .2, ...). The snapshot names the first log
// after it; every file carries a random lineage id, so files of different data sets are not
// mixed up. Start-up loads the snapshot, removes older logs (left by a crash after a snapshot
// was in place), and replays the logs from that number on, which must all be there.
//
// Both formats are little-endian and checksummed with CRC-32C (see snapshot.go and record.go).
// Every size a reader meets is covered by a checksum and checked against what is left of the
// file before anything is allocated, so a damaged or crafted file cannot make a reader allocate
// more than the file holds; filters are also checked against the memory of the machine.
//
// # Redis's files
//
// A dbfilename ending in .rdb (Debian's redis.conf says dump.rdb) makes every snapshot a Redis
// RDB file of version 10, as Redis 7.0 writes it (internal/rdb): strings as strings, filters as
// RedisBloom 2.6's module values, with rdbcompression and rdbchecksum as Redis has them, and
// bloomd's lineage and the number of the log that follows as two aux fields (bloomd-lineage,
// bloomd-log), which Redis ignores. Redis, with RedisBloom loaded, starts on such a file; bloomd
// starts on the dump.rdb Redis saves. A snapshot is read in whichever format its first bytes
// announce, whatever its name: bloomd's own format under a .rdb name (an older bloomd run with
// Debian's configuration) loads, and the next snapshot is an RDB file; an RDB file under another
// name loads, and the next snapshot is in bloomd's format. Where bloomd has none of its files
// (no snapshot, no log), a Redis dump.rdb in dir is loaded; bloomd then saves to dbfilename.
// TestStoreRDB, TestStoreLoadsRedisDumpRDB and, against the real programs in both orders, the
// server's TestRDBFilesWithRedis check this.
//
// bloomd's log stays its own format (Redis 7.0's multi-part AOF, a directory of an RDB base and
// command files, is not read or written): the RDB file is the snapshot the logs follow, exactly
// as bloomd's own snapshot is. A file that Redis saved carries no lineage, so no log of bloomd
// can follow it: start-up removes logs that hold no record (a bloomd stopped with a last
// snapshot leaves an empty one), refuses to start when a log holds writes (bloomd's writes after
// its last snapshot and the file Redis saved since are two histories, and the error says how to
// keep either one), and, with appendonly, writes a snapshot of its own at once, as Redis 7.0
// writes a base file when it starts with an AOF and none, so that the new log has a base with
// its lineage (TestStoreRedisWroteTheRDB). So to hand the data to Redis, stop bloomd with a
// last snapshot (SHUTDOWN SAVE, or save rules) and start Redis with appendonly no (Redis 7.0
// with appendonly yes and no AOF directory starts empty, whatever dump.rdb holds).
//
// Keys of types bloomd does not hold (lists, sets, sorted sets, streams, other modules' values),
// keys of databases other than 0, and function libraries stop the load with the key's
// name and type, changing no file; with RDBOptions.SkipUnknown (rdb-skip-unknown-types yes) they
// are skipped and counted in the log (TestRDBUnknownTypes). Filters are charged to the memory
// ceiling sub-filter by sub-filter before they are allocated, through the sink's hooks, and a
// filter that does not fit stops the load with ErrNoMemory, as in bloomd's format
// (TestRDBMemoryLimit). A Redis RDB file that does not read is ErrRDBDamaged; the readers name
// a file of the other format for what it is (ErrOtherFormat, never "damaged":
// TestOtherFormatNamed), and `bloomd check-aof` on an RDB file says what it holds
// (TestCheckLogOnRDB).
//
// # Writing the log: group commit
//
// Append encodes a record into memory under a mutex and returns a wait; the server calls the
// wait before it sends the replies of the batch. With appendfsync always, the first waiter to
// take the write lock writes and syncs every record buffered so far, for all connections; those
// that waited behind it find their records synced and return. With everysec and no the waiter
// writes (no sync) before the replies, as Redis does, so a crash of the process loses nothing;
// with everysec a background sync each second bounds what a crash of the machine loses. A write
// or sync failure is sticky: every later wait fails (the server closes those connections
// without acknowledging), until a snapshot taken after the failure, with a new log, makes the
// lost records redundant; the store tries one every five seconds.
//
// # Snapshots while clients go on
//
// A snapshot is taken at one instant T, inside Server.Pause (no command in flight): the list of
// keys with their expiry times, each filter's header (its links and their counts) as of T, and,
// with appendonly, the switch to a new log, whose records are exactly the writes after T. That
// costs a walk over the keys, not over their bits. Clients then go on, and the filters' bits are
// copied to the file while adds still set bits in them. The invariant that makes this exact:
//
//	snapshot(T) + replay(log after T) = the keyspace at the end of the log
//
// holds for bits, counts and growth, because of how adds are logged and replayed:
//
//   - An add sets bits with an atomic OR and never clears one. The copied bits are therefore at
//     least the bits at T and at most the bits at the end of the log; every add after T is in
//     the log and sets its bits again on replay (a no-op where the copy already has them), so
//     the replayed bits are exactly the final bits. BF.LOADCHUNK, the only write that clears
//     bits, replaces its whole range when replayed, whatever the copy held there.
//   - Counts (BF.CARD, and the growth of scalable filters, which happens when the newest link's
//     count reaches its capacity) do not come from the copied bits. A replayed BF.ADD must not
//     test the copy: an item added after T whose bits were copied would test present and go
//     uncounted, and the count would drift low. So the server logs only the items an add found
//     new, which it counted (an item that tested present changed nothing and is not logged),
//     and in loading mode replays each of them as new (redisbloom.Chain.AddNew: counted in the
//     newest link, growing it as the original did, whatever the bits say). Starting from the
//     counts and links of T, that repeats the original's counting exactly.
//   - Keys that are created, deleted, renamed, replaced, or given an expiry after T are in the
//     log in the order they happened (the server logs them under the locks that order them),
//     and the key list of T is exact, so the replay repeats them on the keys as they were at T.
//     A copy (COPY) is logged as what it holds, a filter as its dump and a string as SET, not as
//     the command: replayed over copied bits that hold later adds, COPY would copy those too.
//     A filter deleted or replaced after T keeps its memory until its bits are written.
//   - Cuckoo filters (CF.*) are not built from commuting adds: an insertion moves fingerprints.
//     Their writes are logged in the order they took effect on each filter, and the snapshot
//     copies each cuckoo filter whole at T, inside the pause (a memory copy, not a walk over its
//     slots), so the copy plus the log replays to the exact slots.
//   - Strings changed in place (SETBIT, SETRANGE, APPEND, BITFIELD) are copied like bits, while
//     clients go on, a piece at a time under the string's read lock, as many bytes as the string
//     had at T (a string only grows while it is a key's value). The server logs every change to a
//     string in a form whose replay over such a copy gives the same bytes: a change within the
//     copied length does not depend on what it overwrites (BITFIELD's INCRBY is logged as the
//     value it wrote), and one past it sees the same string the original saw.
//   - A hash is shared with the snapshot as of T (value.Hash.Snapshot, inside the pause): its next
//     change copies its list of fields first, so the snapshot writes exactly the fields of T.
//
// Where the original order of two concurrent adds to one filter is not the order of their
// records (two connections adding at one instant), a filter's counts and the link an item lands
// in at a growth boundary can differ after a replay, as the server's package documentation says;
// no item is ever lost. The snapshot writes to a temporary file, syncs it, renames it over
// dbfilename and syncs the directory; only then are the older logs removed. A log rewrite
// (BGREWRITEAOF, or automatic when the logs pass auto-aof-rewrite-min-size and
// auto-aof-rewrite-percentage of the snapshot) is such a snapshot: with appendonly, every
// snapshot starts a new log.
//
// # What a snapshot costs the clients
//
// The copy of the bits shares the cores with the event loops (one per core but one), so it is
// paced (pace.go): it works in slices of 256 KiB, about 50 µs each, yields Go's scheduler after
// each (a loop that the network woke runs first; TestSnapshotCopyYields), and every 200 µs looks
// at how long its thread has waited for a core since it last looked (the kernel's run delay):
// when it waited, another thread wanted the core, and the copy sleeps 1 ms before going on.
// Under load a snapshot thus takes about a sixth of a core, and on an idle machine it goes at
// the speed of the memory and the disk (TestPacerContended, TestPacerUncontended). Each byte of
// a filter is read once into a buffer that stays in the cache, and the buffers are reused from
// one snapshot to the next, so a snapshot adds no work for the garbage collector and a few
// megabytes of memory. The file is written with direct I/O in writes of 1 MiB, so that the log's
// syncs do not queue long behind them. Just before the instant of the snapshot the log is
// synced, so that the sync that closes it after the rotation (a client's wait does it, before
// any record reaches the next log) has only that instant's records left
// (TestSnapshotSyncsLogBeforeRotating). BENCHMARKS.md ("What does a snapshot cost clients?")
// measures the latency clients see during BGSAVE and BGREWRITEAOF, against Redis's fork.
//
// # Crashes and damage
//
// Files on disk are always a prefix of the history: a new log receives no byte before the one
// before it is synced and closed. A crash in the middle of a write can leave the last record of
// the last log cut short, or followed by nothing but zero bytes (a file extended without its
// data); start-up drops that record with a warning naming the offset and truncates the log
// there (a log that holds no record yet after it, created for a snapshot when the crash came, is
// removed first, so that the log before it counts as the last). Any other damage (a checksum, a size or a header wrong anywhere else, a torn record in
// a log that another follows, a gap in the numbers) refuses to start with a message naming the
// file, the offset, and the repair: `bloomd check-aof --fix FILE` truncates a log at its last
// good record and says how many records that loses, keeping the bytes it cuts in a new file
// beside the log; on a snapshot it writes one with every intact key (each section carries its
// own checksums, and past a damaged one the next intact section is found again), keeping the
// damaged file beside it (snapcheck.go; TestCheckSnapshot and FuzzCheckSnapshot, which also
// holds the check to what loading accepts). A record that fails when replayed also
// refuses to start. A transaction that the log ends inside of is dropped (it was never
// acknowledged).
package persist
