package rdb

import (
	"encoding/binary"
	"strconv"
)

// The packed encodings that small hashes take in RDB files: listpack (Redis 7.0 and later,
// src/listpack.c), ziplist (Redis 6.2 and before, src/ziplist.c) and zipmap (Redis 2.4 and before,
// still read by 7.x, src/zipmap.c). Each is decoded into its elements as strings; integers
// come out in decimal, as Redis returns them. Every length is checked against the bytes that
// remain, so a crafted blob is refused, never read past.

// An element is one decoded element: its string form.
type element = []byte

// listpackElements calls fn with each element of the listpack lp, in order, and returns how
// many there were. The header's byte count must be len(lp), its element count (unless 65535,
// "unknown") the number found, each entry's back length must be right and the last byte the
// terminator 0xFF.
func listpackElements(lp []byte, fn func(e element) error) (int, error) {
	if len(lp) < 7 {
		return 0, corruptf("listpack of %d bytes is shorter than its header and end", len(lp))
	}
	le := binary.LittleEndian
	if total := le.Uint32(lp); uint64(total) != uint64(len(lp)) {
		return 0, corruptf("listpack header says %d bytes, the string holds %d", total, len(lp))
	}
	count := int(le.Uint16(lp[4:]))
	p := lp[6:]
	n := 0
	var num [20]byte
	for {
		if len(p) == 0 {
			return n, corruptf("listpack has no end byte")
		}
		b := p[0]
		if b == 0xFF {
			if len(p) != 1 {
				return n, corruptf("listpack has %d bytes after its end", len(p)-1)
			}
			break
		}
		var size int // encoding and data
		var str []byte
		var iv int64
		isInt := true
		switch {
		case b&0x80 == 0: // 7-bit unsigned
			size, iv = 1, int64(b)
		case b&0xC0 == 0x80: // 6-bit string length
			l := int(b & 0x3F)
			size, isInt = 1+l, false
		case b&0xE0 == 0xC0: // 13-bit signed
			if len(p) < 2 {
				return n, corruptf("listpack entry cut short")
			}
			u := uint64(b&0x1F)<<8 | uint64(p[1])
			size, iv = 2, int64(u<<51)>>51
		case b&0xF0 == 0xE0: // 12-bit string length
			if len(p) < 2 {
				return n, corruptf("listpack entry cut short")
			}
			l := int(b&0x0F)<<8 | int(p[1])
			size, isInt = 2+l, false
		case b == 0xF0: // 32-bit string length
			if len(p) < 5 {
				return n, corruptf("listpack entry cut short")
			}
			l := uint64(le.Uint32(p[1:]))
			if l > uint64(len(p)) {
				return n, corruptf("listpack string of %d bytes past the end", l)
			}
			size, isInt = 5+int(l), false
		case b >= 0xF1 && b <= 0xF4: // 16, 24, 32, 64-bit signed
			w := [...]int{2, 3, 4, 8}[b-0xF1]
			if len(p) < 1+w {
				return n, corruptf("listpack entry cut short")
			}
			var u uint64
			for i := w - 1; i >= 0; i-- {
				u = u<<8 | uint64(p[1+i])
			}
			shift := 64 - 8*w
			size, iv = 1+w, int64(u<<shift)>>shift
		default:
			return n, corruptf("listpack entry with unknown encoding byte %#x", b)
		}
		back := backlenSize(uint64(size))
		if size+back > len(p) {
			return n, corruptf("listpack entry of %d bytes past the end", size+back)
		}
		if got, ok := decodeBacklen(p[size : size+back]); !ok || got != uint64(size) {
			return n, corruptf("listpack entry's back length does not match its size %d", size)
		}
		if isInt {
			str = strconv.AppendInt(num[:0], iv, 10)
		} else {
			str = p[size-stringLen(b, p) : size]
		}
		if err := fn(str); err != nil {
			return n, err
		}
		n++
		p = p[size+back:]
	}
	if count != 0xFFFF && count != n {
		return n, corruptf("listpack header counts %d elements, it holds %d", count, n)
	}
	return n, nil
}

// stringLen returns the length of the string of a listpack string entry starting p.
func stringLen(b byte, p []byte) int {
	switch {
	case b&0xC0 == 0x80:
		return int(b & 0x3F)
	case b&0xF0 == 0xE0:
		return int(b&0x0F)<<8 | int(p[1])
	}
	return int(binary.LittleEndian.Uint32(p[1:]))
}

// backlenSize is the size of the back length that follows an entry of size l.
func backlenSize(l uint64) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// appendBacklen appends the back length of an entry of size l: its 7-bit groups, most
// significant first, each but the first with the high bit set (so it reads back to front).
func appendBacklen(b []byte, l uint64) []byte {
	n := backlenSize(l)
	for i := n - 1; i >= 0; i-- {
		c := byte(l>>(7*uint(i))) & 127
		if i != n-1 {
			c |= 128
		}
		b = append(b, c)
	}
	return b
}

// decodeBacklen reads a back length written by appendBacklen.
func decodeBacklen(p []byte) (uint64, bool) {
	var v uint64
	for i := len(p) - 1; i >= 0; i-- {
		shift := 7 * uint(len(p)-1-i)
		v |= uint64(p[i]&127) << shift
		if (p[i]&128 == 0) != (i == 0) {
			return 0, false
		}
	}
	return v, true
}

// appendListpack appends a listpack of elems, encoded as Redis's lpAppend encodes each
// string: a canonical decimal integer (string2ll) as the smallest integer encoding, anything
// else as a string.
func appendListpack(b []byte, elems [][]byte) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0)
	for _, e := range elems {
		at := len(b)
		if v, ok := parseInt(e); ok {
			switch {
			case v >= 0 && v <= 127:
				b = append(b, byte(v))
			case v >= -4096 && v <= 4095:
				u := uint64(v) & (1<<13 - 1)
				b = append(b, 0xC0|byte(u>>8), byte(u))
			case v >= -32768 && v <= 32767:
				b = append(b, 0xF1, byte(v), byte(v>>8))
			case v >= -8388608 && v <= 8388607:
				b = append(b, 0xF2, byte(v), byte(v>>8), byte(v>>16))
			case v >= -2147483648 && v <= 2147483647:
				b = append(b, 0xF3, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
			default:
				b = append(b, 0xF4)
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		} else {
			switch l := len(e); {
			case l < 64:
				b = append(b, 0x80|byte(l))
			case l < 4096:
				b = append(b, 0xE0|byte(l>>8), byte(l))
			default:
				b = append(b, 0xF0)
				b = binary.LittleEndian.AppendUint32(b, uint32(l))
			}
			b = append(b, e...)
		}
		b = appendBacklen(b, uint64(len(b)-at))
	}
	b = append(b, 0xFF)
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start))
	binary.LittleEndian.PutUint16(b[start+4:], uint16(min(len(elems), 0xFFFF)))
	return b
}

// parseInt parses s as Redis's string2ll does: a canonical decimal int64 (no sign but a
// leading '-', no leading zeros, no "-0", at most 20 characters).
func parseInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) >= 21 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	neg := s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || d[0] < '1' || d[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v *= 10
		if v > 1<<64-1-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// ziplistElements calls fn with each element of the ziplist zl and returns how many there were.
// The header's byte count must be len(zl), its tail offset the last entry's, its count (unless
// 65535) the number found, each entry's previous length right, and the last byte 0xFF.
func ziplistElements(zl []byte, fn func(e element) error) (int, error) {
	if len(zl) < 11 {
		return 0, corruptf("ziplist of %d bytes is shorter than its header and end", len(zl))
	}
	le := binary.LittleEndian
	if total := le.Uint32(zl); uint64(total) != uint64(len(zl)) {
		return 0, corruptf("ziplist header says %d bytes, the string holds %d", total, len(zl))
	}
	tail := int64(le.Uint32(zl[4:]))
	count := int(le.Uint16(zl[8:]))
	off := 10
	prev := 0
	last := 10
	n := 0
	var num [20]byte
	for {
		if off >= len(zl) {
			return n, corruptf("ziplist has no end byte")
		}
		if zl[off] == 0xFF {
			if off != len(zl)-1 {
				return n, corruptf("ziplist has %d bytes after its end", len(zl)-1-off)
			}
			break
		}
		start := off
		// Previous entry's length: one byte below 254, or 254 and four bytes.
		var pl int
		if zl[off] < 254 {
			pl = int(zl[off])
			off++
		} else if zl[off] == 254 {
			if off+5 > len(zl) {
				return n, corruptf("ziplist entry cut short")
			}
			pl = int(le.Uint32(zl[off+1:]))
			off += 5
		} else {
			return n, corruptf("ziplist entry with a bad previous length")
		}
		if pl != prev {
			return n, corruptf("ziplist entry's previous length %d is not %d", pl, prev)
		}
		if off >= len(zl) {
			return n, corruptf("ziplist entry cut short")
		}
		b := zl[off]
		var str []byte
		var dataLen, encLen int
		isInt := false
		var iv int64
		switch b >> 6 {
		case 0:
			encLen, dataLen = 1, int(b&0x3F)
		case 1:
			if off+2 > len(zl) {
				return n, corruptf("ziplist entry cut short")
			}
			encLen, dataLen = 2, int(b&0x3F)<<8|int(zl[off+1])
		case 2:
			if b != 0x80 || off+5 > len(zl) {
				return n, corruptf("ziplist entry with a bad string encoding %#x", b)
			}
			l := uint64(binary.BigEndian.Uint32(zl[off+1:]))
			if l > uint64(len(zl)) {
				return n, corruptf("ziplist string of %d bytes past the end", l)
			}
			encLen, dataLen = 5, int(l)
		default:
			isInt = true
			encLen = 1
			switch {
			case b == 0xC0:
				dataLen = 2
			case b == 0xD0:
				dataLen = 4
			case b == 0xE0:
				dataLen = 8
			case b == 0xF0:
				dataLen = 3
			case b == 0xFE:
				dataLen = 1
			case b >= 0xF1 && b <= 0xFD:
				dataLen, iv = 0, int64(b&0x0F)-1
			default:
				return n, corruptf("ziplist entry with unknown encoding byte %#x", b)
			}
		}
		end := off + encLen + dataLen
		if end > len(zl) || end < off {
			return n, corruptf("ziplist entry of %d bytes past the end", end-start)
		}
		data := zl[off+encLen : end]
		if isInt {
			if dataLen > 0 {
				var u uint64
				for i := dataLen - 1; i >= 0; i-- {
					u = u<<8 | uint64(data[i])
				}
				shift := 64 - 8*dataLen
				iv = int64(u<<shift) >> shift
			}
			str = strconv.AppendInt(num[:0], iv, 10)
		} else {
			str = data
		}
		if err := fn(str); err != nil {
			return n, err
		}
		n++
		last = start
		prev = end - start
		off = end
	}
	if n > 0 && tail != int64(last) || n == 0 && tail != 10 {
		return n, corruptf("ziplist tail offset %d is not its last entry's %d", tail, last)
	}
	if count != 0xFFFF && count != n {
		return n, corruptf("ziplist header counts %d elements, it holds %d", count, n)
	}
	return n, nil
}

// zipmapPairs calls fn with each field and value of the zipmap zm (Redis 2.4's small hashes).
func zipmapPairs(zm []byte, fn func(field, value []byte) error) error {
	if len(zm) < 2 {
		return corruptf("zipmap of %d bytes", len(zm))
	}
	p := zm[1:]
	readLen := func() (int, bool) {
		if len(p) == 0 {
			return 0, false
		}
		if p[0] < 254 {
			l := int(p[0])
			p = p[1:]
			return l, true
		}
		if p[0] == 254 && len(p) >= 5 {
			l := binary.LittleEndian.Uint32(p[1:])
			p = p[5:]
			return int(l), uint64(l) <= uint64(len(zm))
		}
		return 0, false
	}
	for {
		if len(p) == 0 {
			return corruptf("zipmap has no end byte")
		}
		if p[0] == 255 {
			if len(p) != 1 {
				return corruptf("zipmap has bytes after its end")
			}
			return nil
		}
		kl, ok := readLen()
		if !ok || kl > len(p) {
			return corruptf("zipmap field past the end")
		}
		field := p[:kl]
		p = p[kl:]
		vl, ok := readLen()
		if !ok || len(p) < 1 {
			return corruptf("zipmap value past the end")
		}
		free := int(p[0])
		p = p[1:]
		if vl+free > len(p) {
			return corruptf("zipmap value past the end")
		}
		value := p[:vl]
		p = p[vl+free:]
		if err := fn(field, value); err != nil {
			return err
		}
	}
}
