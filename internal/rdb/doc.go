// Package rdb reads and writes Redis's data formats: RDB files (dump.rdb, the payload of a
// replica's full sync) and DUMP payloads (DUMP, RESTORE, MIGRATE), with the values bloomd holds:
// strings, hashes, and RedisBloom's Bloom and cuckoo filters exactly as RedisBloom 2.6 saves
// them. It follows Redis 7.0.15's rdb.c, cluster.c, listpack.c, ziplist.c, lzf and crc64, and
// RedisBloom 2.6.28's BFRdbSave/BFRdbLoad and CFRdbSave/CFRdbLoad; the tests check each claim
// below against files and payloads that those programs wrote (testdata/README.md).
//
// # Files
//
// An RDB file is "REDIS" and a four-digit version, then records, each a byte: aux fields
// (two strings, such as redis-ver and ctime), SELECTDB and RESIZEDB, a key's expiry time
// (EXPIRETIME_MS, or EXPIRETIME in seconds), its LRU idle time or LFU frequency, then the key's
// value type, name and value; function libraries and module aux data (Redis 7.0); and at the
// end EOF and the CRC-64/Jones of everything before (0 when saved with rdbchecksum no).
// Lengths take 1, 2, 5 or 9 bytes; strings are plain, integers of 8, 16 or 32 bits, or
// LZF-compressed. A Reader reads versions 9 to 12 (Redis 6.2 to 7.4) and a Writer writes 10
// (Redis 7.0) unless asked for another.
//
// Reader.Next returns keys one at a time with the value unread; an Entry's Read methods decode
// it: ReadString, ReadHash (hash tables, zipmaps, ziplists, listpacks and 7.4's hashes with
// field expiry times), ReadChain and ReadCuckoo (RedisBloom's MBbloom--, encodings 2 to 4, and
// MBbloomCF, encodings 0 to 4, into redisbloom.Chain and bloom.Cuckoo), or ReadBloomHeader and
// ReadCuckooInfo (a filter's parameters and counts, its bits skipped). Keys of every other type
// (lists, sets, sorted sets, streams, other modules' values), function libraries and module
// aux data are parsed only far enough to pass them: refused by default with an
// *UnsupportedError naming the key and its type, or skipped and counted
// (ReaderOptions.SkipUnsupported, Reader.Skipped). TestRecordedFiles reads files written by
// Redis 7.0 with RedisBloom 2.6.28 (compressed and not) and checks every key against what Redis
// answered about it: type, expiry, value, BF.INFO or CF.INFO, each BF.SCANDUMP or CF.SCANDUMP
// chunk and the answers for 700 items; TestRecordedOtherTypes refuses and skips the other
// types, a stream with a consumer group and RedisBloom's count-min sketch among them.
//
// The Writer writes as Redis 7.0 with RedisBloom 2.6.28 does: strings as rdbSaveRawString
// writes them (integers as integers, LZF for strings over 20 bytes when that saves 4, unless
// NoCompression), hashes as listpacks when they have at most hash-max-listpack-entries fields
// none longer than hash-max-listpack-value, else as hash tables (version 9 files always as hash
// tables: Redis 6.2 reads no listpack), filters as RedisBloom's module values of encoding 4.
// TestRecordedDumps shows the encoding is Redis's byte for byte: every DUMP payload that Redis
// made, decoded and encoded again, is the same bytes, LZF compression included.
// TestWriterLoadsIntoRedis (strings, hashes, expiry, two databases; it needs only
// redis-server and runs in CI) and TestWriterLoadsIntoRedisBloom (every key, with the module
// named by REDISBLOOM_SO) load this package's files into redis-server, which must answer about
// every key as it did about the originals.
//
// # DUMP payloads
//
// A DUMP payload is a value as a file holds it, type byte first, then the RDB version in two
// bytes and the CRC-64 of all that. ReadDump refuses, as RESTORE does, a payload shorter than
// its footer, of a version above the one given (Redis 7.0 refuses above 10) or with a wrong
// checksum (ErrDumpPayload, Redis's "DUMP payload version or checksum are wrong"); bad data
// inside is ErrCorrupt ("Bad data format"). DumpString, DumpHash, DumpChain and DumpCuckoo
// write payloads. TestDumpRestoreIntoRedis restores this package's payloads into redis-server.
// DumpChainTo streams a filter's payload to a writer, its bits uncompressed, with a length
// (DumpChainLen) known before its first byte, so that a filter of any size goes out as one RESP
// bulk string without being held in memory (TestDumpChainTo).
//
// # Streams and memory
//
// A Reader consumes exactly the file's bytes, through its checksum, when given a
// *bufio.Reader, so a replica can read a full sync's RDB and then the command stream from the
// same connection; a Writer writes to any io.Writer, a socket included. Neither holds more than
// one value: a Reader reads a filter's bits into the filter as they arrive (an LZF string
// through an 8 KiB window, never whole), allocating each sub-filter only once its record and
// the length of its bits have been read and the memory hooks (redisbloom.Options.Reserve,
// bloom.CuckooOptions.Reserve) have agreed; a Writer reads a filter's bits from it in 1 MiB
// pieces and holds at most their compressed form. Every length is checked against what is
// left of the input when its size is known (ReaderOptions.Size, and always for DUMP payloads),
// and a string's memory is otherwise allocated in steps as its bytes arrive, so a crafted input
// makes the reader allocate no more than it holds; what a filter needs beyond that (its bits,
// which LZF compresses up to 88 times) is checked against the hooks and the machine's memory
// before it is allocated. FuzzReader and FuzzReadDump fuzz both readers (seeds in testdata/fuzz),
// and TestCraftedInputsAllocateLittle feeds them lengths of up to 2^40 bytes in inputs of a few
// dozen.
//
// # Snapshots while clients go on
//
// Writer.WriteChain takes the chain's BF.SCANDUMP header as of the snapshot's instant and reads
// the bits while it writes them, as internal/persist's own snapshots do: bits only gain set
// bits, so a copy taken while adds go on, followed by the log of those adds, replays to the
// exact filter (see internal/persist's package documentation). When a compressed form turns
// out no shorter, the bits are read again to be written plainly; they may have gained bits
// between the two reads, which the same argument covers. Cuckoo filters are written from a copy
// taken at the instant (bloom.Cuckoo.Clone).
//
// # Where this package deliberately differs from Redis and RedisBloom
//
//   - A hash field that appears twice, a hash or sub-filter count that does not add up (the
//     chain's item count against its sub-filters', which RedisBloom does not compare), and bytes
//     after a DUMP payload's value are bad data; Redis and RedisBloom load or ignore them.
//   - Bloom filters saved before RedisBloom 2.0 (encodings 0 and 1, 32-bit hashing) and with
//     option bits other than 5 or 13 are refused, as redisbloom.LoadHeader refuses them;
//     cuckoo sub-filters must have the buckets their place gives them. RedisBloom loads both.
//   - A module value whose field values overflow the narrower types RedisBloom keeps them in
//     (bucket size, expansion, hashes, n2) is refused instead of truncated.
//   - A filter's bits of 4 MiB or more are compressed only if their first MiB shrinks by a
//     128th: a full filter's bits do not compress, and Redis finds that out only at their end,
//     having compressed all of them (most of the time of a save). Bits spread evenly compress
//     alike throughout, so the outcome is Redis's but where the first MiB is not like the rest
//     (TestIncompressibleFilterProbe, BenchmarkLZFCompress).
//   - An expiry time at or before the epoch reads as 1 ms, so that 0 can mean none.
//   - Files and payloads of versions 9 to 12 are read, whatever version the caller speaks;
//     ReadDump takes the newest version to accept, so a server can refuse newer ones as Redis
//     7.0 does.
package rdb
