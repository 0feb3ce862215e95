package cli

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestKeyFormats(t *testing.T) {
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	for _, c := range []struct {
		k    keyFormat
		line string
		want []byte
	}{
		{keysText, "alice@example.com", []byte("alice@example.com")},
		{keysText, " padded ", []byte(" padded ")},
		{keysText, "", []byte{}},
		{keysText, "naïve", []byte("naïve")},
		{keysHex, "00ff10", []byte{0, 0xff, 0x10}},
		{keysHex, "0xDEADbeef", []byte{0xde, 0xad, 0xbe, 0xef}},
		{keysHex, "  abcd\t", []byte{0xab, 0xcd}},
		{keysHex, "", []byte{}},
		// Guava's longFunnel writes a long with putLong: 8 little-endian bytes.
		{keysInt64, "1", le64(1)},
		{keysInt64, "-1", le64(^uint64(0))},
		{keysInt64, "9223372036854775807", le64(1<<63 - 1)},
		{keysInt64, "-9223372036854775808", le64(1 << 63)},
		{keysInt64, "18446744073709551615", le64(^uint64(0))}, // unsigned: Java's (long) cast
		{keysInt64, " +42 ", le64(42)},
		{keysInt32, "1", le32(1)},
		{keysInt32, "-2", le32(0xfffffffe)},
		{keysInt32, "4294967295", le32(0xffffffff)},
	} {
		got, err := c.k.appendKey(nil, []byte(c.line))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s %q = %x, %v; want %x", c.k, c.line, got, err, c.want)
		}
	}
	for _, c := range []struct {
		k    keyFormat
		line string
		want string
	}{
		{keysHex, "abc", "odd number of hex digits"},
		{keysHex, "zz", "not hex"},
		{keysInt64, "", "empty line"},
		{keysInt64, "1.5", "not a decimal integer"},
		{keysInt64, "18446744073709551616", "above the largest 64-bit value"},
		{keysInt64, "-9223372036854775809", "below the smallest 64-bit value"},
		{keysInt32, "4294967296", "above the largest 32-bit value"},
		{keysInt32, "-2147483649", "below the smallest 32-bit value"},
		{keysInt32, "0x10", "not a decimal integer"},
	} {
		dst := []byte("keep")
		got, err := c.k.appendKey(dst, []byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--keys") {
			t.Errorf("%s %q: error %v, want one saying %q and naming --keys", c.k, c.line, err, c.want)
		}
		if string(got) != "keep" {
			t.Errorf("%s %q: a refused line changed dst to %q", c.k, c.line, got)
		}
	}
}

func TestKeyFormatFlag(t *testing.T) {
	var k keyFormat
	for i, name := range keyFormatNames {
		if err := k.Set(name); err != nil || int(k) != i || k.String() != name {
			t.Errorf("Set(%q) = %v, %v", name, k, err)
		}
	}
	if err := k.Set("json"); err == nil || !strings.Contains(err.Error(), "text, hex, int64 or int32") {
		t.Errorf("Set(json) = %v", err)
	}
}

// Every line either becomes a key or is refused with dst unchanged; no line panics.
func FuzzAppendKey(f *testing.F) {
	for _, s := range []string{"alice", "", "00ff", "0x", "0xabc", "-1", "18446744073709551615", "+", "1e3", "\xff\xfe"} {
		for k := range keyFormatNames {
			f.Add(uint8(k), s)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, line string) {
		kf := keyFormat(int(k) % len(keyFormatNames))
		got, err := kf.appendKey([]byte("x"), []byte(line))
		if err != nil {
			if string(got) != "x" {
				t.Fatalf("%s %q: refused, but dst became %q", kf, line, got)
			}
			return
		}
		switch kf {
		case keysText:
			if string(got[1:]) != line {
				t.Fatalf("text %q became %q", line, got[1:])
			}
		case keysInt64:
			if len(got) != 9 {
				t.Fatalf("int64 %q became %d bytes", line, len(got)-1)
			}
		case keysInt32:
			if len(got) != 5 {
				t.Fatalf("int32 %q became %d bytes", line, len(got)-1)
			}
		}
	})
}
