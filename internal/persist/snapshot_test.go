package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/value"
	"github.com/bloomd/bloom/redisbloom"
)

// chainSink loads a snapshot into chains made by redisbloom.LoadHeader, with a memory limit, as
// the server's keyspace does.
type chainSink struct {
	items []Item
	limit uint64
	used  uint64
}

func (s *chainSink) Filter(key []byte, expire int64, header []byte) (*redisbloom.Chain, error) {
	ch, err := redisbloom.LoadHeader(header, &redisbloom.Options{Reserve: func(n uint64) error {
		if s.limit > 0 && s.used+n > s.limit {
			return errors.New("over the test's memory limit")
		}
		s.used += n
		return nil
	}})
	if err != nil {
		return nil, err
	}
	s.items = append(s.items, Item{Key: string(key), Expire: expire, Chain: ch})
	return ch, nil
}

func (s *chainSink) Cuckoo(key []byte, expire int64, header []byte) (*bloom.Cuckoo, error) {
	c, err := redisbloom.LoadCFHeader(header, &bloom.CuckooOptions{Reserve: func(n uint64) error {
		if s.limit > 0 && s.used+n > s.limit {
			return errors.New("over the test's memory limit")
		}
		s.used += n
		return nil
	}})
	if err != nil {
		return nil, err
	}
	s.items = append(s.items, Item{Key: string(key), Expire: expire, Cuckoo: c})
	return c, nil
}

func (s *chainSink) reserve(n uint64) error {
	if s.limit > 0 && s.used+n > s.limit {
		return fmt.Errorf("%w: over the test's memory limit", ErrNoMemory)
	}
	s.used += n
	return nil
}

func (s *chainSink) BuildFilter(key []byte, expire int64, build func(*redisbloom.Options) (*redisbloom.Chain, error)) error {
	ch, err := build(&redisbloom.Options{Reserve: s.reserve})
	if err != nil {
		return err
	}
	s.items = append(s.items, Item{Key: string(key), Expire: expire, Chain: ch})
	return nil
}

func (s *chainSink) BuildCuckoo(key []byte, expire int64, build func(*bloom.CuckooOptions) (*bloom.Cuckoo, error)) error {
	c, err := build(&bloom.CuckooOptions{MaxFilters: bloom.CuckooMaxFilters, Reserve: s.reserve})
	if err != nil {
		return err
	}
	s.items = append(s.items, Item{Key: string(key), Expire: expire, Cuckoo: c})
	return nil
}

func (s *chainSink) String(key, value []byte, expire int64) error {
	s.items = append(s.items, Item{Key: string(key), Expire: expire, Value: value})
	return nil
}

func (s *chainSink) Hash(key []byte, h *value.Hash, expire int64) error {
	v := h.Snapshot()
	s.items = append(s.items, Item{Key: string(key), Expire: expire, Hash: &v})
	return nil
}

// complete fills in each loaded filter's header, as Capture does.
func (s *chainSink) complete() []Item {
	for i := range s.items {
		if s.items[i].Chain != nil {
			s.items[i].Header = s.items[i].Chain.Header()
		}
	}
	return s.items
}

func testItems(t testing.TB, bigFilter bool) []Item {
	t.Helper()
	var items []Item
	add := func(key string, capacity uint64, nonScaling bool, n int, expire int64) {
		ch, err := redisbloom.NewChain(capacity, 0.01, 2, nonScaling, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			ch.Add(fmt.Appendf(nil, "%s-%d", key, i))
		}
		items = append(items, Item{Key: key, Expire: expire, Chain: ch, Header: ch.Header()})
	}
	add("small", 100, false, 10, 0)
	add("grown", 50, false, 1000, 1893456000000) // several links
	add("nonscaling", 1000, true, 500, 0)
	add("", 10, false, 3, 0) // the empty key
	items = append(items, Item{Key: "str", Value: []byte("hello"), Expire: 1700000000000})
	items = append(items, Item{Key: "empty-str", Value: []byte{}})
	// A string that clients change in place: its first StrLen bytes are the snapshot's.
	items = append(items, Item{Key: "bitmap", Str: value.NewString([]byte("0123456789abc")), StrLen: 10, Expire: 1893456000000})
	h := value.NewHash()
	h.Set([]byte("size"), []byte("958505"), value.DefaultLimits)
	h.Set([]byte(""), []byte{}, value.DefaultLimits)
	h.Set([]byte("bin\x00"), []byte{0, 1, 2, 255}, value.DefaultLimits)
	hv := h.Snapshot()
	h.Set([]byte("after"), []byte("the snapshot"), value.DefaultLimits) // not in the view
	items = append(items, Item{Key: "config", Hash: &hv, Expire: 1700000000000})
	for _, cf := range []struct {
		key      string
		capacity uint64
		n        int
	}{{"cuckoo", 1000, 300}, {"cuckoo-grown", 20, 200}} {
		c, err := bloom.NewCuckoo(cf.capacity, &bloom.CuckooOptions{Expansion: 2})
		if err != nil {
			t.Fatal(err)
		}
		for i := range cf.n {
			if err := c.Add(fmt.Appendf(nil, "%s-%d", cf.key, i)); err != nil {
				t.Fatal(err)
			}
		}
		c.Remove([]byte(cf.key + "-0"))
		items = append(items, Item{Key: cf.key, Cuckoo: c, Expire: 1893456000000})
	}
	if bigFilter {
		add("big", 15_000_000, false, 1000, 0) // 17 MiB: two pieces
		big := make([]byte, 3*pieceSize/2)     // a string of many pieces
		for i := range big {
			big[i] = byte(i * 7)
		}
		items = append(items, Item{Key: "big-bitmap", Str: value.NewString(big), StrLen: len(big)})
	}
	return items
}

func writeSnap(t testing.TB, items []Item) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := WriteSnapshot(&b, SnapshotHeader{Lineage: 9, LogSeq: 3, Created: 1700000000123}, items)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteSnapshot: %d bytes, %v (buffer %d)", n, err, b.Len())
	}
	return b.Bytes()
}

func readSnap(data []byte, limit uint64) (SnapshotHeader, []Item, error) {
	s := &chainSink{limit: limit}
	h, _, err := ReadSnapshot(bytes.NewReader(data), int64(len(data)), "dump.bdb", s)
	return h, s.complete(), err
}

func dumpOf(c *redisbloom.Chain) []byte {
	var b []byte
	for _, d := range c.Chunks() {
		b = append(b, d...)
	}
	return b
}

func sameItems(t *testing.T, got, want []Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if w.Str != nil { // read back as a plain string
			w.Value, w.Str = w.Str.Bytes()[:w.StrLen], nil
		}
		if (g.Hash == nil) != (w.Hash == nil) || w.Hash != nil && !bytes.Equal(value.AppendHash(nil, *g.Hash), value.AppendHash(nil, *w.Hash)) {
			t.Fatalf("item %d (%q): hash differs", i, w.Key)
		}
		if g.Key != w.Key || g.Expire != w.Expire || !bytes.Equal(g.Value, w.Value) || (g.Chain == nil) != (w.Chain == nil) || (g.Cuckoo == nil) != (w.Cuckoo == nil) {
			t.Fatalf("item %d: %q expire %d value %q; want %q %d %q", i, g.Key, g.Expire, g.Value, w.Key, w.Expire, w.Value)
		}
		if w.Chain != nil && !bytes.Equal(dumpOf(g.Chain), dumpOf(w.Chain)) {
			t.Fatalf("item %d (%q): filter differs", i, w.Key)
		}
		if w.Cuckoo != nil && !g.Cuckoo.Equal(w.Cuckoo) {
			t.Fatalf("item %d (%q): cuckoo filter differs", i, w.Key)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	items := testItems(t, !testing.Short())
	data := writeSnap(t, items)
	h, got, err := readSnap(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h != (SnapshotHeader{Lineage: 9, LogSeq: 3, Created: 1700000000123}) {
		t.Fatalf("header %+v", h)
	}
	sameItems(t, got, items)
	// The format is canonical: writing what was read gives the same bytes.
	if again := writeSnap(t, got); !bytes.Equal(again, data) {
		t.Fatal("rewriting a loaded snapshot gives other bytes")
	}
}

// TestSnapshotHeaderFromTheMomentOfTheSnapshot: the links and counts written are those of the
// Item's header even when the chain grew since; the bits are the chain's current ones.
func TestSnapshotHeaderFromTheMomentOfTheSnapshot(t *testing.T) {
	ch, _ := redisbloom.NewChain(10, 0.01, 2, false, nil)
	ch.Add([]byte("a"))
	hdr := ch.Header()
	for i := range 100 { // grows to several links
		ch.Add(fmt.Appendf(nil, "later-%d", i))
	}
	data := writeSnap(t, []Item{{Key: "k", Chain: ch, Header: hdr}})
	_, got, err := readSnap(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := got[0].Chain
	if g.NumFilters() != 1 || g.Card() != 1 {
		t.Fatalf("loaded %d links and %d items, want the header's 1 and 1", g.NumFilters(), g.Card())
	}
	if !g.Exists([]byte("later-0")) && !g.Exists([]byte("later-1")) && !g.Exists([]byte("later-2")) {
		t.Fatal("the first link's later bits were not written")
	}
}

// TestHeaderAt: the header rebuilt from the number of links and items taken at an instant is the
// header of that instant, however the chain grew and counted since.
func TestHeaderAt(t *testing.T) {
	ch, _ := redisbloom.NewChain(10, 0.01, 2, false, nil)
	for i := range 200 {
		before, links, count := ch.Header(), ch.NumFilters(), ch.Card()
		for j := range 1 + i%37 {
			ch.Add(fmt.Appendf(nil, "%d-%d", i, j))
		}
		got, err := headerAt(ch, links, count)
		if err != nil || !bytes.Equal(got, before) {
			t.Fatalf("step %d: headerAt(%d links, %d items) = %x, %v; want %x", i, links, count, got, err, before)
		}
	}
	if _, err := headerAt(ch, ch.NumFilters()+1, ch.Card()); err == nil {
		t.Fatal("headerAt accepted more links than the chain has")
	}
}

// TestSnapshotEveryByteMatters flips every byte of a snapshot, and cuts it at every length: each
// is refused as corrupt, never loaded as something else.
func TestSnapshotEveryByteMatters(t *testing.T) {
	items := testItems(t, false)
	data := writeSnap(t, items)
	for i := range data {
		d := slices.Clone(data)
		d[i] ^= 0x01
		if _, _, err := readSnap(d, 0); !errors.Is(err, bloom.ErrCorrupt) {
			t.Fatalf("flip at byte %d of %d: %v; want corruption", i, len(data), err)
		}
	}
	for cut := range len(data) {
		if _, _, err := readSnap(data[:cut], 0); !errors.Is(err, bloom.ErrCorrupt) {
			t.Fatalf("cut at %d of %d: %v; want corruption", cut, len(data), err)
		}
	}
	for _, tail := range [][]byte{{0}, make([]byte, 4096), []byte("x")} {
		d := append(slices.Clone(data), tail...)
		_, _, err := readSnap(d, 0)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != int64(len(data)) {
			t.Fatalf("%d bytes after the end: %v", len(tail), err)
		}
	}
	// Zero-filled from some point on, as a file whose data never reached the disk.
	for _, from := range []int{0, 44, len(data) / 2, len(data) - 40} {
		d := slices.Clone(data)
		clear(d[from:])
		if _, _, err := readSnap(d, 0); !errors.Is(err, bloom.ErrCorrupt) {
			t.Fatalf("zeroed from %d: %v", from, err)
		}
	}
}

// TestSnapshotNoAllocationBeyondTheFile crafts sections that declare huge sizes with correct
// checksums: each is refused before allocating.
func TestSnapshotNoAllocationBeyondTheFile(t *testing.T) {
	hdr := SnapshotHeader{Lineage: 1, LogSeq: 1}.append(nil, snapVersion)
	big := func(kind byte, keyLen, metaLen int, data uint64, body []byte) []byte {
		d := appendSection(slices.Clone(hdr), kind, keyLen, metaLen, 0, data)
		return append(d, body...)
	}
	// A valid filter header declaring 2^50 bytes of bits.
	fh := make([]byte, 20+53)
	fh[8] = 1
	fh[12] = 5
	le := func(b []byte, v uint64) {
		for i := range 8 {
			b[i] = byte(v >> (8 * i))
		}
	}
	le(fh[20:], 1<<50)
	le(fh[28:], 1<<53)
	body := append([]byte("k"), fh...)
	body = append(body, le32(crc(body))...)
	// A valid CF.SCANDUMP header declaring 2^50 slots.
	ch := make([]byte, 38)
	le(ch[0:], 1)
	le(ch[8:], 1<<50)
	le(ch[24:], 1)
	ch[32], ch[34] = 1, 20
	cbody := append([]byte("k"), ch...)
	cbody = append(cbody, le32(crc(cbody))...)
	cases := map[string][]byte{
		"cuckoo of 1 PiB":     big(kindCuckoo, 1, len(ch), 1<<50, cbody),
		"key of 2 GiB":        big(kindString, maxKeyOrValue, 0, 0, nil),
		"value of 2 GiB":      big(kindString, 1, maxKeyOrValue, 0, []byte("k")),
		"filter of 1 PiB":     big(kindFilter, 1, len(fh), 1<<50, body),
		"header of 1 MiB":     big(kindFilter, 1, 1<<20, 0, nil),
		"unknown kind":        big(7, 1, 1, 0, nil),
		"end counting 5 keys": big(kindEnd, 0, 0, 5, nil),
	}
	for name, d := range cases {
		_, _, err := readSnap(d, 1<<20)
		if !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("%s: %v; want corruption", name, err)
		}
	}
}

// TestSnapshotMemoryLimit: a valid snapshot whose filters exceed the loader's limit fails with
// the limit's error, not corruption.
func TestSnapshotMemoryLimit(t *testing.T) {
	data := writeSnap(t, testItems(t, false))
	_, _, err := readSnap(data, 1000)
	if err == nil || errors.Is(err, bloom.ErrCorrupt) {
		t.Fatalf("over the limit: %v", err)
	}
}

// TestSnapshotSparse: an empty filter costs a few bytes per 16 MiB piece, a sparse one only the
// 4 KiB blocks its bits are in, and both load back bit for bit.
func TestSnapshotSparse(t *testing.T) {
	empty, _ := redisbloom.NewChain(15_000_000, 0.01, 2, false, nil) // 17 MiB: two pieces
	sparse, _ := redisbloom.NewChain(15_000_000, 0.01, 2, false, nil)
	for i := range 20 {
		sparse.Add(fmt.Appendf(nil, "item-%d", i))
	}
	bits := uint64(len(dumpOf(empty)))
	for _, tc := range []struct {
		name string
		ch   *redisbloom.Chain
		most uint64
	}{
		{"empty", empty, 2048},
		{"sparse", sparse, 2048 + 20*uint64(sparse.Links()[0].Hashes)*blockSize}, // at most k blocks per item
	} {
		items := []Item{{Key: tc.name, Chain: tc.ch, Header: tc.ch.Header()}}
		data := writeSnap(t, items)
		if uint64(len(data)) > tc.most {
			t.Errorf("%s filter of %d bytes: snapshot of %d bytes, want at most %d", tc.name, bits, len(data), tc.most)
		}
		_, got, err := readSnap(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameItems(t, got, items)
	}
}

// TestSnapshotVersion1: a snapshot written in version 1 (plain pieces; a fuzz seed kept from
// then) still loads.
func TestSnapshotVersion1(t *testing.T) {
	seed, err := os.ReadFile("testdata/fuzz/FuzzReadSnapshot/good-v1")
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(seed)), "[]byte(")
	s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(s)
	if binary.LittleEndian.Uint32(data[8:]) != snapVersion1 {
		t.Fatal("the seed is not a version 1 snapshot")
	}
	_, items, err := readSnap(data, 0)
	if err != nil || len(items) != 2 || items[0].Key != "f" || string(items[1].Value) != "v" {
		t.Fatalf("version 1 snapshot: %v, %d items", err, len(items))
	}
	for i := range 100 { // the seed's filter holds "0".."99" (see TestWriteFuzzSeeds)
		if !items[0].Chain.Exists(fmt.Appendf(nil, "%d", i)) {
			t.Fatalf("item %d missing", i)
		}
	}
}

// TestSnapshotSizeMatches checks that SnapshotSize predicts WritePlainSnapshot's length exactly
// (the length a replica's full sync sends before the snapshot).
func TestSnapshotSizeMatches(t *testing.T) {
	for _, items := range [][]Item{nil, testItems(t, false), testItems(t, true)} {
		want, err := SnapshotSize(items)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := WritePlainSnapshot(&buf, SnapshotHeader{Lineage: 1, LogSeq: 1}, items)
		if err != nil {
			t.Fatal(err)
		}
		if n != want || int64(buf.Len()) != want {
			t.Errorf("SnapshotSize %d, WritePlainSnapshot wrote %d (%d buffered)", want, n, buf.Len())
		}
	}
}
