package redisbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bloomd/bloom"
)

// The fuzz targets are seeded from RedisBloom's recorded dumps (testdata/dump-*.bin) and from
// testdata/fuzz. Each bounds memory through the Reserve hook, as a server would.

var errBudget = errors.New("fuzz memory budget exceeded")

func budget(limit uint64) *Options {
	return &Options{Reserve: func(n uint64) error {
		if n > limit {
			return errBudget
		}
		return nil
	}}
}

func recordedHeaders(t testing.TB) [][]byte {
	var hs [][]byte
	for _, r := range recordings {
		hs = append(hs, readDump(t, "dump-"+r.name+"-1.bin"))
	}
	return hs
}

// FuzzLoadHeader: any bytes are refused with a clear error or load into a chain whose header
// is exactly those bytes, and which then works.
func FuzzLoadHeader(f *testing.F) {
	for _, h := range recordedHeaders(f) {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := LoadHeader(data, budget(1<<20))
		if err != nil {
			if !errors.Is(err, ErrBadData) && !errors.Is(err, bloom.ErrTooLarge) && err != errBudget {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if !bytes.Equal(c.Header(), data) {
			t.Fatalf("header does not round-trip:\n%x\n%x", c.Header(), data)
		}
		if next, h := c.ScanDump(0); next != 1 || !bytes.Equal(h, data) {
			t.Fatalf("ScanDump(0) differs from the header")
		}
		var total uint64
		for _, l := range c.Links() {
			total += l.Bytes
		}
		covered := uint64(0)
		for it, chunk := range c.Chunks() {
			if it > 1 {
				covered += uint64(len(chunk))
			}
		}
		if covered != total || c.Size() != 32+64*uint64(c.NumFilters())+total {
			t.Fatalf("chunks cover %d of %d bytes; Size %d", covered, total, c.Size())
		}
		for i := range 20 {
			item := fmt.Appendf(nil, "fuzz-%d", i)
			ok, err := c.Add(item)
			if err != nil {
				if !errors.Is(err, ErrFull) && !errors.Is(err, ErrCannotGrow) && err != errBudget {
					t.Fatalf("Add: unexpected error %v", err)
				}
				break
			}
			if !c.Exists(item) {
				t.Fatalf("Add(%s) = %v, then absent", item, ok)
			}
		}
	})
}

// chunkOps encodes LoadChunk calls for FuzzLoadChunks: int64 iterator, uint16 length, data.
func chunkOps(iters []int64, chunks [][]byte) []byte {
	var b []byte
	for i := range iters {
		b = binary.LittleEndian.AppendUint64(b, uint64(iters[i]))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(chunks[i])))
		b = append(b, chunks[i]...)
	}
	return b
}

// FuzzLoadChunks applies a sequence of chunks to a chain loaded from a header and compares the
// result with a model of RedisBloom's SBChain_LoadEncodedChunk over one flat byte array: the
// same calls must fail with the same errors, and the bytes must end up the same.
func FuzzLoadChunks(f *testing.F) {
	for _, r := range recordings {
		iters, chunks := dumpFiles(f, r.name)
		f.Add(chunks[0], chunkOps(iters[1:], chunks[1:]))
		slices.Reverse(iters[1:])
		slices.Reverse(chunks[1:])
		f.Add(chunks[0], chunkOps(iters[1:], chunks[1:]))
	}
	hdr := readDump(f, "dump-scaled-1.bin")
	f.Add(hdr, chunkOps([]int64{1, 0, -1, 33, 34, 553, 554, 240}, [][]byte{{1}, {2}, {}, {3}, {4, 5}, {6}, {}, make([]byte, 145)}))
	f.Fuzz(func(t *testing.T, header, ops []byte) {
		c, err := LoadHeader(header, budget(1<<20))
		if err != nil {
			return
		}
		var ends []uint64 // end offset of each link in the flat array
		var total uint64
		for _, l := range c.Links() {
			total += l.Bytes
			ends = append(ends, total)
		}
		model := make([]byte, total)
		for len(ops) >= 10 {
			it := int64(binary.LittleEndian.Uint64(ops))
			n := min(int(binary.LittleEndian.Uint16(ops[8:])), len(ops)-10)
			data := ops[10 : 10+n]
			ops = ops[10+n:]

			var want error
			start := it - int64(n) // the chunk's first byte is start-1
			switch {
			case it <= 0 || it < int64(n):
				want = ErrBadData
			case start < 1 || uint64(start-1) >= total:
				want = ErrNoLink
			default:
				pos := uint64(start - 1)
				end := ends[0]
				for _, e := range ends {
					if pos < e {
						end = e
						break
					}
				}
				if pos+uint64(n) > end {
					want = ErrChunkTooBig
				} else {
					copy(model[pos:], data)
				}
			}
			err := c.LoadChunk(it, data)
			if want == nil && err != nil || want != nil && !errors.Is(err, want) {
				t.Fatalf("LoadChunk(%d, %d bytes) = %v, model says %v", it, n, err, want)
			}
		}
		var got []byte
		for it, chunk := range c.Chunks() {
			if it > 1 {
				got = append(got, chunk...)
			}
		}
		if !bytes.Equal(got, model) {
			t.Fatalf("bit arrays differ from the model")
		}
	})
}

// FuzzReadDump: any bytes are refused as corrupt (or too large) or decode to a chain whose own
// dump file decodes to the same chain.
func FuzzReadDump(f *testing.F) {
	for _, r := range recordings {
		c, err := LoadChunks(loadRecordedSeq(f, r.name), nil)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadDump(bytes.NewReader(data), budget(1<<20))
		if err != nil {
			if !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, bloom.ErrTooLarge) && err != errBudget {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		d, err := ReadDump(&b, nil)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !bytes.Equal(c.Header(), d.Header()) {
			t.Fatalf("headers differ after a round trip")
		}
		for it, chunk := range c.Chunks() {
			if _, other := d.ScanDump(it - int64(len(chunk))); it > 1 && !bytes.Equal(chunk, other) {
				t.Fatalf("chunk %d differs after a round trip", it)
			}
		}
	})
}

func loadRecordedSeq(t testing.TB, name string) func(func(int64, []byte) bool) {
	iters, chunks := dumpFiles(t, name)
	return func(yield func(int64, []byte) bool) {
		for i := range iters {
			if !yield(iters[i], chunks[i]) {
				return
			}
		}
	}
}
