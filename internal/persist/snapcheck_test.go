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
	"github.com/bloomd/bloom/redisbloom"
)

// sectionOffsets returns the offset of each key's section in a snapshot that loads, and of its
// end section last.
func sectionOffsets(t *testing.T, data []byte) []int64 {
	t.Helper()
	s := scanSnapshot(bytes.NewReader(data), int64(len(data)), "x")
	if !s.ok() {
		t.Fatalf("the snapshot does not check: %+v", s.damage)
	}
	var offs []int64
	for _, sec := range s.sections {
		offs = append(offs, sec.off)
	}
	return append(offs, s.end.off)
}

func checkSnap(t *testing.T, path string, fix bool) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := CheckLog(path, fix, &out)
	return out.String(), err
}

// TestCheckSnapshot: check-aof on a snapshot says it is one and checks every section; on a
// snapshot with one damaged filter among several it names the key, and --fix writes a snapshot
// of every other key, bit for bit, keeping the damaged file beside it.
func TestCheckSnapshot(t *testing.T) {
	items := testItems(t, false)
	data := writeSnap(t, items)
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.bdb")
	os.WriteFile(path, data, 0o644)
	out, err := checkSnap(t, path, false)
	if err != nil || !strings.Contains(out, "a bloomd snapshot (format 2") || !strings.Contains(out, "followed by log 3") ||
		!strings.Contains(out, "10 keys (4 Bloom filters, 2 cuckoo filters, 3 strings, 1 hash), every checksum right: OK") {
		t.Fatalf("good snapshot: %v\n%s", err, out)
	}

	offs := sectionOffsets(t, data)
	for _, tc := range []struct {
		name    string
		victim  int   // the damaged key's index in items
		at      int64 // the damaged byte, from the start of its section
		lost    string
		keyKnow bool // the damage is past the key, which the report names
	}{
		{"a filter's bits", 1, -40, `Lost: "grown".`, true}, // in its last piece
		{"a filter's key", 2, 40, "Lost: the keys of 1 section too damaged to read.", false},
		{"a cuckoo filter's slots", 8, -10, `Lost: "cuckoo".`, true},
		{"a string", 4, 35, "Lost: the keys of 1 section too damaged to read.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := bytes.Clone(data)
			pos := offs[tc.victim] + tc.at
			if tc.at < 0 {
				pos = offs[tc.victim+1] + tc.at
			}
			d[pos] ^= 0x20
			os.WriteFile(path, d, 0o644)
			if _, _, err := readSnap(d, 0); !errors.Is(err, bloom.ErrCorrupt) {
				t.Fatalf("the damaged snapshot loads: %v", err)
			}
			out, err := checkSnap(t, path, false)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(out, "Intact: 9 keys") || !strings.Contains(out, tc.lost) {
				t.Fatalf("damaged snapshot: %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, d) {
				t.Fatal("check without --fix changed the file")
			}
			out, err = checkSnap(t, path, true)
			if err != nil || !strings.Contains(out, "kept as "+path+".damaged") {
				t.Fatalf("fix: %v\n%s", err, out)
			}
			if kept, _ := os.ReadFile(path + ".damaged"); !bytes.Equal(kept, d) {
				t.Fatal("the damaged file is not kept as it was")
			}
			fixed, _ := os.ReadFile(path)
			h, got, err := readSnap(fixed, 0)
			if err != nil || h != (SnapshotHeader{Lineage: 9, LogSeq: 3, Created: 1700000000123}) {
				t.Fatalf("the repaired snapshot does not load: %v %+v", err, h)
			}
			want := slices.Delete(slices.Clone(items), tc.victim, tc.victim+1)
			sameItems(t, got, want)
			if out, err := checkSnap(t, path, false); err != nil || !strings.Contains(out, "OK") {
				t.Fatalf("check after --fix: %v\n%s", err, out)
			}
			os.Remove(path + ".damaged")
		})
	}

	// Two damaged filters, and a file cut short: every intact key is kept; an earlier kept file
	// is never overwritten.
	d := bytes.Clone(data)
	d[offs[0]+40] ^= 1
	d[offs[6]-7] ^= 1
	d = d[:len(d)-10]
	os.WriteFile(path, d, 0o644)
	os.WriteFile(path+".damaged", []byte("earlier"), 0o644)
	out, err = checkSnap(t, path, true)
	if err != nil || !strings.Contains(out, "Intact: 8 keys") || !strings.Contains(out, "kept as "+path+".damaged.2") {
		t.Fatalf("two damaged keys and a cut end: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(path + ".damaged"); string(b) != "earlier" {
		t.Fatal("an existing file was overwritten")
	}
	fixed, _ := os.ReadFile(path)
	_, got, err := readSnap(fixed, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, got, append(slices.Clone(items[1:5]), items[6:]...))
}

// TestCheckSnapshotHeader: a snapshot whose header is damaged is recognised but not repaired,
// and a Redis RDB file is named as one.
func TestCheckSnapshotHeader(t *testing.T) {
	data := writeSnap(t, testItems(t, false))
	path := filepath.Join(t.TempDir(), "dump.bdb")
	data[20] ^= 1
	os.WriteFile(path, data, 0o644)
	if out, err := checkSnap(t, path, true); !errors.Is(err, ErrDamaged) || !strings.Contains(out, "header is damaged") {
		t.Fatalf("damaged header: %v\n%s", err, out)
	}
	os.WriteFile(path, []byte("REDIS0010\xfa\x09redis-ver"), 0o644)
	if out, err := checkSnap(t, path, false); !errors.Is(err, ErrDamaged) || !strings.Contains(out, "a Redis RDB file") {
		t.Fatalf("RDB: %v\n%s", err, out)
	}
}

// TestCuckooSubBytes: the sizes the check computes are those bloom gives the filter.
func TestCuckooSubBytes(t *testing.T) {
	for _, info := range []bloom.CuckooInfo{
		{Buckets: 512, Filters: 1, BucketSize: 2, MaxIterations: 20, Expansion: 1},
		{Buckets: 8, Filters: 5, BucketSize: 4, MaxIterations: 20, Expansion: 2},
		{Buckets: 16, Filters: 3, BucketSize: 3, MaxIterations: 20, Expansion: 7},
		{Buckets: 64, Filters: 1, BucketSize: 1, MaxIterations: 1, Expansion: 0},
	} {
		c, err := bloom.NewCuckooFromInfo(info, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cuckooSubBytes(info), c.FilterBytes(); !slices.Equal(got, want) {
			t.Errorf("%+v: %v, want %v", info, got, want)
		}
	}
}

// FuzzCheckSnapshot checks arbitrary bytes as a snapshot. It must never panic nor allocate
// beyond the input; it agrees with ReadSnapshot on whether the input loads; and when the header
// is intact, the snapshot that --fix would write loads, holding exactly the sections the check
// found intact.
func FuzzCheckSnapshot(f *testing.F) {
	items := testItems(f, false)
	data := writeSnap(f, items)
	f.Add(data)
	f.Add(writeSnap(f, nil))
	f.Add(data[:len(data)/2])
	d := bytes.Clone(data)
	d[len(d)/3] ^= 4
	f.Add(d)
	ch, _ := redisbloom.NewChain(20, 0.01, 2, false, nil)
	for i := range 50 {
		ch.Add(fmt.Appendf(nil, "%d", i))
	}
	var plain bytes.Buffer
	WritePlainSnapshot(&plain, SnapshotHeader{Lineage: 1, LogSeq: 1}, []Item{{Key: "f", Chain: ch, Header: ch.Header()}, {Key: "s", Value: []byte("v")}})
	f.Add(plain.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		s := scanSnapshot(bytes.NewReader(data), int64(len(data)), "fuzz.bdb")
		sink := &chainSink{limit: 1 << 20}
		_, _, err := ReadSnapshot(bytes.NewReader(data), int64(len(data)), "fuzz.bdb", sink)
		if err == nil && !s.ok() {
			t.Fatalf("ReadSnapshot loads it, the check finds %+v (header %v)", s.damage, s.hdrErr)
		}
		if err != nil && errors.Is(err, bloom.ErrCorrupt) && s.ok() {
			t.Fatalf("the check finds it intact, ReadSnapshot: %v", err)
		}
		if s.hdrErr != nil {
			return
		}
		var b bytes.Buffer
		b.Write(data[:snapHeaderSize])
		for _, sec := range s.sections {
			b.Write(data[sec.off:sec.end])
		}
		b.Write(appendSection(nil, kindEnd, 0, 0, 0, uint64(len(s.sections))))
		sink = &chainSink{limit: 1 << 20}
		_, st, err := ReadSnapshot(bytes.NewReader(b.Bytes()), int64(b.Len()), "salvaged.bdb", sink)
		if err != nil && errors.Is(err, bloom.ErrCorrupt) {
			t.Fatalf("the salvaged snapshot does not load: %v", err)
		}
		if err == nil && st.Keys != len(s.sections) {
			t.Fatalf("the salvaged snapshot holds %d keys, the check kept %d", st.Keys, len(s.sections))
		}
	})
}
