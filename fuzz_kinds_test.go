package bloom_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomd/bloom"
)

// addKindSeeds seeds a fuzz target with one small record of every kind (testdata/kinds and the
// classic ones in testdata/native) and a few crafted headers.
func addKindSeeds(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/kinds/*.bloom")
	native, _ := filepath.Glob("testdata/native/*.bloom")
	for _, s := range append(seeds, native...) {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(nativeHeader(2, 1, 6, 1<<40, 0, 1<<37, []byte{2}))
	f.Add(nativeHeader(3, 1, 7, 1<<20, 5, 1<<30, []byte{1, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0}))
	f.Add(nativeHeader(4, 4, 3, 70, 0, 40, nil))
}

// checkDecoded is the property every decoder must have: it fails only with ErrCorrupt or
// ErrTooLarge, and what it accepts re-encodes to bytes that decode to the same filter (the
// count field of classic and blocked records is recomputed, so the first encoding may differ
// from the input).
func checkDecoded(t *testing.T, f bloom.AnyFilter, err error) {
	if err != nil {
		if !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, bloom.ErrTooLarge) {
			t.Fatalf("decoding failed with an error that is neither ErrCorrupt nor ErrTooLarge: %v", err)
		}
		return
	}
	once, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	g, err := bloom.DecodeBytes(once)
	if err != nil {
		t.Fatalf("re-encoded filter does not decode: %v", err)
	}
	twice, _ := g.MarshalBinary()
	if !bytes.Equal(once, twice) {
		t.Fatal("encoding is not stable across a round trip")
	}
	f.TestString("x") // must not panic
	g.AddString("x")
}

// repairChecksums rewrites the checksums of a record (and of the link records inside a scalable
// one) to match its bytes, as far as its lengths allow, so that fuzzing reaches the validation
// behind the checksums instead of stopping at them.
func repairChecksums(data []byte) []byte {
	data = bytes.Clone(data)
	repairRecord(data)
	return data
}

// repairRecord repairs the record at the start of b and returns its length, or -1.
func repairRecord(b []byte) int {
	if len(b) < 64 {
		return -1
	}
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	payload := binary.LittleEndian.Uint64(b[32:])
	if payload > uint64(len(b)-64) || uint64(len(b)-64)-payload < 4 {
		return -1
	}
	end := 64 + int(payload)
	if b[10] == 3 && payload >= 16 { // scalable: repair the links first
		for off := 64 + 16; off+8 < end; {
			n := repairRecord(b[off+8 : end])
			if n < 0 {
				break
			}
			off += 8 + n
		}
	}
	binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[64:end], castagnoli))
	return end + 4
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FuzzDecode feeds raw bytes to Decode and DecodeBytes; the per-kind targets below repair the
// checksums of their input first, to reach the checks behind them.
func FuzzDecode(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := bloom.DecodeBytes(data)
		checkDecoded(t, g, err)
		// The streaming reader must agree with the byte decoder on what it accepts.
		r := bytes.NewReader(data)
		_, err2 := bloom.Decode(r)
		if err == nil && (err2 != nil || r.Len() != 0) || err != nil && err2 == nil && r.Len() == 0 {
			t.Fatalf("Decode (%v, %d bytes left) and DecodeBytes (%v) disagree", err2, r.Len(), err)
		}
	})
}

func FuzzUnmarshalBlocked(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = repairChecksums(data)
		var g bloom.Blocked
		err := g.UnmarshalBinary(data)
		checkDecoded(t, &g, err)
	})
}

func FuzzUnmarshalScalable(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = repairChecksums(data)
		var g bloom.Scalable
		err := g.UnmarshalBinary(data)
		if err != nil {
			checkDecoded(t, nil, err)
			return
		}
		checkDecoded(t, &g, nil)
	})
}

func FuzzUnmarshalCounting(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = repairChecksums(data)
		var g bloom.Counting
		err := g.UnmarshalBinary(data)
		checkDecoded(t, &g, err)
	})
}
