package rdb

import (
	"hash/crc64"
	"math/bits"
)

// Redis checksums RDB files and DUMP payloads with CRC-64/Jones (src/crc64.c): polynomial
// 0xad93d23594c935a9, reflected input and output, initial value 0 and no final XOR; the check
// value of "123456789" is 0xe9c6d914c4b8d9ca. The standard library's hash/crc64 computes any
// reflected CRC-64 from a table made of the bit-reversed polynomial, but inverts the register
// before and after each update; crcUpdate undoes both inversions, so the standard library's
// tables (and its slicing-by-8 speed on large blocks) serve unchanged.
var jonesTable = crc64.MakeTable(bits.Reverse64(0xad93d23594c935a9))

// crcUpdate returns Redis's crc64(crc, p).
func crcUpdate(crc uint64, p []byte) uint64 { return ^crc64.Update(^crc, jonesTable, p) }

// CRC64 returns Redis's crc64(crc, p): the checksum of an RDB file or DUMP payload is
// CRC64(0, its bytes), and CRC64(CRC64(0, a), b) is that of a followed by b.
func CRC64(crc uint64, p []byte) uint64 { return crcUpdate(crc, p) }
