package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/bloomd/bloom/redisbloom"
)

// Copying a filter's bits to a snapshot while clients go on.
//
// A background snapshot copies gigabytes on the same cores as the event loops (bloomd runs one
// loop per core but one), so the copy works in slices of copySlice bytes, about 50 µs each, and
// lets its pacer (pace.go) hand the core over between them. It also touches as little memory as
// it can: each byte of the filter is read once into a small buffer that stays in the cache,
// checksummed there and handed to the writer, which copies it into its own buffers; there is no
// buffer the size of a piece, and the buffers are reused from one snapshot to the next, so a
// snapshot gives the garbage collector nothing to do.
//
// A sparse piece's bitmap comes before its blocks, so a piece is read twice: first to find the
// blocks that are not all zeros (a block whose first 64 bytes are not all zeros is known
// without reading the rest, so for a filter past a few percent full this reads a sixty-fourth
// of it), then to copy those blocks. Adds may set bits in between, which is as exact as a
// single read (see the package documentation): a block found all zeros held no bit at the
// instant of the snapshot either, since adds never clear bits, and is left to the log's replay;
// the bits of a block that is copied are read when it is copied. (BF.LOADCHUNK, the one write
// that clears bits, replaces its whole range when it is replayed.)
const (
	copySlice = 256 << 10 // bytes copied between two steps of the pacer
	probeSize = 64        // bytes of a block read to find it not all zeros
)

// A bitCopier writes filters' bits to a snapshot, in slices, pacing itself between them. Its
// buffers come from copierPool.
type bitCopier struct {
	buf  []byte // copySlice bytes
	bm   []byte // a piece's bitmap
	le   [4]byte
	pace *pacer
}

var copierPool = sync.Pool{New: func() any { return &bitCopier{buf: make([]byte, copySlice)} }}

var errShape = errors.New("the filter changed shape while being saved")

// writeFilter writes the bits of ch, whose links have the given sizes in bytes, in pieces of at
// most pieceSize that never span two links: sparse pieces (bitmap, the blocks that are not all
// zeros, checksum) or plain ones (the bytes, checksum). It returns a shape error if ch holds
// fewer bytes than sizes say.
func (c *bitCopier) writeFilter(w io.Writer, ch *redisbloom.Chain, sizes []uint64, sparse bool) error {
	at := int64(0) // of the piece, in ch's bytes (BF.SCANDUMP's iterator minus one)
	for _, size := range sizes {
		for off := uint64(0); off < size; {
			n := int64(min(pieceSize, size-off))
			var err error
			if sparse {
				err = c.sparsePiece(w, ch, at, n)
			} else {
				err = c.plainPiece(w, ch, at, n)
			}
			if err != nil {
				return err
			}
			at += n
			off += uint64(n)
		}
	}
	return nil
}

// read reads len(p) bytes of ch at off, or fails if ch is shorter.
func read(ch *redisbloom.Chain, p []byte, off int64) error {
	if n, _ := ch.ReadAt(p, off); n != len(p) {
		return errShape
	}
	return nil
}

func (c *bitCopier) plainPiece(w io.Writer, ch *redisbloom.Chain, at, n int64) error {
	var sum uint32
	for o := int64(0); o < n; o += copySlice {
		p := c.buf[:min(copySlice, n-o)]
		if err := read(ch, p, at+o); err != nil {
			return err
		}
		sum = crcUpdate(sum, p)
		if _, err := w.Write(p); err != nil {
			return err
		}
		c.pace.step()
	}
	binary.LittleEndian.PutUint32(c.le[:], sum)
	_, err := w.Write(c.le[:])
	return err
}

func (c *bitCopier) sparsePiece(w io.Writer, ch *redisbloom.Chain, at, n int64) error {
	blocks := (n + blockSize - 1) / blockSize
	c.bm = append(c.bm[:0], make([]byte, bitmapBytes(uint64(n)))...)
	marked := func(i int64) bool { return c.bm[i/8]&(1<<(i%8)) != 0 }
	// First pass: which blocks are not all zeros.
	const perSlice = copySlice / blockSize
	for i := int64(0); i < blocks; i++ {
		start := i * blockSize
		blk := c.buf[:min(blockSize, n-start)]
		probe := blk[:min(probeSize, len(blk))]
		if err := read(ch, probe, at+start); err != nil {
			return err
		}
		nonzero := !bytes.Equal(probe, zeroBlock[:len(probe)])
		if !nonzero && len(blk) > len(probe) {
			rest := blk[len(probe):]
			if err := read(ch, rest, at+start+int64(len(probe))); err != nil {
				return err
			}
			nonzero = !bytes.Equal(rest, zeroBlock[:len(rest)])
		}
		if nonzero {
			c.bm[i/8] |= 1 << (i % 8)
		}
		if i%perSlice == perSlice-1 {
			c.pace.step()
		}
	}
	sum := crc(c.bm)
	if _, err := w.Write(c.bm); err != nil {
		return err
	}
	// Second pass: the marked blocks, a run of consecutive ones (at most a slice) at a time.
	for i := int64(0); i < blocks; {
		if !marked(i) {
			i++
			continue
		}
		j := i + 1
		for j < blocks && j-i < perSlice && marked(j) {
			j++
		}
		p := c.buf[:min(j*blockSize, n)-i*blockSize]
		if err := read(ch, p, at+i*blockSize); err != nil {
			return err
		}
		sum = crcUpdate(sum, p)
		if _, err := w.Write(p); err != nil {
			return err
		}
		c.pace.step()
		i = j
	}
	binary.LittleEndian.PutUint32(c.le[:], sum)
	_, err := w.Write(c.le[:])
	return err
}
