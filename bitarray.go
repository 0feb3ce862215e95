package bloom

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"
)

// bitArray is the lock-free bit array under every filter of this package, in the layout Guava's
// LockFreeBitArray and RedisBloom share: bit b lives in word b>>6 under mask 1<<(b&63), and the
// little-endian bytes of the words are RedisBloom's byte layout (bit b in byte b>>3 at 1<<(b&7)).
// Every access is atomic, so adds, tests, unions and snapshots may run concurrently; an add never
// takes a lock, it ORs its bits in with one atomic instruction per word that still needs one.
type bitArray []uint64

// newBitArray allocates a zeroed array of the given number of words, refusing sizes that cannot
// fit in this machine's memory instead of letting the runtime abort the process.
func newBitArray(words uint64) (bitArray, error) {
	if words == 0 {
		return nil, fmt.Errorf("%w: a filter needs at least one 64-bit word", ErrInvalidParameter)
	}
	if err := checkAlloc(words * 8); err != nil {
		return nil, err
	}
	return allocWords(words), nil
}

// get reports whether bit b is set.
func (a bitArray) get(b uint64) bool {
	return atomic.LoadUint64(&a[b>>6])&(1<<(b&63)) != 0
}

// set sets bit b and reports whether it was clear before. It reads before it ORs: most bits a
// busy filter sets are already set, and a plain load costs a fraction of a locked instruction.
func (a bitArray) set(b uint64) bool {
	w, mask := &a[b>>6], uint64(1)<<(b&63)
	if atomic.LoadUint64(w)&mask != 0 {
		return false
	}
	return atomic.OrUint64(w, mask)&mask == 0
}

// count returns the number of set bits.
func (a bitArray) count() uint64 {
	var n int
	for i := range a {
		n += bits.OnesCount64(atomic.LoadUint64(&a[i]))
	}
	return uint64(n)
}

// or sets every bit that is set in b; and clears every bit that is clear in b.
// The arrays must have the same length.
func (a bitArray) or(b bitArray) {
	for i := range a {
		if v := atomic.LoadUint64(&b[i]); v != 0 {
			atomic.OrUint64(&a[i], v)
		}
	}
}

func (a bitArray) and(b bitArray) {
	for i := range a {
		if v := atomic.LoadUint64(&b[i]); v != ^uint64(0) {
			atomic.AndUint64(&a[i], v)
		}
	}
}

func (a bitArray) clear() {
	for i := range a {
		atomic.StoreUint64(&a[i], 0)
	}
}

// equal reports whether a and b have the same length and bits.
func (a bitArray) equal(b bitArray) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if atomic.LoadUint64(&a[i]) != atomic.LoadUint64(&b[i]) {
			return false
		}
	}
	return true
}

func (a bitArray) clone() bitArray {
	c := allocWords(uint64(len(a)))
	for i := range a {
		c[i] = atomic.LoadUint64(&a[i])
	}
	return c
}

// byteLen is the length of the array's byte view.
func (a bitArray) byteLen() int64 { return int64(len(a)) * 8 }

// readAt copies the array's little-endian byte view from off into p (io.ReaderAt semantics).
func (a bitArray) readAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: negative offset %d", ErrInvalidParameter, off)
	}
	if off >= a.byteLen() {
		return 0, io.EOF
	}
	n := 0
	// A word at a time, each loaded atomically (adds may be setting bits in it); the whole
	// words in the middle are stored straight into p, without a copy call per word, which
	// made a snapshot's copy of a large filter cost three times more CPU.
	if off&7 != 0 {
		n = a.readPartial(p, off)
		off += int64(n)
	}
	if words := min(int64(len(p)-n)/8, int64(len(a))-off>>3); words > 0 {
		src := a[off>>3 : off>>3+words]
		dst := p[n : n+8*len(src)]
		for i := range src {
			binary.LittleEndian.PutUint64(dst[8*i:], atomic.LoadUint64(&src[i]))
		}
		n += len(dst)
		off += int64(len(dst))
	}
	if n < len(p) && off < a.byteLen() {
		n += a.readPartial(p[n:], off)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readPartial copies into p the bytes of the word holding byte off, from off on, and returns how
// many.
func (a bitArray) readPartial(p []byte, off int64) int {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], atomic.LoadUint64(&a[off>>3]))
	return copy(p, buf[off&7:])
}

// writeAt overwrites the array's byte view at off with p (io.WriterAt semantics). Whole words are
// stored atomically; a partly covered word is merged with a compare-and-swap loop, so concurrent
// adds to its other bytes are not lost.
func (a bitArray) writeAt(p []byte, off int64) (int, error) {
	if off < 0 || off > a.byteLen() || int64(len(p)) > a.byteLen()-off {
		return 0, fmt.Errorf("%w: write of %d bytes at offset %d does not fit in %d bytes", ErrInvalidParameter, len(p), off, a.byteLen())
	}
	n := 0
	for n < len(p) {
		w := &a[off>>3]
		start := int(off & 7)
		c := min(8-start, len(p)-n)
		if c == 8 {
			atomic.StoreUint64(w, binary.LittleEndian.Uint64(p[n:]))
		} else {
			var val, mask [8]byte
			copy(val[start:], p[n:n+c])
			for i := start; i < start+c; i++ {
				mask[i] = 0xff
			}
			v, m := binary.LittleEndian.Uint64(val[:]), binary.LittleEndian.Uint64(mask[:])
			for {
				old := atomic.LoadUint64(w)
				if atomic.CompareAndSwapUint64(w, old, old&^m|v) {
					break
				}
			}
		}
		n += c
		off += int64(c)
	}
	return n, nil
}
