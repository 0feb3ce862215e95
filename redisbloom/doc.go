// Package redisbloom implements RedisBloom 2.6's Bloom filter data structure exactly: the
// scalable filter behind BF.RESERVE, BF.ADD, BF.EXISTS, BF.INFO and BF.CARD (a Chain), and the
// BF.SCANDUMP / BF.LOADCHUNK binary format, so that dumps move byte for byte between RedisBloom
// and this package. It is the storage engine of bloomd and the codec of the bloom CLI. For
// cuckoo filters (bloom.Cuckoo, RedisBloom's CF.* type) it holds the CF.SCANDUMP / CF.LOADCHUNK
// format: CFScanDump, LoadCFHeader and CFLoadChunk (see cfdump.go for the layout).
//
// # Semantics
//
// A Chain is a list of classic sub-filters ("links") built on bloom.Filter with the
// bloom.RedisBloom64 scheme: an item's bit positions are (a + i·b) mod m for i < k, with
// a = MurmurHash64A(item, 0xc6a4a7935bd1e995) and b = MurmurHash64A(item, a), and m the link's
// bit count. A link for capacity n at error rate p is sized by bloom.RedisBloomSize: bits per
// entry bpe = -ln p / ln²2, m = ⌊n·bpe⌋ rounded up to whole 64-bit words, k = ⌈ln 2 · bpe⌉.
//
// NewChain(C, E, g, nonScaling, opts) makes link 0 with capacity C at rate E/2 (E when
// non-scaling). Add checks every link, newest first, and returns false if any reports the item
// present; otherwise, if the newest link holds its capacity, it appends link i with capacity
// C·g^i at rate E·2^-(i+1) (or, non-scaling, fails with ErrFull), and adds the item to the
// newest link, counting it there. Card is the sum of the counts (BF.CARD), Capacity the sum of
// the capacities, Size the memory formula 32 + 64·links + Σ link bytes (BF.INFO Size),
// Expansion the growth factor as a uint32 (RedisBloom stores it as an unsigned int, so
// EXPANSION 4294967297 is 1), and Debug the lines of BF.DEBUG. Used from one goroutine, a Chain
// matches RedisBloom in every reply, count and bit; the tests replay recorded RedisBloom sessions
// and compare dumps byte for byte.
//
// Add and Exists take no lock (see Chain); only appending a link does. Before allocating a
// link, the chain asks Options.Reserve, through which a server refuses growth past maxmemory;
// without it, a link that cannot fit in the machine's memory fails with bloom.ErrTooLarge.
//
// # The BF.SCANDUMP format
//
// A dump is a header followed by the links' bit arrays, addressed by iterators. All integers and
// doubles are little-endian and packed (no padding). The header, iterator 1, is 20 + 53·n bytes:
//
//	offset size field
//	0      8    uint64  items (the sum of the link counts)
//	8      4    uint32  n, the number of links
//	12     4    uint32  options: 5 = FORCE64|NOROUND, 13 = FORCE64|NOROUND|NO_SCALING
//	16     4    uint32  expansion
//	then for each link, oldest first, 53 bytes:
//	+0     8    uint64  bytes of the bit array
//	+8     8    uint64  bits = 8·bytes (the modulus m)
//	+16    8    uint64  items in this link
//	+24    8    float64 the link's error rate
//	+32    8    float64 bits per entry
//	+40    4    uint32  k, the number of hashes
//	+44    8    uint64  capacity of this link
//	+52    1    uint8   n2 (0: not power-of-two sized)
//
// Bit b of a link is bit b&7 (least significant first) of byte b>>3 of its array, which is the
// little-endian byte view of bloom.Filter's words. Think of the arrays as concatenated, oldest
// link first: iterator i ≥ 1 names byte i-1. ScanDump(0) returns (1, header); ScanDump(i) returns
// the bytes from i-1 to the end of that link, at most MaxChunkSize (16 MiB) so that no chunk
// spans two links, with the iterator i + len; past the end, or for i < 0, (0, nil).
// BF.LOADCHUNK takes each returned pair as it is: LoadHeader(header) makes a chain with zeroed
// bits, then LoadChunk(i, data) writes data at offset i - len(data) - 1, in any order.
// Chunks and LoadChunks do a whole chain; WriteTo and ReadDump store one in a checksummed file
// (see file.go for that layout).
//
// # Errors and RedisBloom's replies
//
// A server answers as RedisBloom does by mapping this package's errors:
//
//	error (errors.Is)               RedisBloom reply
//	ErrFull                         ERR non scaling filter is full
//	ErrCannotGrow                   ERR problem inserting into filter
//	ErrBadData                      ERR received bad data
//	ErrNoLink                       ERR invalid offset - no link found
//	ErrChunkTooBig                  ERR invalid chunk - Too big for current filter
//	NewChain's parameter errors     ERR could not create filter (after the server's own checks)
//
// and the Reserve hook's own error, returned unchanged, to its OOM reply. ErrBadData, ErrNoLink,
// ErrChunkTooBig and every dump-file error match bloom.ErrCorrupt.
//
// # Where this package deliberately differs from RedisBloom 2.6
//
//   - Headers are refused unless their options are 5 or 13, the values every RedisBloom command
//     sets. RedisBloom also loads other combinations of its four option bits; those arise only
//     from filters created before RedisBloom 2.0 (32-bit MurmurHash2 hashing) or crafted headers.
//   - Header links must have a whole number of 64-bit words (RedisBloom's sizing always gives
//     one), power-of-two links (n2 > 0) must have exactly 2^n2 bits, capacities must be at least
//     1, k at most bloom.MaxK, each link at most 2^56 bits and a chain at most MaxFilters links.
//     RedisBloom checks none of these.
//   - A header's total size is checked against the machine's memory and the Reserve hook before
//     anything is allocated. RedisBloom allocates what a header declares: a crafted BF.LOADCHUNK
//     header aborts it, and a multiplication of bytes·8 that wraps around passes its check.
//   - Creating or growing a chain that cannot fit in memory fails with an error (wrapping
//     bloom.ErrTooLarge) instead of growing the process until it dies; a capacity·expansion that
//     overflows 64 bits fails with ErrCannotGrow instead of wrapping around. A failed growth
//     leaves the chain as it was.
//   - Concurrent Adds of one new item may both report it new and both count it. RedisBloom runs
//     commands one at a time, and so does a Chain used from one goroutine.
//
// # Examples
//
// Example makes a chain with RedisBloom's defaults and lets it grow; ExampleChain_ScanDump copies
// a chain through BF.SCANDUMP chunks, as BF.LOADCHUNK would load them.
package redisbloom
