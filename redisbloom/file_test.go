package redisbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

func writeDump(t testing.TB, c *Chain) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := c.WriteTo(&b)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteTo: %d, %v (wrote %d)", n, err, b.Len())
	}
	return b.Bytes()
}

func TestDumpFileRoundTrip(t *testing.T) {
	for _, r := range recordings {
		c := loadRecorded(t, r.name)
		file := writeDump(t, c)
		d, err := ReadDump(bytes.NewReader(file), nil)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		var want, got [][]byte
		for _, data := range c.Chunks() {
			want = append(want, data)
		}
		for _, data := range d.Chunks() {
			got = append(got, data)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("%s: the file does not reproduce the dump", r.name)
		}
	}
}

// TestDumpFileLayout pins the documented layout on the smallest recorded filter.
func TestDumpFileLayout(t *testing.T) {
	file := writeDump(t, loadRecorded(t, "docex"))
	hdr, chunk := readDump(t, "dump-docex-1.bin"), readDump(t, "dump-docex-9.bin")
	le := binary.LittleEndian
	var want []byte
	want = append(want, "\x89BFDUMP\n"...)
	want = le.AppendUint32(want, 1)                // version
	want = le.AppendUint32(want, 1)                // one chunk record
	want = le.AppendUint32(want, uint32(len(hdr))) // header length
	want = append(want, hdr...)
	want = le.AppendUint32(want, crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli)))
	want = le.AppendUint64(want, 9)
	want = le.AppendUint32(want, 8)
	want = append(want, chunk...)
	want = le.AppendUint32(want, crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli)))
	if !bytes.Equal(file, want) {
		t.Errorf("file\n%x\nwant\n%x", file, want)
	}
}

// TestDumpFileLargeLink round-trips a link larger than one chunk.
func TestDumpFileLargeLink(t *testing.T) {
	if testing.Short() {
		t.Skip("27 MB filter")
	}
	c := mustChain(t, 20_000_000, 0.01, 2, false)
	addAll(t, c, items("big-", 1000))
	file := writeDump(t, c)
	if records := binary.LittleEndian.Uint32(file[12:]); records != 2 {
		t.Errorf("%d records, want 2 (16 MiB + rest)", records)
	}
	d, err := ReadDump(bytes.NewReader(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range items("big-", 1000) {
		if !d.Exists(k) {
			t.Fatalf("%s lost", k)
		}
	}
	if !bytes.Equal(writeDump(t, d), file) {
		t.Errorf("re-encoding differs")
	}
}

// reseal recomputes both checksums of a dump file, so that tests can reach the checks behind them.
func reseal(file []byte) []byte {
	le := binary.LittleEndian
	tab := crc32.MakeTable(crc32.Castagnoli)
	hend := 20 + int(le.Uint32(file[16:]))
	le.PutUint32(file[hend:], crc32.Checksum(file[:hend], tab))
	le.PutUint32(file[len(file)-4:], crc32.Checksum(file[:len(file)-4], tab))
	return file
}

func TestReadDumpErrors(t *testing.T) {
	good := writeDump(t, loadRecorded(t, "scaled"))
	le := binary.LittleEndian
	hend := 20 + int(le.Uint32(good[16:])) + 4 // first record
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
		msg    string
	}{
		{"empty", func(b []byte) []byte { return nil }, bloom.ErrCorrupt, "truncated"},
		{"magic", func(b []byte) []byte { b[1] = 'X'; return b }, bloom.ErrCorrupt, "magic"},
		{"version", func(b []byte) []byte { le.PutUint32(b[8:], 2); return b }, bloom.ErrCorrupt, "version"},
		{"header length", func(b []byte) []byte { le.PutUint32(b[16:], 1<<31); return b }, bloom.ErrCorrupt, "exceeds"},
		{"header checksum", func(b []byte) []byte { b[25]++; return b }, bloom.ErrCorrupt, "header checksum"},
		{"header content", func(b []byte) []byte { b[20+8]++; return reseal(b) }, ErrBadData, "header is"},
		{"record iterator", func(b []byte) []byte { le.PutUint64(b[hend:], 34); return reseal(b) }, bloom.ErrCorrupt, "does not continue"},
		{"record length", func(b []byte) []byte { le.PutUint32(b[hend+8:], 1<<30); return reseal(b) }, bloom.ErrCorrupt, "does not continue"},
		{"too few records", func(b []byte) []byte { le.PutUint32(b[12:], 3); return b }, bloom.ErrCorrupt, ""},
		{"too many records", func(b []byte) []byte { le.PutUint32(b[12:], 5); return b }, bloom.ErrCorrupt, ""},
		{"chunk bit", func(b []byte) []byte { b[hend+12] ^= 1; return b }, bloom.ErrCorrupt, "dump checksum"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, bloom.ErrCorrupt, "truncated"},
	}
	for _, tc := range cases {
		_, err := ReadDump(bytes.NewReader(tc.mutate(bytes.Clone(good))), nil)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.msg)
		}
	}
	// A records count of 3 with a resealed file: the records end before the sub-filters do.
	b := bytes.Clone(good)
	le.PutUint32(b[12:], 3)
	b = reseal(b)
	if _, err := ReadDump(bytes.NewReader(b), nil); !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), "cover") {
		t.Errorf("records missing: %v", err)
	}
	// Read errors other than EOF are reported as such, not as corruption.
	boom := errors.New("disk on fire")
	if _, err := ReadDump(io.MultiReader(bytes.NewReader(good[:30]), errReader{boom}), nil); !errors.Is(err, boom) || errors.Is(err, bloom.ErrCorrupt) {
		t.Errorf("read error: %v", err)
	}
	// The Reserve hook sees the header's Size before anything is allocated.
	if _, err := ReadDump(bytes.NewReader(good), &Options{Reserve: func(uint64) error { return errOOM }}); err != errOOM {
		t.Errorf("Reserve refusal: %v", err)
	}
	// Write errors are returned.
	if _, err := loadRecorded(t, "scaled").WriteTo(errWriter{boom}); !errors.Is(err, boom) {
		t.Errorf("write error: %v", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }
