package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// keyFormat says how a line of input becomes the bytes of a key (--keys). The integer forms
// encode as Guava's funnels do, so a filter shared with a Java service answers the same.
type keyFormat int

const (
	keysText  keyFormat = iota // the line's bytes as they are (UTF-8: Funnels.stringFunnel(UTF_8))
	keysHex                    // hex digits decoded to raw bytes (Funnels.byteArrayFunnel())
	keysInt64                  // a decimal number as 8 little-endian bytes (Funnels.longFunnel())
	keysInt32                  // a decimal number as 4 little-endian bytes (Funnels.integerFunnel())
)

var keyFormatNames = []string{"text", "hex", "int64", "int32"}

func (k keyFormat) String() string { return keyFormatNames[k] }

// Set implements pflag.Value.
func (k *keyFormat) Set(s string) error {
	for i, n := range keyFormatNames {
		if s == n {
			*k = keyFormat(i)
			return nil
		}
	}
	return fmt.Errorf("unknown key format %s: want text, hex, int64 or int32", quote(s))
}

// Type implements pflag.Value.
func (k *keyFormat) Type() string { return "text|hex|int64|int32" }

// keysHelp documents --keys for the commands that take it.
const keysHelp = `how a line becomes key bytes: text = the line's UTF-8 bytes; hex = hex digits
decoded to raw bytes; int64/int32 = a decimal number as 8/4 little-endian bytes,
as Guava's longFunnel/integerFunnel encode a long/int (values up to 2^64-1 and
2^32-1 are taken as unsigned, the bits of Java's (long) and (int) casts)`

// appendKey appends the key bytes of one input line to dst. Text lines are taken as they are;
// the other forms ignore spaces and tabs around the value. The error says what is wrong with
// the line and what to do about it.
func (k keyFormat) appendKey(dst, line []byte) ([]byte, error) {
	switch k {
	case keysText:
		return append(dst, line...), nil
	case keysHex:
		t := bytes.TrimSpace(line)
		if len(t) >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
			t = t[2:]
		}
		if len(t)%2 != 0 {
			return dst, fmt.Errorf("%s has an odd number of hex digits; each byte takes two (use --keys text for plain strings)", quote(string(line)))
		}
		n := len(dst)
		dst = append(dst, make([]byte, len(t)/2)...)
		if _, err := hex.Decode(dst[n:], t); err != nil {
			return dst[:n], fmt.Errorf("%s is not hex: %v (use --keys text for plain strings)", quote(string(line)), err)
		}
		return dst, nil
	case keysInt64, keysInt32:
		bits := 64
		if k == keysInt32 {
			bits = 32
		}
		v, err := parseInt(bytes.TrimSpace(line), bits)
		if err != nil {
			return dst, fmt.Errorf("%s is not an %s: %v (use --keys text to take lines as strings)", quote(string(line)), k, err)
		}
		if bits == 64 {
			return binary.LittleEndian.AppendUint64(dst, v), nil
		}
		return binary.LittleEndian.AppendUint32(dst, uint32(v)), nil
	}
	panic("unreachable")
}

// parseInt parses a decimal integer in [-2^(bits-1), 2^bits-1] and returns its two's-complement
// bits.
func parseInt(t []byte, bits int) (uint64, error) {
	s := string(t)
	if s == "" {
		return 0, fmt.Errorf("empty line")
	}
	if v, err := strconv.ParseInt(s, 10, bits); err == nil {
		return uint64(v), nil
	} else if err.(*strconv.NumError).Err != strconv.ErrRange || s[0] == '-' {
		if err.(*strconv.NumError).Err == strconv.ErrRange {
			return 0, fmt.Errorf("below the smallest %d-bit value", bits)
		}
		return 0, fmt.Errorf("not a decimal integer")
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("above the largest %d-bit value", bits)
	}
	return v, nil
}
