package bloom_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// header returns a native classic header with the given fields and a valid checksum, so tests can
// craft files whose only fault is the one under test.
func header(version uint16, kind, scheme byte, k uint32, m, payload uint64) []byte {
	b := make([]byte, 64)
	copy(b, "\x89BLOOM\r\n")
	binary.LittleEndian.PutUint16(b[8:], version)
	b[10], b[11] = kind, scheme
	binary.LittleEndian.PutUint32(b[12:], k)
	binary.LittleEndian.PutUint64(b[16:], m)
	binary.LittleEndian.PutUint64(b[32:], payload)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestDecodeRefusesDamage(t *testing.T) {
	f, _ := bloom.New(100, 0.01)
	f.AddString("x")
	good, _ := f.MarshalBinary()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"short header", good[:30], "truncated header: 30 of 64"},
		{"bad magic", append([]byte("BLOOMXXX"), good[8:]...), "bad magic"},
		{"future version", header(2, 1, 1, 7, 1024, 128), "format version 2"},
		{"header checksum", append(append(bytes.Clone(good[:20]), good[20]^1), good[21:]...), "header checksum"},
		{"unknown scheme", header(1, 1, 77, 7, 1024, 128), "unknown hashing scheme"},
		{"k zero", header(1, 1, 1, 0, 1024, 128), "k=0"},
		{"m beyond payload", header(1, 1, 1, 7, 1025, 128), "does not match"},
		{"payload mismatch", header(1, 1, 1, 7, 1024, 64), "does not match"},
		{"truncated payload", good[:100], "truncated payload"},
		{"payload checksum", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^0x80), "payload checksum"},
		{"missing trailer", good[:len(good)-4], "truncated payload checksum"},
		{"trailing byte", append(bytes.Clone(good), 0), "unexpected bytes"},
	} {
		var g bloom.Filter
		err := g.UnmarshalBinary(c.data)
		if !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrCorrupt mentioning %q", c.name, err, c.want)
		}
	}
}

// A header may promise a huge payload; reading a short stream must fail on truncation without
// allocating what the header promised.
func TestDecodeHugeClaimAllocatesLittle(t *testing.T) {
	const m = 1 << 36 // 8 GiB of bits claimed
	data := append(header(1, 1, 1, 7, m, m/8), make([]byte, 1000)...)
	var before, after runtimeMem
	before.read()
	var g bloom.Filter
	if err := g.UnmarshalBinary(data); !errors.Is(err, bloom.ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	after.read()
	if grew := after.total - before.total; grew > 4<<20 {
		t.Errorf("decoding a 1 KB stream that claims 8 GiB allocated %d bytes", grew)
	}
	// Beyond the machine's memory the header is refused before any payload is read.
	huge := header(1, 1, 1, 7, 1<<55, 1<<52)
	if err := g.UnmarshalBinary(huge); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("a 512 TiB claim: got %v, want ErrTooLarge", err)
	}
}

func TestReadFromStopsAfterOneRecord(t *testing.T) {
	a, _ := bloom.New(100, 0.01)
	b, _ := bloom.New(1000, 0.001)
	a.AddString("a")
	b.AddString("b")
	var buf bytes.Buffer
	na, _ := a.WriteTo(&buf)
	nb, _ := b.WriteTo(&buf)
	var ra, rb bloom.Filter
	if n, err := ra.ReadFrom(&buf); err != nil || n != na {
		t.Fatalf("first ReadFrom = %d, %v; want %d", n, err, na)
	}
	if n, err := rb.ReadFrom(&buf); err != nil || n != nb {
		t.Fatalf("second ReadFrom = %d, %v; want %d", n, err, nb)
	}
	if !ra.Equal(a) || !rb.Equal(b) {
		t.Fatal("records read back differ")
	}
	if _, err := rb.ReadFrom(&buf); !errors.Is(err, bloom.ErrCorrupt) {
		t.Errorf("ReadFrom at end of stream: %v", err)
	}
	// A failed read leaves the filter as it was.
	if !rb.Equal(b) {
		t.Error("failed ReadFrom changed the filter")
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		n := w.after
		w.after = 0
		return n, io.ErrShortWrite
	}
	w.after -= len(p)
	return len(p), nil
}

func TestWriteToReportsErrors(t *testing.T) {
	f, _ := bloom.New(100_000, 0.01)
	for _, after := range []int{0, 10, 64, 1000, 100_000} {
		if _, err := f.WriteTo(&failingWriter{after: after}); err == nil {
			t.Errorf("WriteTo with a writer failing after %d bytes returned no error", after)
		}
	}
}

// FuzzUnmarshalBinary: arbitrary bytes must decode or fail with ErrCorrupt or ErrTooLarge, never
// panic, and a successful decode must re-encode to a filter that decodes to itself. The checksums
// are repaired first, so that fuzzing reaches the size checks behind them (FuzzDecode feeds the
// bytes as they are).
func FuzzUnmarshalBinary(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/native/*.bloom")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(header(1, 1, 1, 7, 1<<40, 1<<37))
	f.Fuzz(func(t *testing.T, data []byte) {
		data = repairChecksums(data)
		var g bloom.Filter
		if err := g.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, bloom.ErrTooLarge) {
				t.Fatalf("decoding failed with an error that is neither ErrCorrupt nor ErrTooLarge: %v", err)
			}
			return
		}
		again, err := g.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var h bloom.Filter
		if err := h.UnmarshalBinary(again); err != nil || !h.Equal(&g) {
			t.Fatalf("re-encoded filter does not decode to itself: %v", err)
		}
	})
}
