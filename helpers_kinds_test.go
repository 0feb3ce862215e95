package bloom_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/bloomd/bloom"
)

// nativeHeader returns a native record header with the given fields and a valid checksum, so a
// test can craft a record whose only fault is the one under test.
func nativeHeader(kind, scheme byte, k uint32, m, count, payload uint64, params []byte) []byte {
	b := make([]byte, 64)
	copy(b, "\x89BLOOM\r\n")
	binary.LittleEndian.PutUint16(b[8:], 1)
	b[10], b[11] = kind, scheme
	binary.LittleEndian.PutUint32(b[12:], k)
	binary.LittleEndian.PutUint64(b[16:], m)
	binary.LittleEndian.PutUint64(b[24:], count)
	binary.LittleEndian.PutUint64(b[32:], payload)
	copy(b[40:60], params)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func mustClassic(t testing.TB) *bloom.Filter {
	t.Helper()
	f, err := bloom.New(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustMarshal(t testing.TB, f interface{ MarshalBinary() ([]byte, error) }) []byte {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustBlocked(t testing.TB) *bloom.Blocked {
	t.Helper()
	f, err := bloom.NewBlocked(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// withCRC appends the CRC-32C trailer of payload.
func withCRC(payload []byte) []byte {
	return binary.LittleEndian.AppendUint32(bytes.Clone(payload), crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)))
}
