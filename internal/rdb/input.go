package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// input reads RDB data: it counts the bytes it consumes, keeps Redis's CRC-64 of them, and
// knows, when the caller does, how many are left, so that every length can be checked before
// anything is allocated for it.
type input struct {
	r    *bufio.Reader
	off  int64 // bytes consumed
	size int64 // total bytes, or -1 when unknown (a socket)
	crc  uint64

	// tee receives every byte consumed, in order, through teeBuf (see ReaderOptions.Tee); its
	// first error is kept in teeErr and ends the reading.
	tee    io.Writer
	teeBuf []byte
	teeErr error
}

// teeMax is how many consumed bytes are gathered before they are written to the tee.
const teeMax = 64 << 10

// copyOut passes consumed bytes to the tee, if any.
func (in *input) copyOut(p []byte) {
	if in.tee == nil || in.teeErr != nil {
		return
	}
	if len(in.teeBuf)+len(p) <= teeMax {
		in.teeBuf = append(in.teeBuf, p...)
		return
	}
	if in.flushTee() == nil && len(p) >= teeMax {
		_, in.teeErr = in.tee.Write(p)
		return
	}
	in.teeBuf = append(in.teeBuf, p...)
}

// flushTee writes the gathered bytes to the tee.
func (in *input) flushTee() error {
	if in.tee != nil && in.teeErr == nil && len(in.teeBuf) > 0 {
		_, in.teeErr = in.tee.Write(in.teeBuf)
		in.teeBuf = in.teeBuf[:0]
	}
	if in.teeErr != nil {
		return fmt.Errorf("rdb: writing the copy of the input: %w", in.teeErr)
	}
	return nil
}

// piece is the size of the steps in which long strings are read and allocated.
const piece = 1 << 20

func (in *input) fail(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf("input cut short at byte %d", in.off)
	}
	return fmt.Errorf("rdb: reading at byte %d: %w", in.off, err)
}

// left returns the bytes left, or MaxInt64 when the size is unknown.
func (in *input) left() int64 {
	if in.size < 0 {
		return math.MaxInt64
	}
	return in.size - in.off
}

// need fails unless n bytes can be left.
func (in *input) need(n uint64, what string) error {
	if n > uint64(in.left()) {
		return corruptf("%s of %d bytes at byte %d: only %d bytes left", what, n, in.off, in.left())
	}
	return nil
}

func (in *input) ReadByte() (byte, error) {
	b, err := in.r.ReadByte()
	if err != nil {
		return 0, in.fail(err)
	}
	in.off++
	in.crc = jonesTable[byte(in.crc)^b] ^ in.crc>>8
	if in.tee != nil {
		if in.teeBuf = append(in.teeBuf, b); len(in.teeBuf) >= teeMax {
			if err := in.flushTee(); err != nil {
				return 0, err
			}
		}
	}
	return b, nil
}

func (in *input) readFull(p []byte) error {
	n, err := io.ReadFull(in.r, p)
	in.off += int64(n)
	in.crc = crcUpdate(in.crc, p[:n])
	in.copyOut(p[:n])
	if err != nil {
		return in.fail(err)
	}
	if in.teeErr != nil {
		return in.flushTee()
	}
	return nil
}

// discard reads and drops n bytes.
func (in *input) discard(n uint64) error {
	if err := in.need(n, "data"); err != nil {
		return err
	}
	for n > 0 {
		k := int(min(n, uint64(in.r.Size())))
		p, err := in.r.Peek(k)
		in.crc = crcUpdate(in.crc, p)
		in.copyOut(p)
		if in.teeErr != nil {
			return in.flushTee()
		}
		d, _ := in.r.Discard(len(p))
		in.off += int64(d)
		n -= uint64(d)
		if err != nil && len(p) < k {
			return in.fail(err)
		}
	}
	return nil
}

// readLen reads a length (rdbLoadLen): its value, or, with enc set, the 6-bit kind of a specially
// encoded string.
func (in *input) readLen() (n uint64, enc bool, err error) {
	b, err := in.ReadByte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3F), false, nil
	case 1:
		c, err := in.ReadByte()
		if err != nil {
			return 0, false, err
		}
		return uint64(b&0x3F)<<8 | uint64(c), false, nil
	case 3:
		return uint64(b & 0x3F), true, nil
	}
	var buf [8]byte
	switch b {
	case 0x80:
		if err := in.readFull(buf[:4]); err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(buf[:4])), false, nil
	case 0x81:
		if err := in.readFull(buf[:]); err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(buf[:]), false, nil
	}
	return 0, false, corruptf("unknown length encoding %#x at byte %d", b, in.off-1)
}

// readCount reads a plain length.
func (in *input) readCount() (uint64, error) {
	n, enc, err := in.readLen()
	if err == nil && enc {
		err = corruptf("an encoded string where a length belongs, at byte %d", in.off-1)
	}
	return n, err
}

// count reads a number of elements, each at least least bytes long in the input, and checks
// that they can fit in what is left.
func (in *input) count(least uint64, what string) (uint64, error) {
	n, err := in.readCount()
	if err != nil {
		return 0, err
	}
	if least > 0 && n > uint64(in.left())/least {
		return 0, corruptf("%d %s at byte %d: only %d bytes left", n, what, in.off, in.left())
	}
	return n, nil
}

func (in *input) readUint64LE() (uint64, error) {
	var b [8]byte
	if err := in.readFull(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// A stringHead is the start of a string: its encoding and lengths.
type stringHead struct {
	kind int    // -1 raw, or encInt8/16/32, encLZF
	n    uint64 // length of the string (for an integer: of its decimal form, once read)
	clen uint64 // compressed length (LZF)
	num  []byte // an integer's decimal form
}

// readStringHead reads a string's encoding and lengths (and an integer's whole value), checking
// the lengths against what is left.
func (in *input) readStringHead() (stringHead, error) {
	n, enc, err := in.readLen()
	if err != nil {
		return stringHead{}, err
	}
	if !enc {
		if err := in.need(n, "string"); err != nil {
			return stringHead{}, err
		}
		return stringHead{kind: -1, n: n}, nil
	}
	var b [4]byte
	var v int64
	switch n {
	case encInt8:
		if err := in.readFull(b[:1]); err != nil {
			return stringHead{}, err
		}
		v = int64(int8(b[0]))
	case encInt16:
		if err := in.readFull(b[:2]); err != nil {
			return stringHead{}, err
		}
		v = int64(int16(binary.LittleEndian.Uint16(b[:])))
	case encInt32:
		if err := in.readFull(b[:4]); err != nil {
			return stringHead{}, err
		}
		v = int64(int32(binary.LittleEndian.Uint32(b[:])))
	case encLZF:
		clen, err := in.readCount()
		if err != nil {
			return stringHead{}, err
		}
		ulen, err := in.readCount()
		if err != nil {
			return stringHead{}, err
		}
		if err := in.need(clen, "compressed string"); err != nil {
			return stringHead{}, err
		}
		if clen == 0 || ulen > clen*lzfMaxRatio {
			return stringHead{}, corruptf("LZF string of %d bytes cannot make %d, at byte %d", clen, ulen, in.off)
		}
		return stringHead{kind: encLZF, n: ulen, clen: clen}, nil
	default:
		return stringHead{}, corruptf("unknown string encoding %d at byte %d", n, in.off-1)
	}
	num := strconv.AppendInt(nil, v, 10)
	return stringHead{kind: int(n), n: uint64(len(num)), num: num}, nil
}

// readBody streams the string's bytes to emit in order, in pieces of at most piece bytes
// (emit must not keep them).
func (in *input) readBody(h stringHead, buf []byte, emit func(p []byte) error) error {
	switch h.kind {
	case -1:
		for left := h.n; left > 0; {
			k := min(left, piece)
			if uint64(cap(buf)) < k {
				buf = make([]byte, k)
			}
			p := buf[:k]
			if err := in.readFull(p); err != nil {
				return err
			}
			if err := emit(p); err != nil {
				return err
			}
			left -= k
		}
		return nil
	case encLZF:
		return lzfDecode(in, h.clen, h.n, piece, emit)
	}
	if len(h.num) == 0 {
		return nil
	}
	return emit(h.num)
}

// readString reads a whole string, allocating as its bytes arrive, so that a length the input
// does not back costs no more than the input that did arrive.
func (in *input) readString() ([]byte, error) {
	h, err := in.readStringHead()
	if err != nil {
		return nil, err
	}
	if h.num != nil {
		return h.num, nil
	}
	if h.kind == -1 && h.n <= piece {
		b := make([]byte, h.n)
		return b, in.readFull(b)
	}
	out := make([]byte, 0, min(h.n, piece))
	err = in.readBody(h, nil, func(p []byte) error {
		out = append(out, p...)
		return nil
	})
	return out, err
}

// skipString reads past a string.
func (in *input) skipString() error {
	h, err := in.readStringHead()
	if err != nil {
		return err
	}
	switch h.kind {
	case -1:
		return in.discard(h.n)
	case encLZF:
		return in.discard(h.clen)
	}
	return nil
}

// bufioReader reads b through a buffer no larger than b.
func bufioReader(b []byte) *bufio.Reader {
	return bufio.NewReaderSize(bytes.NewReader(b), min(max(len(b), 16), 1<<16))
}
