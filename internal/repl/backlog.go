package repl

import "fmt"

// chunkSize is the unit in which the backlog grows and is charged to memory (Redis's
// replication buffer grows in blocks of 16 KiB too).
const chunkSize = 16 << 10

// minBacklog is the smallest backlog, as Redis's CONFIG_REPL_BACKLOG_MIN_SIZE.
const minBacklog = 16 << 10

// A backlog holds the last bytes of the stream, at most size of them (repl-backlog-size). It
// does not allocate size bytes up front: it grows a chunk at a time as the stream fills it, and
// each chunk is charged to the server's memory ceiling first. When the ceiling refuses a chunk,
// the backlog stops growing and reuses its oldest chunk instead, holding less history than size
// (and says so once in the log). A new size keeps the history (the oldest bytes go if it is
// smaller), as Redis does since 7.0.
//
// The bytes held are chunks[0][head:], chunks[1], ..., chunks[len-1]: every chunk but the last is
// full. A backlog is not safe for concurrent use; Repl guards it with its mutex.
type backlog struct {
	size    int64
	chunks  [][]byte
	head    int
	histlen int64  // bytes held
	spare   []byte // one emptied chunk kept for the next growth (charged)
	charged int64  // bytes of chunks charged, the spare included
	charge  func(n int64) error
	// refused is the ceiling's refusal of the last growth, until the backlog grows again: it
	// is logged once.
	refused error
}

func newBacklog(size int64, charge func(int64) error) *backlog {
	return &backlog{size: max(size, minBacklog), charge: charge}
}

// add appends stream bytes, dropping the oldest ones past size. It returns the ceiling's
// refusal when the backlog needed a chunk it could not have and the refusal is new.
func (b *backlog) add(p []byte) (refusal error) {
	for len(p) > 0 {
		n := len(b.chunks)
		if n == 0 || len(b.chunks[n-1]) == chunkSize {
			c, err := b.newChunk()
			if c == nil {
				// Nothing to reuse and no room for a chunk: the backlog stays empty.
				b.histlen = 0
				return err
			}
			if err != nil {
				refusal = err
			}
			b.chunks = append(b.chunks, c)
			n = len(b.chunks)
		}
		last := b.chunks[n-1]
		k := copy(last[len(last):chunkSize], p)
		b.chunks[n-1] = last[:len(last)+k]
		b.histlen += int64(k)
		p = p[k:]
		b.trim()
	}
	return refusal
}

// newChunk returns an empty chunk for the tail: the spare, a new one if the ceiling allows, or
// else the oldest chunk, whose bytes leave the history. It returns the refusal the first time the
// ceiling refuses; nil and the refusal when there is no chunk at all to reuse.
func (b *backlog) newChunk() ([]byte, error) {
	if c := b.spare; c != nil {
		b.spare = nil
		return c[:0], nil
	}
	err := b.grow()
	if err == nil {
		b.refused = nil
		return make([]byte, 0, chunkSize), nil
	}
	first := b.refused == nil
	b.refused = err
	if !first {
		err = nil
	}
	if len(b.chunks) == 0 {
		return nil, err
	}
	c := b.chunks[0]
	b.histlen -= int64(len(c) - b.head)
	b.chunks = b.chunks[1:]
	b.head = 0
	return c[:0], err
}

func (b *backlog) grow() error {
	if b.charge != nil {
		if err := b.charge(chunkSize); err != nil {
			return err
		}
	}
	b.charged += chunkSize
	return nil
}

// trim drops the oldest bytes past size: whole chunks go (one is kept as the spare), a partly
// dropped chunk moves head.
func (b *backlog) trim() {
	for b.histlen > b.size {
		c := b.chunks[0]
		avail := int64(len(c) - b.head)
		drop := b.histlen - b.size
		if drop < avail || len(b.chunks) == 1 {
			b.head += int(drop)
			b.histlen -= drop
			return
		}
		b.histlen -= avail
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
		b.head = 0
		if b.spare == nil {
			b.spare = c[:0]
		} else {
			b.release(chunkSize)
		}
	}
}

func (b *backlog) release(n int64) {
	b.charged -= n
	if b.charge != nil {
		b.charge(-n)
	}
}

// setSize changes size, keeping the newest bytes of the history that fit.
func (b *backlog) setSize(size int64) {
	b.size = max(size, minBacklog)
	b.trim()
	b.refused = nil
}

// reset empties the backlog and gives its memory back.
func (b *backlog) reset() {
	b.chunks, b.head, b.histlen, b.spare, b.refused = nil, 0, 0, nil, nil
	if b.charged > 0 {
		b.release(b.charged)
	}
}

// from returns a copy of the history from stream position pos (0-based) to end, the stream
// position after the last byte held; ok is false if the backlog does not hold pos.
func (b *backlog) from(pos, end int64) (out []byte, ok bool) {
	first := end - b.histlen
	if pos < first || pos > end {
		return nil, false
	}
	out = make([]byte, 0, end-pos)
	i := int64(b.head) + pos - first // index in the concatenation of the chunks
	for ci := i / chunkSize; ci < int64(len(b.chunks)); ci++ {
		c := b.chunks[ci]
		if ci == i/chunkSize {
			c = c[i%chunkSize:]
		}
		out = append(out, c...)
	}
	return out, true
}

// String describes the backlog for logs.
func (b *backlog) String() string {
	return fmt.Sprintf("%d of %d bytes held in %d chunks", b.histlen, b.size, len(b.chunks))
}
