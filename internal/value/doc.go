// Package value holds bloomd's value types beyond filters: strings, which the bitmap commands
// treat as arrays of bits, and hashes. It follows Redis 7.0.15 (t_string.c, bitops.c,
// t_hash.c): each type's operations with Redis's replies, limits and error texts, its memory
// charge, and its encoding in bloomd's snapshot. The server (internal/server) stays the command
// table: its handlers look keys up, take the value's lock, journal, publish keyspace events and
// reply, and call this package for the rest.
//
// # Strings and bitmaps
//
// A String is bytes that SET replaces whole and that SETBIT, SETRANGE, APPEND and BITFIELD
// change in place. Bit i of a string is bit 7-i%8 of byte i/8 (the most significant bit first),
// as in Redis. BitCount, BitPos (BITCOUNT and BITPOS with BYTE or BIT ranges and negative
// indexes), BitOp (AND, OR, XOR, NOT) and Bitfield (GET, SET, INCRBY of signed integers of 1 to
// 64 bits and unsigned of 1 to 63, at plain or "#n" offsets, with WRAP, SAT or FAIL) compute what
// Redis computes, including its overflow check's quirk: a signed SET of a value below
// max - 2^63 + 1 counts as too large, so SAT stores the maximum. Offsets and lengths are held to
// proto-max-bulk-len (512 MB by default) with Redis's errors ("bit offset is not an integer or
// out of range", "string exceeds maximum allowed size (proto-max-bulk-len)"); the primary's
// stream and the data files are not held to it, as Redis's mustObeyClient does not.
//
// A string is charged its allocation. Growing one (GrowCharge, then Grow) doubles the
// allocation up to 1 MiB and adds 1 MiB beyond, as Redis's sds does, and the charge is known
// before anything is allocated, so the server refuses a SETBIT at offset 4e9 over maxmemory
// without allocating 512 MB.
//
// # Hashes
//
// A Hash keeps its fields in the order they were first set: the order of a small hash in Redis
// (a listpack), and an order for a large one, whose hash table's order no client relies on.
// HINCRBYFLOAT adds in Redis's x87 80-bit long double arithmetic, emulated in 64-bit precision
// with math/big, and prints the result as Redis does ("%.17Lf" trimmed); only subnormal results
// (below 3.4e-4932), which print as 0 either way, are not emulated. HSCAN returns a hash within
// Redis 7.0's default listpack limits (512 fields, values of 64 bytes) whole, with cursor 0, as
// Redis does for a listpack; a larger one is paged by a cursor that numbers the fields in their
// order, so every field present for a whole iteration is returned exactly once, whatever changes
// between calls. HRANDFIELD draws as Redis does (distinct fields for a positive count, with
// repetition for a negative one).
//
// A hash is charged its fields' names and values and a fixed cost per field (FieldCharge).
//
// # Snapshots
//
// A snapshot (internal/persist) takes the keyspace at one instant and writes it while clients go
// on. For a hash, Snapshot returns a view of its fields that never changes: the hash copies its
// list of fields (not the fields, which are never changed once made) before its next change.
// A string is copied instead a piece at a time, as many bytes as it had at the instant, while it
// changes; the server records every change to a string so that the log after the instant,
// replayed over such a copy, gives the same string (see internal/server's cmd_string.go). The
// hash encoding (AppendHash, DecodeHash) is bloomd's own; DecodeHash refuses any input that is
// not exactly one hash's encoding before allocating more than the input warrants.
//
// # Where it is proved
//
// The transcripts commands-bitmaps.txt and commands-hashes.txt (internal/server/testdata, run by
// TestCommandTranscripts) are replayed against a real redis-server 7.0.15 and against bloomd,
// byte for byte, errors and RESP3 included. In this package, TestBitCountRanges,
// TestBitPosRanges and TestBitOp check the bit commands against a bit-by-bit reading of their
// definitions, TestBitfieldArithmetic checks BITFIELD against exact integer arithmetic,
// TestBitfieldRecordReplays the form BITFIELD is recorded in, TestHashOrderAndCharge,
// TestHashSnapshotUnchanged and TestHashScanCursor the hash; FuzzParseBitfield and
// FuzzDecodeHash fuzz what is parsed by hand. In internal/server, TestValuesParallelOneKey runs
// parallel clients on one bitmap and one hash under -race with exact final counts and an exact
// replay of the journal, TestValuesReplication compares a replica with its primary,
// TestValuesMemory the memory charge, TestValuesHotPathAllocs shows that SETBIT, GETBIT and HGET
// allocate nothing, and TestValuesCommandInfo compares COMMAND INFO and DOCS with redis-server;
// internal/persist's TestCrashValues kills bloomd with
// SIGKILL while clients change values and snapshots are taken, and finds every acknowledged
// change after each restart.
package value
