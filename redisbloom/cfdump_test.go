package redisbloom_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
	"github.com/bloomd/bloom/redisbloom"
)

// goldenDumps returns the (header, slots) pairs that RedisBloom 2.6.28 dumped in the library's
// golden vectors (../testdata/cuckoo/golden.txt).
func goldenDumps(t testing.TB) [][2][]byte {
	f, err := os.Open("../testdata/cuckoo/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[0] == "dump" {
			h, _ := hex.DecodeString(fs[1])
			s, _ := hex.DecodeString(fs[2])
			out = append(out, [2][]byte{h, s})
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d dumps in the golden file", len(out))
	}
	return out
}

// Every RedisBloom dump loads (header, then each sub-filter as the chunk SCANDUMP returned), and
// dumping the loaded filter gives back the same chunks.
func TestCFDumpRoundTrip(t *testing.T) {
	for n, d := range goldenDumps(t) {
		c, err := redisbloom.LoadCFHeader(d[0], nil)
		if err != nil {
			t.Fatalf("dump %d: LoadCFHeader: %v", n, err)
		}
		// Chunks as RedisBloom sends them: one per sub-filter, at position end+1.
		pos := int64(1)
		for _, size := range c.FilterBytes() {
			chunk := d[1][pos-1 : pos-1+int64(size)]
			pos += int64(size)
			if err := redisbloom.CFLoadChunk(c, pos, chunk); err != nil {
				t.Fatalf("dump %d: CFLoadChunk(%d): %v", n, pos, err)
			}
		}
		if pos-1 != int64(len(d[1])) {
			t.Fatalf("dump %d: header describes %d bytes, dump has %d", n, pos-1, len(d[1]))
		}
		next, hdr := redisbloom.CFScanDump(c, 0)
		if next != 1 || string(hdr) != string(d[0]) {
			t.Fatalf("dump %d: header %x, want %x", n, hdr, d[0])
		}
		var slots []byte
		for p := next; ; {
			np, data := redisbloom.CFScanDump(c, p)
			if np == 0 {
				if data != nil {
					t.Fatalf("dump %d: end of dump with data", n)
				}
				break
			}
			slots = append(slots, data...)
			p = np
		}
		if string(slots) != string(d[1]) {
			t.Fatalf("dump %d: slots differ after a round trip", n)
		}
	}
}

func TestCFScanDumpEmptyAndPositions(t *testing.T) {
	c, _ := bloom.NewCuckoo(1000, nil)
	if next, data := redisbloom.CFScanDump(c, 0); next != 0 || data != nil {
		t.Fatalf("empty filter: (%d, %x), want (0, nil)", next, data)
	}
	_ = c.Add([]byte("a"))
	if next, data := redisbloom.CFScanDump(c, 1); next != 1025 || len(data) != 1024 {
		t.Fatalf("position 1: (%d, %d bytes)", next, len(data))
	}
	// A position inside a small sub-filter returns the whole sub-filter, as RedisBloom does.
	if next, data := redisbloom.CFScanDump(c, 7); next != 7+1024 || len(data) != 1024 {
		t.Fatalf("position 7: (%d, %d bytes)", next, len(data))
	}
	if next, data := redisbloom.CFScanDump(c, 1025); next != 0 || data != nil {
		t.Fatalf("past the end: (%d, %d bytes)", next, len(data))
	}
	for _, tc := range []struct {
		pos  int64
		data []byte
	}{{0, []byte{1}}, {1, []byte{1}}, {5, make([]byte, 5)}, {1, nil}, {2050, []byte{1}}, {1025, make([]byte, 1025)}, {-3, []byte{1}}} {
		if err := redisbloom.CFLoadChunk(c, tc.pos, tc.data); !errors.Is(err, redisbloom.ErrCFChunk) || !errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("CFLoadChunk(%d, %d bytes): got %v, want ErrCFChunk", tc.pos, len(tc.data), err)
		}
	}
	if err := redisbloom.CFLoadChunk(c, 1025, make([]byte, 1024)); err != nil {
		t.Fatalf("a whole sub-filter: %v", err)
	}
}

// CFChunks dumps what CF.SCANDUMP dumps, as pairs that load into an equal filter, and an empty
// filter too (which CF.SCANDUMP does not dump).
func TestCFChunks(t *testing.T) {
	full, _ := bloom.NewCuckoo(100, &bloom.CuckooOptions{Expansion: 1})
	for i := range 300 {
		_ = full.Add([]byte{byte(i), byte(i >> 8)})
	}
	full.Remove([]byte{1, 0})
	empty, _ := bloom.NewCuckoo(5000, nil)
	for _, c := range []*bloom.Cuckoo{full, empty} {
		var d *bloom.Cuckoo
		var err error
		n := 0
		for pos, data := range redisbloom.CFChunks(c) {
			if n == 0 {
				if pos != 1 {
					t.Fatalf("first pair at position %d", pos)
				}
				if d, err = redisbloom.LoadCFHeader(data, nil); err != nil {
					t.Fatal(err)
				}
			} else if err := redisbloom.CFLoadChunk(d, pos, append([]byte(nil), data...)); err != nil {
				t.Fatalf("chunk at %d: %v", pos, err)
			}
			n++
		}
		if n != 1+len(c.FilterBytes()) {
			t.Errorf("%d pairs for %d sub-filters", n, len(c.FilterBytes()))
		}
		if d.Info() != c.Info() {
			t.Errorf("loaded %+v, want %+v", d.Info(), c.Info())
		}
		for i, size := range c.FilterBytes() {
			a, b := make([]byte, size), make([]byte, size)
			c.ReadSlots(i, 0, a)
			d.ReadSlots(i, 0, b)
			if string(a) != string(b) {
				t.Errorf("sub-filter %d differs", i)
			}
		}
	}
}

func cfHeader(items, buckets, deletes, filters uint64, bs, mi, exp uint16) []byte {
	le := binary.LittleEndian
	b := le.AppendUint64(nil, items)
	b = le.AppendUint64(b, buckets)
	b = le.AppendUint64(b, deletes)
	b = le.AppendUint64(b, filters)
	b = le.AppendUint16(b, bs)
	b = le.AppendUint16(b, mi)
	return le.AppendUint16(b, exp)
}

// Crafted headers are refused before anything is allocated: the Reserve hook sees only sizes
// that passed every check, and refuses anything above 1 MiB here.
func TestCFHeaderCrafted(t *testing.T) {
	var asked []uint64
	opts := &bloom.CuckooOptions{Reserve: func(n uint64) error {
		asked = append(asked, n)
		if n > 1<<20 {
			return errors.New("too much")
		}
		return nil
	}}
	bad := map[string][]byte{
		"short":              cfHeader(1, 8, 0, 1, 2, 20, 1)[:37],
		"long":               append(cfHeader(1, 8, 0, 1, 2, 20, 1), 0),
		"no filters":         cfHeader(1, 8, 0, 0, 2, 20, 1),
		"filters 2^16":       cfHeader(1, 8, 0, 1<<16, 2, 20, 1),
		"bucket size 0":      cfHeader(1, 8, 0, 1, 0, 20, 1),
		"bucket size 256":    cfHeader(1, 8, 0, 1, 256, 20, 1),
		"buckets 0":          cfHeader(1, 0, 0, 1, 2, 20, 1),
		"buckets 12":         cfHeader(1, 12, 0, 1, 2, 20, 1),
		"buckets 2^56":       cfHeader(1, 1<<56, 0, 1, 2, 20, 1),
		"max iterations 0":   cfHeader(1, 8, 0, 1, 2, 0, 1),
		"expansion 0, 2":     cfHeader(1, 8, 0, 2, 2, 20, 0),
		"growth past 2^56":   cfHeader(1, 1<<40, 0, 3, 1, 20, 32768),
		"65535 huge filters": cfHeader(1, 1<<55, 0, 65535, 255, 20, 1),
	}
	for name, h := range bad {
		if _, err := redisbloom.LoadCFHeader(h, opts); !errors.Is(err, redisbloom.ErrCFHeader) && !errors.Is(err, bloom.ErrTooLarge) {
			t.Errorf("%s: got %v, want ErrCFHeader or ErrTooLarge", name, err)
		}
	}
	if len(asked) != 0 {
		t.Errorf("Reserve was asked for %v by headers that should have been refused first", asked)
	}
	// Valid but larger than the Reserve hook allows.
	if _, err := redisbloom.LoadCFHeader(cfHeader(1, 1<<30, 0, 1, 2, 20, 1), opts); err == nil || len(asked) != 1 || asked[0] != 2<<30 {
		t.Errorf("2 GiB header: got %v, asked %v", err, asked)
	}
	// RedisBloom keeps the low 16 bits of the number of sub-filters.
	c, err := redisbloom.LoadCFHeader(cfHeader(3, 8, 1, 1<<16|2, 2, 20, 2), nil)
	if err != nil || c.NumFilters() != 2 || c.Info().Bytes != 16+32 {
		t.Fatalf("2^16+2 sub-filters: %v, %+v", err, c)
	}
	// A non-power-of-two expansion is accepted, as by RedisBloom.
	if c, err := redisbloom.LoadCFHeader(cfHeader(3, 8, 1, 3, 2, 20, 3), nil); err != nil || c.Info().Bytes != 2*(8+24+72) {
		t.Fatalf("expansion 3: %v", err)
	}
}

// FuzzCFLoadChunk loads a header and chunks cut from arbitrary bytes: never a panic, never an
// allocation past the Reserve hook's 1 MiB, and a loaded filter answers and dumps.
func FuzzCFLoadChunk(f *testing.F) {
	c, _ := bloom.NewCuckoo(64, &bloom.CuckooOptions{Expansion: 2})
	for _, k := range conformance.Keys(5, 100) {
		_ = c.Add(k)
	}
	var seed []byte
	for p := int64(0); ; {
		next, data := redisbloom.CFScanDump(c, p)
		if next == 0 {
			break
		}
		seed = binary.LittleEndian.AppendUint64(seed, uint64(next))
		seed = binary.LittleEndian.AppendUint16(seed, uint16(len(data)))
		seed = append(seed, data...)
		p = next
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, in []byte) {
		opts := &bloom.CuckooOptions{Reserve: func(n uint64) error {
			if n > 1<<20 {
				return errors.New("too much")
			}
			return nil
		}}
		var cf *bloom.Cuckoo
		for len(in) >= 10 {
			pos := int64(binary.LittleEndian.Uint64(in))
			n := min(int(binary.LittleEndian.Uint16(in[8:])), len(in)-10)
			data := in[10 : 10+n]
			in = in[10+n:]
			if cf == nil {
				var err error
				if cf, err = redisbloom.LoadCFHeader(data, opts); err != nil {
					return
				}
				continue
			}
			_ = redisbloom.CFLoadChunk(cf, pos, data)
		}
		if cf != nil {
			cf.Test([]byte("x"))
			_ = cf.Add([]byte("x"))
			cf.Remove([]byte("x"))
			cf.Compact()
			redisbloom.CFScanDump(cf, 1)
		}
	})
}
