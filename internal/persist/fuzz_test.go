package persist

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
)

// FuzzLogScanner reads arbitrary bytes as a log. It must never panic or allocate beyond the
// input; what it returns must be exactly what the input encodes: the records re-encode to the
// input's bytes up to End, a torn tail is followed by nothing but its own bytes and zeros,
// and damage is reported at a record boundary within the input.
func FuzzLogScanner(f *testing.F) {
	data, offs := buildLog(testRecords(5))
	f.Add(data)
	f.Add(data[:offs[3]+7])
	f.Add(append(bytes.Clone(data), make([]byte, 100)...))
	d := bytes.Clone(data)
	d[offs[2]+13] ^= 1
	f.Add(d)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		res := scan(data)
		if res.hdrErr != nil {
			if !errors.Is(res.hdrErr, bloom.ErrCorrupt) {
				t.Fatalf("header error outside the corruption category: %v", res.hdrErr)
			}
			return
		}
		if res.end < 0 || res.end > int64(len(data)) {
			t.Fatalf("End %d outside the input of %d bytes", res.end, len(data))
		}
		if len(res.recs) != res.records {
			t.Fatalf("%d records returned, %d counted", len(res.recs), res.records)
		}
		// Re-encode: the good part of the input is exactly the header and these records.
		if res.end >= logHeaderSize {
			b := bytes.Clone(data[:logHeaderSize])
			for _, r := range res.recs {
				b = appendRecord(b, r)
			}
			if !bytes.Equal(b, data[:res.end]) {
				t.Fatalf("records do not re-encode to the first %d bytes", res.end)
			}
		} else if len(res.recs) != 0 {
			t.Fatal("records without a header")
		}
		switch {
		case res.err != nil:
			var ce *CorruptError
			if !errors.As(res.err, &ce) || ce.Offset != res.end {
				t.Fatalf("damage %v not reported at the end of the good part (%d)", res.err, res.end)
			}
		case res.torn != nil:
			if res.torn.Offset != res.end || res.torn.Bytes != int64(len(data))-res.end {
				t.Fatalf("torn %+v does not cover %d..%d", res.torn, res.end, len(data))
			}
		default:
			if res.end != int64(len(data)) {
				t.Fatalf("clean end at %d of %d", res.end, len(data))
			}
		}
	})
}

// FuzzReadSnapshot reads arbitrary bytes as a snapshot with a small memory limit. It must never
// panic or allocate beyond the input and the limit; errors are corruption or the limit's; and
// writing back what it loaded gives a snapshot that loads and writes back to the same bytes
// (the input's own bytes where it is in the current version and stores no block of zeros).
func FuzzReadSnapshot(f *testing.F) {
	items := testItems(f, false)
	data := writeSnap(f, items)
	f.Add(data)
	f.Add(writeSnap(f, items[:1]))
	f.Add(writeSnap(f, items[4:]))
	f.Add(writeSnap(f, nil))
	f.Add(data[:len(data)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &chainSink{limit: 1 << 20}
		h, _, err := ReadSnapshot(bytes.NewReader(data), int64(len(data)), "fuzz.bdb", s)
		if err != nil {
			if !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, bloom.ErrTooLarge) && s.used == 0 {
				t.Logf("non-corruption error: %v", err)
			}
			return
		}
		var b bytes.Buffer
		if _, err := WriteSnapshot(&b, h, s.complete()); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b.Bytes(), data) {
			return
		}
		s2 := &chainSink{limit: 1 << 20}
		h2, _, err := ReadSnapshot(bytes.NewReader(b.Bytes()), int64(b.Len()), "rewrite.bdb", s2)
		if err != nil || h2 != h {
			t.Fatalf("the rewrite of an accepted snapshot does not load: %v", err)
		}
		var b2 bytes.Buffer
		if _, err := WriteSnapshot(&b2, h2, s2.complete()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), b2.Bytes()) {
			t.Fatalf("accepted snapshot of %d bytes rewrites to %d bytes, then to %d others", len(data), b.Len(), b2.Len())
		}
	})
}

// TestWriteFuzzSeeds regenerates the seed corpora in testdata/fuzz from the current formats
// when BLOOM_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("BLOOM_WRITE_SEEDS") != "1" {
		t.Skip("set BLOOM_WRITE_SEEDS=1 to regenerate testdata/fuzz")
	}
	write := func(target, name string, data []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.MkdirAll(dir, 0o755)
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, offs := buildLog(testRecords(8))
	write("FuzzLogScanner", "good", data)
	write("FuzzLogScanner", "torn", data[:offs[7]+5])
	write("FuzzLogScanner", "zero-tail", append(bytes.Clone(data), make([]byte, 64)...))
	d := bytes.Clone(data)
	d[offs[3]+recHeaderSize+2] ^= 0x10
	write("FuzzLogScanner", "damaged-middle", d)
	write("FuzzLogScanner", "torn-header", data[:20])

	ch, _ := redisbloom.NewChain(20, 0.01, 2, false, nil)
	for i := range 100 {
		ch.Add(fmt.Appendf(nil, "%d", i))
	}
	snap := writeSnap(t, []Item{
		{Key: "f", Chain: ch, Header: ch.Header(), Expire: 1700000000000},
		{Key: "s", Value: []byte("v")},
	})
	write("FuzzReadSnapshot", "good", snap)
	write("FuzzReadSnapshot", "cut", snap[:len(snap)-9])
	write("FuzzReadSnapshot", "empty", writeSnap(t, nil))
}
