package rdb

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Redis's own check values (src/crc64.c's crc64Test): the second includes the C string's NUL.
func TestCRC64Golden(t *testing.T) {
	li := "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed " +
		"do eiusmod tempor incididunt ut labore et dolore magna " +
		"aliqua. Ut enim ad minim veniam, quis nostrud exercitation " +
		"ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis " +
		"aute irure dolor in reprehenderit in voluptate velit esse " +
		"cillum dolore eu fugiat nulla pariatur. Excepteur sint " +
		"occaecat cupidatat non proident, sunt in culpa qui officia " +
		"deserunt mollit anim id est laborum.\x00"
	for _, c := range []struct {
		in   string
		want uint64
	}{{"123456789", 0xe9c6d914c4b8d9ca}, {li, 0xc7794709e69683b3}} {
		if got := crcUpdate(0, []byte(c.in)); got != c.want {
			t.Errorf("crc64(%.20q) = %#x, want %#x", c.in, got, c.want)
		}
		// Updating in pieces, and byte by byte as the reader does, gives the same.
		var crc uint64
		for i := range len(c.in) {
			crc = jonesTable[byte(crc)^c.in[i]] ^ crc>>8
		}
		half := crcUpdate(crcUpdate(0, []byte(c.in[:5])), []byte(c.in[5:]))
		if crc != c.want || half != c.want {
			t.Errorf("crc64 in pieces of %.20q = %#x and %#x, want %#x", c.in, crc, half, c.want)
		}
	}
}

type byteSrc struct{ *bytes.Reader }

func (b byteSrc) readFull(p []byte) error {
	_, err := b.Read(p)
	if err != nil || len(p) == 0 {
		return err
	}
	return nil
}

func lzfRoundTrip(t *testing.T, data []byte, window int) {
	t.Helper()
	var z lzfCompressor
	c, ok := z.compressBytes(nil, data, int64(len(data)))
	if !ok {
		c, ok = z.compressBytes(nil, data, int64(len(data))+int64(len(data))/16+64)
		if !ok {
			t.Fatalf("%d bytes do not compress into %d", len(data), len(data)+len(data)/16+64)
		}
	}
	// In pieces, through the window, the compressor makes the same bytes.
	c2, ok2 := z.compressFrom(nil, int64(len(data)), int64(len(data))+int64(len(data))/16+64, nil, func(p []byte, off int64) {
		copy(p, data[off:])
	})
	if !ok2 || !bytes.Equal(c, c2) {
		t.Fatalf("compressing %d bytes in pieces differs (%v)", len(data), ok2)
	}
	var out []byte
	err := lzfDecode(byteSrc{bytes.NewReader(c)}, uint64(len(c)), uint64(len(data)), window, func(p []byte) error {
		out = append(out, p...)
		return nil
	})
	if err != nil {
		t.Fatalf("decoding %d bytes (from %d): %v", len(data), len(c), err)
	}
	if !bytes.Equal(out, data) {
		t.Fatalf("LZF round trip of %d bytes differs", len(data))
	}
}

func TestLZFRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sparse := make([]byte, 3<<20)
	for range 5000 {
		sparse[rng.IntN(len(sparse))] |= 1 << rng.IntN(8)
	}
	random := make([]byte, 100000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog "), 3000)
	for _, window := range []int{64, 4096, piece} {
		for _, d := range [][]byte{sparse, random, text, make([]byte, 25), []byte("abcabcabcabcabcabcabcabcabc"), bytes.Repeat([]byte{7}, 100000)} {
			lzfRoundTrip(t, d, window)
		}
	}
	for n := 21; n < 300; n++ {
		lzfRoundTrip(t, text[:n], 64)
		lzfRoundTrip(t, sparse[:n], 64)
	}
}

func TestLZFDecodeRefusesBadData(t *testing.T) {
	cases := map[string][]byte{
		"reference before start": {0x20, 0x00},
		"literal past end":       {0x05, 'a', 'b'},
		"cut reference":          {0x00, 'a', 0xE0},
		"too long":               {0x02, 'a', 'b', 'c'},
	}
	for name, c := range cases {
		err := lzfDecode(byteSrc{bytes.NewReader(c)}, uint64(len(c)), 2, 64, func([]byte) error { return nil })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestListpackRoundTrip(t *testing.T) {
	elems := [][]byte{[]byte("f"), []byte("0"), []byte("-1"), []byte("127"), []byte("128"), []byte("-4096"),
		[]byte("4095"), []byte("-32768"), []byte("8388607"), []byte("2147483647"), []byte("9223372036854775807"),
		[]byte("-9223372036854775808"), []byte("01"), []byte("-0"), []byte(""), bytes.Repeat([]byte("x"), 63),
		bytes.Repeat([]byte("y"), 64), bytes.Repeat([]byte("z"), 4095), bytes.Repeat([]byte("w"), 4096)}
	lp := appendListpack(nil, elems)
	var got [][]byte
	n, err := listpackElements(lp, func(e element) error {
		got = append(got, append([]byte(nil), e...))
		return nil
	})
	if err != nil || n != len(elems) {
		t.Fatalf("listpack: %d elements, %v", n, err)
	}
	for i := range elems {
		if !bytes.Equal(got[i], elems[i]) {
			t.Errorf("element %d: %q, want %q", i, got[i], elems[i])
		}
	}
	for cut := range len(lp) {
		if _, err := listpackElements(lp[:cut], func(element) error { return nil }); err == nil {
			t.Fatalf("a listpack cut at %d of %d bytes decoded", cut, len(lp))
		}
	}
}

func TestParseIntIsRedisString2ll(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{{"0", true}, {"-0", false}, {"01", false}, {"+1", false}, {"1 ", false}, {"-", false}, {"", false},
		{"9223372036854775807", true}, {"9223372036854775808", false}, {"-9223372036854775808", true},
		{"-9223372036854775809", false}, {"123456789012345678901", false}} {
		v, ok := parseInt([]byte(c.s))
		if ok != c.ok || ok && strconv.FormatInt(v, 10) != c.s {
			t.Errorf("parseInt(%q) = %d, %v", c.s, v, ok)
		}
	}
}

func TestModuleID(t *testing.T) {
	for _, name := range []string{BloomModule, CuckooModule} {
		id, err := ModuleID(name, 4)
		if err != nil {
			t.Fatal(err)
		}
		if n, v := ModuleName(id); n != name || v != 4 {
			t.Errorf("ModuleName(ModuleID(%q, 4)) = %q, %d", name, n, v)
		}
	}
}
