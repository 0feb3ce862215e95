package redisbloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// loadRecorded loads a recorded dump chunk by chunk, as BF.LOADCHUNK would.
func loadRecorded(t testing.TB, name string) *Chain {
	t.Helper()
	iters, chunks := dumpFiles(t, name)
	c, err := LoadChunks(func(yield func(int64, []byte) bool) {
		for i := range iters {
			if !yield(iters[i], chunks[i]) {
				return
			}
		}
	}, nil)
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return c
}

// TestLoadRecordedDumps loads each RedisBloom dump and checks that the chain answers exactly as
// the same filter rebuilt from its commands, dumps back to the same bytes, and keeps counting.
func TestLoadRecordedDumps(t *testing.T) {
	probe := append(items("item-", 300), items("absent-", 2000)...)
	for _, r := range recordings {
		t.Run(r.name, func(t *testing.T) {
			loaded, built := loadRecorded(t, r.name), r.build(t)
			for _, k := range probe {
				if loaded.Exists(k) != built.Exists(k) {
					t.Fatalf("Exists(%s): loaded %v, rebuilt %v", k, loaded.Exists(k), built.Exists(k))
				}
			}
			if !slices.Equal(loaded.Debug(), built.Debug()) || loaded.Size() != built.Size() ||
				loaded.Capacity() != built.Capacity() || loaded.Expansion() != built.Expansion() ||
				loaded.NonScaling() != built.NonScaling() {
				t.Fatalf("loaded %q, rebuilt %q", loaded.Debug(), built.Debug())
			}
			for it, data := range loaded.Chunks() {
				if _, want := built.ScanDump(it - int64(len(data))); it > 1 && !bytes.Equal(data, want) {
					t.Fatalf("chunk %d differs after loading", it)
				}
			}
			// Both keep growing identically.
			for _, k := range items("more-", 400) {
				a, errA := loaded.Add(k)
				b, errB := built.Add(k)
				if a != b || !errors.Is(errA, errB) && errA != errB {
					t.Fatalf("Add(%s): loaded %v %v, rebuilt %v %v", k, a, errA, b, errB)
				}
			}
			if !slices.Equal(loaded.Header(), built.Header()) {
				t.Fatalf("headers differ after adding")
			}
		})
	}
}

func TestScanDumpIterators(t *testing.T) {
	// One link of 27,569,384 bytes: two chunks, 16 MiB then the rest (observed on RedisBloom).
	c := mustChain(t, 20_000_000, 0.01, 2, false)
	for _, tc := range []struct {
		iter, next int64
		n          int
	}{
		{0, 1, 73},
		{1, 16777217, 16 << 20},
		{16777217, 27569385, 10_792_168},
		{27569385, 0, 0},
		{5, 5 + 16<<20, 16 << 20},
		{27569384, 27569385, 1},
		{-1, 0, 0},
		{math.MaxInt64, 0, 0},
		{math.MinInt64, 0, 0},
	} {
		next, data := c.ScanDump(tc.iter)
		if next != tc.next || len(data) != tc.n {
			t.Errorf("ScanDump(%d) = (%d, %d bytes), want (%d, %d bytes)", tc.iter, next, len(data), tc.next, tc.n)
		}
		buf := make([]byte, 0, 16<<20)
		next2, data2 := c.ScanDumpInto(tc.iter, buf)
		if next2 != next || !bytes.Equal(data2, data) {
			t.Errorf("ScanDumpInto(%d) = (%d, %d bytes), ScanDump gave (%d, %d bytes)", tc.iter, next2, len(data2), next, len(data))
		}
		if tc.iter > 0 && len(data2) > 0 && &data2[0] != &buf[:1][0] {
			t.Errorf("ScanDumpInto(%d) did not use the buffer", tc.iter)
		}
	}
	var iters []int64
	for it := range c.Chunks() {
		iters = append(iters, it)
	}
	if !slices.Equal(iters, []int64{1, 16777217, 27569385}) {
		t.Errorf("Chunks iterators %v", iters)
	}
}

// TestLoadChunkErrors replays the data errors of RedisBloom's recorded error session
// (resp2-bf-errors.txt) on a chain made by BF.RESERVE dup 0.01 100.
func TestLoadChunkErrors(t *testing.T) {
	c := mustChain(t, 100, 0.01, 2, false)
	before := c.Header()
	for _, tc := range []struct {
		iter int64
		data string
		want error // nil: OK
	}{
		{1, "x", ErrNoLink},
		{100000, "x", ErrNoLink},
		{0, "x", ErrBadData},
		{2, strings.Repeat("x", 200), ErrBadData},
		{1, "", nil},
		{-5, "", ErrBadData},
		{145, "", ErrNoLink}, // one past the end
		{144, "", nil},
		{146, "x", ErrNoLink},
		{146, "xx", ErrChunkTooBig},
		{145, strings.Repeat("\xff", 144), nil},
	} {
		err := c.LoadChunk(tc.iter, []byte(tc.data))
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("LoadChunk(%d, %d bytes) = %v, want %v", tc.iter, len(tc.data), err, tc.want)
		}
		if err != nil && !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("LoadChunk error %v does not match bloom.ErrCorrupt", err)
		}
	}
	if !bytes.Equal(c.Header(), before) {
		t.Errorf("chunks changed the header")
	}
	// The last chunk set every bit: everything is present now.
	if !c.Exists([]byte("anything")) {
		t.Errorf("a chain of set bits reports an item absent")
	}
	for _, data := range []string{"garbage", ""} { // BF.LOADCHUNK new 1 garbage / hex:
		if _, err := LoadHeader([]byte(data), nil); !errors.Is(err, ErrBadData) {
			t.Errorf("LoadHeader(%q): %v, want ErrBadData", data, err)
		}
	}
}

// header field offsets, for crafting bad headers.
const (
	hItems, hN, hOptions, hGrowth = 0, 8, 12, 16
	lBytes, lBits, lSize, lError  = 0, 8, 16, 24
	lBPE, lHashes, lCap, lN2      = 32, 40, 44, 52
)

func linkField(h []byte, link, off int) []byte { return h[headerFixedSize+headerLinkSize*link+off:] }

func TestLoadHeaderValidation(t *testing.T) {
	good := readDump(t, "dump-scaled-1.bin") // 4 links
	le := binary.LittleEndian
	put64 := func(off int, v uint64) func([]byte) { return func(h []byte) { le.PutUint64(h[off:], v) } }
	link64 := func(l, off int, v uint64) func([]byte) {
		return func(h []byte) { le.PutUint64(linkField(h, l, off), v) }
	}
	link32 := func(l, off int, v uint32) func([]byte) {
		return func(h []byte) { le.PutUint32(linkField(h, l, off), v) }
	}
	linkF := func(l, off int, v float64) func([]byte) { return link64(l, off, math.Float64bits(v)) }
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		msg    string // part of the error message
	}{
		{"short", func(h []byte) []byte { return h[:19] }, "shorter than 20"},
		{"no filters", func(h []byte) []byte { le.PutUint32(h[hN:], 0); return h }, "0 sub-filters"},
		{"too many filters", func(h []byte) []byte { le.PutUint32(h[hN:], MaxFilters+1); return h }, "limit"},
		{"length", func(h []byte) []byte { return h[:len(h)-1] }, "want 232"},
		{"trailing byte", func(h []byte) []byte { return append(h, 0) }, "want 232"},
		{"unknown option", func(h []byte) []byte { le.PutUint32(h[hOptions:], 5|16); return h }, "unknown option"},
		{"32-bit hashing", func(h []byte) []byte { le.PutUint32(h[hOptions:], 1); return h }, "not supported"},
		{"power-of-two sizing", func(h []byte) []byte { le.PutUint32(h[hOptions:], 4); return h }, "not supported"},
		{"entries as bits", func(h []byte) []byte { le.PutUint32(h[hOptions:], 7); return h }, "not supported"},
		{"error 0", with(linkF(1, lError, 0)), "error rate"},
		{"error 1", with(linkF(1, lError, 1)), "error rate"},
		{"error NaN", with(linkF(1, lError, math.NaN())), "error rate"},
		{"n2 64", with(func(h []byte) { linkField(h, 0, lN2)[0] = 64 }), "n2"},
		{"n2 too big for bits", with(func(h []byte) { linkField(h, 0, lN2)[0] = 9 }), "2^n2"},
		{"n2 not exact", with(func(h []byte) { linkField(h, 0, lN2)[0] = 7 }), "power-of-two"},
		{"0 bits", with(link64(0, lBits, 0)), "0 bits"},
		{"bits ≠ 8·bytes", with(link64(0, lBits, 255)), "bits for"},
		{"bytes·8 wraps", with(func(h []byte) { // RedisBloom's check passes: 8·(2^61+32) = 256 mod 2^64
			le.PutUint64(linkField(h, 0, lBytes), 1<<61+32)
		}), "exceed"},
		{"partial word", with(func(h []byte) { le.PutUint64(linkField(h, 0, lBytes), 36); le.PutUint64(linkField(h, 0, lBits), 288) }), "64-bit words"},
		{"hashes", with(link32(2, lHashes, 9)), "hashes for"},
		{"bpe NaN", with(linkF(2, lBPE, math.NaN())), "bits per entry"},
		{"bpe Inf", with(linkF(2, lBPE, math.Inf(1))), "bits per entry"},
		{"bpe negative", with(linkF(2, lBPE, -12)), "bits per entry"},
		{"capacity 0", with(link64(3, lCap, 0)), "capacity 0"},
		{"items", with(put64(hItems, 149)), "148"},
		{"item overflow", with(func(h []byte) {
			le.PutUint64(linkField(h, 0, lSize), math.MaxUint64)
			le.PutUint64(linkField(h, 1, lSize), 2)
		}), "overflow"},
		{"link items", with(link64(3, lSize, 9)), "148"},
	}
	for _, tc := range cases {
		h := tc.mutate(bytes.Clone(good))
		_, err := LoadHeader(h, nil)
		if !errors.Is(err, ErrBadData) || !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrBadData mentioning %q", tc.name, err, tc.msg)
		}
	}

	// What RedisBloom accepts and so must we: growth 0, a count above capacity, n2 = log2(bits),
	// and options 13 on a scaling dump (a NONSCALING chain that already has several links).
	for _, tc := range []struct {
		name   string
		mutate func([]byte)
	}{
		{"growth 0", func(h []byte) { le.PutUint32(h[hGrowth:], 0) }},
		{"n2 exact", func(h []byte) { linkField(h, 0, lN2)[0] = 8 }}, // 32 bytes = 2^8 bits
		{"count above capacity", func(h []byte) {
			le.PutUint64(linkField(h, 3, lSize), 200) // capacity 160
			le.PutUint64(h[hItems:], 340)
		}},
		{"options 13", func(h []byte) { le.PutUint32(h[hOptions:], 13) }},
	} {
		h := bytes.Clone(good)
		tc.mutate(h)
		c, err := LoadHeader(h, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(c.Header(), h) {
			t.Errorf("%s: header does not round-trip", tc.name)
		}
	}
}

func with(f func([]byte)) func([]byte) []byte { return func(h []byte) []byte { f(h); return h } }

// TestPowerOfTwoLink loads a link whose n2 says it is 2^n2 bits: positions are the same as for
// n2 = 0, and the header keeps n2.
func TestPowerOfTwoLink(t *testing.T) {
	c := mustChain(t, 10, 0.05, 2, false) // link 0: 16 bytes = 128 bits = 2^7
	addAll(t, c, items("p-", 10))
	h := c.Header()
	linkField(h, 0, lN2)[0] = 7
	d, err := LoadHeader(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, chunk := c.ScanDump(1)
	if err := d.LoadChunk(1+int64(len(chunk)), chunk); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(items("p-", 10), items("q-", 200)...) {
		if d.Exists(k) != c.Exists(k) {
			t.Fatalf("Exists(%s) differs", k)
		}
	}
	if !bytes.Equal(d.Header(), h) {
		t.Errorf("n2 lost on re-dump")
	}
}

// TestCraftedHeaderAllocatesNothing is the attack that aborts RedisBloom: a header declaring
// links far beyond memory. It must be refused before any allocation, as ErrTooLarge, or by the
// Reserve hook with the chain's full Size.
func TestCraftedHeaderAllocatesNothing(t *testing.T) {
	h := readDump(t, "dump-scaled-1.bin")
	le := binary.LittleEndian
	for l := range 4 {
		le.PutUint64(linkField(h, l, lBytes), 1<<50) // 1 PiB each
		le.PutUint64(linkField(h, l, lBits), 1<<53)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadHeader(h, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, bloom.ErrTooLarge) {
		t.Fatalf("4 PiB header: %v, want ErrTooLarge", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing the header allocated %d bytes", grew)
	}

	// Within the machine but over a server's budget: the hook sees the whole Size first.
	for l := range 4 {
		le.PutUint64(linkField(h, l, lBytes), 1<<20)
		le.PutUint64(linkField(h, l, lBits), 1<<23)
	}
	var asked []uint64
	_, err = LoadHeader(h, &Options{Reserve: func(n uint64) error { asked = append(asked, n); return errOOM }})
	if err != errOOM || !slices.Equal(asked, []uint64{32 + 4*64 + 4<<20}) {
		t.Errorf("Reserve saw %v and LoadHeader returned %v", asked, err)
	}
	// And a loaded chain keeps the hook for its growth.
	asked = nil
	c, err := LoadHeader(readDump(t, "dump-docex-1.bin"), &Options{Reserve: func(n uint64) error { asked = append(asked, n); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, c, items("grow-", 20))
	if c.NumFilters() < 2 || len(asked) != c.NumFilters() {
		t.Errorf("%d links, Reserve called %d times", c.NumFilters(), len(asked))
	}
}

func TestLoadChunksErrors(t *testing.T) {
	seq := func(pairs ...any) func(func(int64, []byte) bool) {
		return func(yield func(int64, []byte) bool) {
			for i := 0; i < len(pairs); i += 2 {
				if !yield(int64(pairs[i].(int)), pairs[i+1].([]byte)) {
					return
				}
			}
		}
	}
	hdr, chunk := readDump(t, "dump-docex-1.bin"), readDump(t, "dump-docex-9.bin")
	if _, err := LoadChunks(seq(), nil); !errors.Is(err, ErrBadData) {
		t.Errorf("empty sequence: %v", err)
	}
	if _, err := LoadChunks(seq(9, chunk, 1, hdr), nil); !errors.Is(err, ErrBadData) {
		t.Errorf("chunk before header: %v", err)
	}
	if _, err := LoadChunks(seq(1, hdr, 10, chunk), nil); !errors.Is(err, ErrChunkTooBig) {
		t.Errorf("misplaced chunk: %v", err)
	}
	c, err := LoadChunks(seq(1, hdr, 9, chunk), nil)
	if err != nil || !c.Exists([]byte("item1")) || c.Card() != 1 {
		t.Errorf("docex: %v", err)
	}
}
