package persist

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// testRecords returns n records of varied shapes: adds, a chunk, an empty argument.
func testRecords(n int) [][][]byte {
	var recs [][][]byte
	for i := range n {
		var r [][]byte
		switch i % 4 {
		case 0:
			r = [][]byte{[]byte("BF.ADD"), []byte("k"), fmt.Appendf(nil, "item-%d", i)}
		case 1:
			r = [][]byte{[]byte("BF.MADD"), []byte("k2"), []byte("a"), {}, bytes.Repeat([]byte{byte(i)}, 300)}
		case 2:
			r = [][]byte{[]byte("PEXPIREAT"), []byte("k"), []byte("1700000000000")}
		default:
			r = [][]byte{[]byte("BF.LOADCHUNK"), []byte("k3"), []byte("17"), bytes.Repeat([]byte{0xff, 0}, 2000)}
		}
		recs = append(recs, r)
	}
	return recs
}

// buildLog returns a log file's bytes and the offset of each record.
func buildLog(recs [][][]byte) ([]byte, []int64) {
	b := LogHeader{Lineage: 42, Seq: 7, Created: 1}.append(nil)
	var offs []int64
	for _, r := range recs {
		offs = append(offs, int64(len(b)))
		b = appendRecord(b, r)
	}
	return b, offs
}

type scanResult struct {
	recs    [][][]byte
	torn    *Torn
	err     error
	hdrErr  error
	end     int64
	records int
}

func scan(data []byte) scanResult {
	sc, err := NewLogScanner(bytes.NewReader(data), int64(len(data)), "test.aof")
	if err != nil {
		return scanResult{hdrErr: err}
	}
	var res scanResult
	for sc.Next() {
		var r [][]byte
		for _, a := range sc.Argv() {
			r = append(r, bytes.Clone(a))
		}
		res.recs = append(res.recs, r)
	}
	res.torn, res.err, res.end, res.records = sc.Torn(), sc.Err(), sc.End(), sc.Records()
	return res
}

func sameRecords(a, b [][][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y [][]byte) bool { return slices.EqualFunc(x, y, bytes.Equal) })
}

func TestLogRoundTrip(t *testing.T) {
	recs := testRecords(50)
	data, _ := buildLog(recs)
	res := scan(data)
	if res.err != nil || res.torn != nil || res.hdrErr != nil {
		t.Fatalf("clean log: err %v, torn %v, header %v", res.err, res.torn, res.hdrErr)
	}
	if !sameRecords(res.recs, recs) || res.end != int64(len(data)) {
		t.Fatalf("read %d records ending at %d; want %d ending at %d", len(res.recs), res.end, len(recs), len(data))
	}
}

// TestLogTornTail cuts the log at every byte of its last two records: whatever is cut off is
// a torn tail, dropped, and everything before it is read.
func TestLogTornTail(t *testing.T) {
	recs := testRecords(6)
	data, offs := buildLog(recs)
	for cut := offs[4]; cut < int64(len(data)); cut++ {
		res := scan(data[:cut])
		want := 4
		if cut >= offs[5] {
			want = 5
		}
		if res.err != nil || !sameRecords(res.recs, recs[:want]) {
			t.Fatalf("cut at %d: %d records, err %v; want %d and no error", cut, len(res.recs), res.err, want)
		}
		if cut == offs[want] {
			if res.torn != nil {
				t.Fatalf("cut at a record boundary %d: torn %v", cut, res.torn)
			}
			continue
		}
		if res.torn == nil || res.torn.Offset != offs[want] || res.end != offs[want] {
			t.Fatalf("cut at %d: torn %v, end %d; want a torn record at %d", cut, res.torn, res.end, offs[want])
		}
	}
}

// TestLogZeroTail covers what a crash can leave after the last good record: zero bytes where a
// record was being written (the file grew, the data never came).
func TestLogZeroTail(t *testing.T) {
	recs := testRecords(5)
	data, offs := buildLog(recs)
	for _, n := range []int{1, 11, 12, 13, 4096, 70000} {
		res := scan(append(slices.Clone(data), make([]byte, n)...))
		if res.err != nil || res.torn == nil || res.torn.Offset != int64(len(data)) || !sameRecords(res.recs, recs) {
			t.Errorf("%d zero bytes after the log: err %v, torn %v, %d records", n, res.err, res.torn, len(res.recs))
		}
	}
	// The last record's bytes zeroed from some point on, or entirely.
	for _, from := range []int64{offs[4], offs[4] + 5, offs[4] + 12, offs[4] + 20} {
		d := slices.Clone(data)
		clear(d[from:])
		res := scan(append(d, make([]byte, 512)...))
		if res.err != nil || res.torn == nil || res.torn.Offset != offs[4] || !sameRecords(res.recs, recs[:4]) {
			t.Errorf("last record zeroed from %d: err %v, torn %v, %d records", from, res.err, res.torn, len(res.recs))
		}
	}
}

// TestLogFlippedBytes flips every byte of a log in turn. A flip in the header is corruption at
// offset 0; in a record followed by other records, corruption at that record's offset, with
// no record after it returned; in the last record's payload, a torn tail (a reader cannot tell
// a flip there from a torn write); in its header, corruption (a damaged header followed by data
// cannot be trusted to be the last record). Never a silent change of what is read.
func TestLogFlippedBytes(t *testing.T) {
	recs := testRecords(4)
	recs[3] = [][]byte{[]byte("DEL"), []byte("x")} // keep the file small
	data, offs := buildLog(recs)
	for i := range data {
		d := slices.Clone(data)
		d[i] ^= 0x40
		res := scan(d)
		var ce *CorruptError
		switch {
		case i < logHeaderSize:
			if !errors.As(res.hdrErr, &ce) || ce.Offset != 0 || !errors.Is(res.hdrErr, bloom.ErrCorrupt) {
				t.Fatalf("flip at %d (header): %v; want corruption at offset 0", i, res.hdrErr)
			}
		case int64(i) >= offs[3]+recHeaderSize:
			if res.err != nil || res.torn == nil || res.torn.Offset != offs[3] || !sameRecords(res.recs, recs[:3]) {
				t.Fatalf("flip at %d (last record): err %v, torn %v, %d records", i, res.err, res.torn, len(res.recs))
			}
		default:
			k, _ := slices.BinarySearch(offs, int64(i)+1)
			k-- // the record holding byte i
			if !errors.As(res.err, &ce) || ce.Offset != offs[k] || ce.File != "test.aof" || !sameRecords(res.recs, recs[:k]) {
				t.Fatalf("flip at %d (record %d at %d): err %v, %d records", i, k, offs[k], res.err, len(res.recs))
			}
			if !strings.Contains(ce.Error(), fmt.Sprintf("byte offset %d", offs[k])) {
				t.Fatalf("error does not name the offset: %v", ce)
			}
		}
	}
}

func TestLogTornHeader(t *testing.T) {
	data, _ := buildLog(nil)
	for cut := range len(data) {
		res := scan(data[:cut])
		if res.hdrErr != nil || res.torn == nil || res.torn.Offset != 0 || len(res.recs) != 0 {
			t.Fatalf("header cut at %d: header err %v, torn %v", cut, res.hdrErr, res.torn)
		}
	}
	res := scan(make([]byte, 4096))
	if res.hdrErr != nil || res.torn == nil || res.torn.Offset != 0 {
		t.Fatalf("zero-filled file: header err %v, torn %v", res.hdrErr, res.torn)
	}
	res = scan([]byte("*2\r\n$3\r\nDEL\r\n$1\r\nx\r\n" + strings.Repeat(" ", 40)))
	if res.hdrErr == nil || !strings.Contains(res.hdrErr.Error(), "not a bloomd append-only log") {
		t.Fatalf("a Redis AOF: %v", res.hdrErr)
	}
}

// TestLogHugeLength: a record header that declares more bytes than the file holds is never
// allocated for; with a good header checksum and nothing after, it is a cut-short record.
func TestLogHugeLength(t *testing.T) {
	data, offs := buildLog(testRecords(2))
	d := slices.Clone(data[:offs[1]])
	h := make([]byte, recHeaderSize)
	h[0], h[1], h[2], h[3] = 0xff, 0xff, 0xff, 0xf0
	copy(h[8:], le32(crc(h[:8])))
	d = append(d, h...)
	d = append(d, 1, 2, 3)
	res := scan(d)
	if res.err != nil || res.torn == nil || res.torn.Offset != offs[1] {
		t.Fatalf("huge declared length: err %v, torn %v", res.err, res.torn)
	}
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

func TestCountRecordsAfter(t *testing.T) {
	recs := testRecords(20)
	data, offs := buildLog(recs)
	for _, k := range []int{0, 7, 18} {
		d := slices.Clone(data)
		d[offs[k]+recHeaderSize+1] ^= 1
		n, err := countRecordsAfter(bytes.NewReader(d), offs[k]+1, int64(len(d)))
		if err != nil || n != len(recs)-k-1 {
			t.Errorf("damage in record %d: %d records found after it (%v), want %d", k, n, err, len(recs)-k-1)
		}
	}
}

func TestCheckLog(t *testing.T) {
	recs := testRecords(30)
	data, offs := buildLog(recs)
	dir := t.TempDir()
	path := filepath.Join(dir, "appendonly.aof.7")
	check := func(fix bool) (string, error) {
		var out bytes.Buffer
		err := CheckLog(path, fix, &out)
		return out.String(), err
	}

	os.WriteFile(path, data, 0o644)
	if out, err := check(false); err != nil || !strings.Contains(out, "30 records") || !strings.Contains(out, "OK") {
		t.Fatalf("good log: %v\n%s", err, out)
	}

	// Damage in record 10: refused, then fixed, losing records 10..29.
	d := slices.Clone(data)
	d[offs[10]+recHeaderSize+3] ^= 0xff
	os.WriteFile(path, d, 0o644)
	out, err := check(false)
	rest := int64(len(d)) - offs[10]
	want := fmt.Sprintf("%s: 10 good records, then damage at byte offset %d: record checksum mismatch (%d bytes from there to the end of the log).\n"+
		"Those %d bytes hold the damaged record and 19 more well-formed records after it; a repair loses 20 records.\n"+
		"To truncate the log at byte offset %d (keeping 10 good records), run again with --fix.\n", path, offs[10], rest, rest, offs[10])
	if !errors.Is(err, ErrDamaged) || out != want {
		t.Fatalf("damaged log: %v\n%s\nwant\n%s", err, out, want)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(d)) {
		t.Fatal("check without --fix changed the file")
	}
	out, err = check(true)
	if err != nil || !strings.Contains(out, "Records lost: 20") {
		t.Fatalf("fix: %v\n%s", err, out)
	}
	fixed, _ := os.ReadFile(path)
	if !bytes.Equal(fixed, data[:offs[10]]) {
		t.Fatalf("fixed log is %d bytes, want the first %d", len(fixed), offs[10])
	}
	// What was cut is kept beside the log, byte for byte.
	removed := fmt.Sprintf("%s.removed-from-%d", path, offs[10])
	if kept, err := os.ReadFile(removed); err != nil || !bytes.Equal(kept, d[offs[10]:]) || !strings.Contains(out, "kept in "+removed) {
		t.Fatalf("the bytes cut are not kept in %s (%v):\n%s", removed, err, out)
	}
	// A second repair that cuts at the same offset keeps its bytes under a new name.
	os.WriteFile(path, d, 0o644)
	if out, err := check(true); err != nil || !strings.Contains(out, "kept in "+removed+".2") {
		t.Fatalf("second fix: %v\n%s", err, out)
	}
	if kept, _ := os.ReadFile(removed); !bytes.Equal(kept, d[offs[10]:]) {
		t.Fatal("the first file of cut bytes was overwritten")
	}
	if res := scan(fixed); !sameRecords(res.recs, recs[:10]) || res.torn != nil || res.err != nil {
		t.Fatalf("fixed log: %d records, torn %v, err %v", len(res.recs), res.torn, res.err)
	}

	if got := count(1, "good record") + ", " + count(int64(2), "byte") + ", " + count(0, "record"); got != "1 good record, 2 bytes, 0 records" {
		t.Errorf("count: %q", got)
	}

	// A torn tail: reported, not an error; --fix truncates it.
	os.WriteFile(path, data[:len(data)-5], 0o644)
	if out, err := check(false); err != nil || !strings.Contains(out, "torn record at byte offset "+fmt.Sprint(offs[29])) {
		t.Fatalf("torn log: %v\n%s", err, out)
	}
	if out, err := check(true); err != nil || !strings.Contains(out, "29 records") {
		t.Fatalf("fix torn log: %v\n%s", err, out)
	}
	if fi, _ := os.Stat(path); fi.Size() != offs[29] {
		t.Fatalf("torn log fixed to %d bytes, want %d", fi.Size(), offs[29])
	}
}
