package rdb

// LZF, as Redis stores compressed strings (src/lzf_c.c and src/lzf_d.c, liblzf 3.6 with HLOG 16
// and VERY_FAST). It is written here rather than taken from a library because RDB needs two
// things the Go LZF packages do not do: decompressing a string of any size into its destination
// (a filter's bit array) through a small window instead of a second copy of the whole string,
// and compressing a value read in pieces while it changes (a filter's bits during a snapshot).
//
// The format is a sequence of items, each starting with a control byte c:
//
//	c < 32           a literal run: the next c+1 bytes (1..32)
//	c>>5 = L, 1..6   a back reference of L+2 bytes (3..8) starting (c&31)<<8 + next byte + 1
//	                 bytes before the end of the output so far
//	c>>5 = 7         a back reference of 9 + next byte bytes (9..264), its distance in the byte after
//
// A reference may overlap the bytes it produces (a run). The distance is at most 8192, so a
// decoder needs only the last 8 KiB of its output.

const (
	lzfMaxLit  = 32
	lzfMaxOff  = 8192
	lzfMaxRef  = 264
	lzfHashLog = 16

	// lzfMaxRatio bounds the output of one input byte: a three-byte reference makes 264 bytes.
	lzfMaxRatio = 88
)

// lzfSource is where a decoder reads compressed bytes.
type lzfSource interface {
	ReadByte() (byte, error)
	readFull(p []byte) error
}

// lzfDecode decompresses clen bytes read from src, which must make exactly n bytes, and hands
// the output to emit in order, in pieces of at most window bytes (emit must not keep them). It
// keeps only a window of the output, so a string of any length costs a bounded buffer. Errors
// are src's, emit's, or errCorrupt-wrapping descriptions of bad data.
func lzfDecode(src lzfSource, clen, n uint64, window int, emit func(p []byte) error) error {
	if n > clen*lzfMaxRatio {
		return corruptf("LZF string of %d bytes cannot make %d", clen, n)
	}
	size := uint64(window) + lzfMaxOff + lzfMaxRef
	buf := make([]byte, 0, min(n, size))
	var done uint64 // bytes emitted before buf[pend]
	pend := 0       // buf[:pend] is history already emitted
	var read uint64 // compressed bytes consumed
	var made uint64 // output bytes made
	next := func() (byte, error) {
		if read == clen {
			return 0, corruptf("LZF string ends inside an item")
		}
		read++
		return src.ReadByte()
	}
	flush := func() error {
		if pend < len(buf) {
			if err := emit(buf[pend:]); err != nil {
				return err
			}
			done += uint64(len(buf) - pend)
		}
		keep := min(len(buf), lzfMaxOff)
		copy(buf, buf[len(buf)-keep:])
		buf = buf[:keep]
		pend = keep
		return nil
	}
	for read < clen {
		if uint64(len(buf))+lzfMaxRef > uint64(cap(buf)) && uint64(cap(buf)) < n {
			if err := flush(); err != nil {
				return err
			}
		}
		c, err := next()
		if err != nil {
			return err
		}
		if c < 32 {
			k := uint64(c) + 1
			if made+k > n {
				return corruptf("LZF string makes more than %d bytes", n)
			}
			if clen-read < k {
				return corruptf("LZF literal run of %d bytes past the end of the string", k)
			}
			if uint64(len(buf))+k > uint64(cap(buf)) {
				if err := flush(); err != nil {
					return err
				}
			}
			at := len(buf)
			buf = buf[:at+int(k)]
			if err := src.readFull(buf[at:]); err != nil {
				return err
			}
			read += k
			made += k
			continue
		}
		k := uint64(c >> 5)
		if k == 7 {
			b, err := next()
			if err != nil {
				return err
			}
			k += uint64(b)
		}
		lo, err := next()
		if err != nil {
			return err
		}
		k += 2
		dist := uint64(c&31)<<8 + uint64(lo) + 1
		if dist > made {
			return corruptf("LZF reference %d bytes back with %d bytes made", dist, made)
		}
		if made+k > n {
			return corruptf("LZF string makes more than %d bytes", n)
		}
		if uint64(len(buf))+k > uint64(cap(buf)) {
			if err := flush(); err != nil {
				return err
			}
		}
		from := len(buf) - int(dist)
		for i := range int(k) { // byte by byte: the reference may overlap its output
			buf = append(buf, buf[from+i])
		}
		made += k
	}
	if made != n {
		return corruptf("LZF string makes %d bytes, not %d", made, n)
	}
	if pend < len(buf) {
		return emit(buf[pend:])
	}
	return nil
}

// An lzfCompressor compresses as Redis's lzf_compress does. Its hash table is kept between
// calls; positions are stored offset by a base that grows with every call, so entries of
// earlier calls read as empty without clearing 64K slots for each short string.
type lzfCompressor struct {
	tab  [1 << lzfHashLog]uint64
	base uint64
}

// lzfInput is the data being compressed, seen through a window: the bytes at positions
// [off, off+len(win)) of n, refilled by more when a position past the window is needed.
type lzfInput struct {
	win  []byte
	off  int64
	n    int64
	more func(have []byte, off int64) ([]byte, int64) // returns the new window
}

// compress appends to out the LZF form of the input, as lzf_compress(in, n, out, max) would
// write it into a buffer of max bytes, and reports false (out unchanged in length) when it does
// not fit in max bytes, which is how Redis decides that a string is not worth compressing.
func (z *lzfCompressor) compress(out []byte, in *lzfInput, maxOut int64) ([]byte, bool) {
	n := in.n
	if n == 0 || maxOut <= 0 {
		return out, false
	}
	start := len(out)
	limit := start + int(maxOut)
	base := z.base + 1
	z.base += uint64(n) + 2
	tab := &z.tab
	// Keep the window covering what the loop below reads: up to lzfMaxOff+2 bytes behind the
	// position and lzfMaxRef+3 ahead of it.
	const ahead = lzfMaxRef + 8
	// The window and its end are kept in locals, refilled only when the position nears the
	// end: the loop below runs once per input byte.
	win, wOff := in.win, in.off
	wEnd := wOff + int64(len(win))
	ensure := func(ip int64) {
		if ip+ahead > wEnd && wEnd < n {
			in.win, in.off = in.more(in.win, max(0, ip-lzfMaxOff-8))
			win, wOff = in.win, in.off
			wEnd = wOff + int64(len(win))
		}
	}
	fail := func() ([]byte, bool) { return out[:start], false }

	ip := int64(0)
	lit := 0
	run := len(out) // where the current literal run's length byte goes
	out = append(out, 0)
	ensure(0)
	w := win[ip-wOff:]
	var hval uint32
	if n >= 2 {
		hval = uint32(w[0])<<8 | uint32(w[1])
	}
	for ip < n-2 {
		if ip+ahead > wEnd && wEnd < n {
			ensure(ip)
		}
		w = win[ip-wOff:]
		hval = hval<<8 | uint32(w[2])
		slot := &tab[((hval>>(3*8-lzfHashLog))-hval*5)&(1<<lzfHashLog-1)]
		ref := int64(-1)
		if *slot >= base {
			ref = int64(*slot - base)
		}
		*slot = base + uint64(ip)
		if ref > 0 && ip-ref-1 < lzfMaxOff {
			r := win[ref-wOff:]
			if r[2] == w[2] && r[0] == w[0] && r[1] == w[1] {
				off := ip - ref - 1
				maxlen := min(n-ip-2, lzfMaxRef)
				if len(out)+4 >= limit {
					undo := 0
					if lit == 0 {
						undo = 1
					}
					if len(out)-undo+4 >= limit {
						return fail()
					}
				}
				out[run] = byte(lit - 1)
				if lit == 0 {
					out = out[:len(out)-1]
				}
				j := int64(3)
				if maxlen > 16 {
					for j <= 18 && r[j] == w[j] {
						j++
					}
				}
				if maxlen <= 16 || j > 18 {
					for j < maxlen && r[j] == w[j] {
						j++
					}
				}
				l := j - 2
				if l < 7 {
					out = append(out, byte(off>>8)+byte(l<<5))
				} else {
					out = append(out, byte(off>>8)+7<<5, byte(l-7))
				}
				out = append(out, byte(off))
				lit = 0
				run = len(out)
				out = append(out, 0)
				ip += j
				if ip >= n-2 {
					break
				}
				// Hash the last two positions of the match, as VERY_FAST does.
				ip -= 2
				ensure(ip)
				w = win[ip-wOff:]
				hval = uint32(w[0])<<8 | uint32(w[1])
				hval = hval<<8 | uint32(w[2])
				tab[((hval>>(3*8-lzfHashLog))-hval*5)&(1<<lzfHashLog-1)] = base + uint64(ip)
				ip++
				hval = hval<<8 | uint32(w[3])
				tab[((hval>>(3*8-lzfHashLog))-hval*5)&(1<<lzfHashLog-1)] = base + uint64(ip)
				ip++
				continue
			}
		}
		if len(out) >= limit {
			return fail()
		}
		lit++
		out = append(out, w[0])
		ip++
		if lit == lzfMaxLit {
			out[run] = lzfMaxLit - 1
			lit = 0
			run = len(out)
			out = append(out, 0)
		}
	}
	if len(out)+3 > limit {
		return fail()
	}
	for ip < n {
		ensure(ip)
		lit++
		out = append(out, win[ip-wOff])
		ip++
		if lit == lzfMaxLit {
			out[run] = lzfMaxLit - 1
			lit = 0
			run = len(out)
			out = append(out, 0)
		}
	}
	out[run] = byte(lit - 1)
	if lit == 0 {
		out = out[:len(out)-1]
	}
	return out, true
}

// compressBytes is compress for data held in memory.
func (z *lzfCompressor) compressBytes(out, data []byte, maxOut int64) ([]byte, bool) {
	in := lzfInput{win: data, n: int64(len(data))}
	return z.compress(out, &in, maxOut)
}

// lzfWindow is the window size of a compression read in pieces.
const lzfWindow = 1 << 20

// compressFrom is compress for n bytes read with readAt(p, off) in pieces of lzfWindow.
func (z *lzfCompressor) compressFrom(out []byte, n int64, maxOut int64, buf []byte, readAt func(p []byte, off int64)) ([]byte, bool) {
	in := lzfInput{n: n}
	in.more = func(have []byte, from int64) ([]byte, int64) {
		// Keep have's bytes from 'from' on, and read up to lzfWindow more after them.
		from = max(from, in.off)
		end := in.off + int64(len(have))
		kept := have[from-in.off:]
		next := min(n-end, lzfWindow)
		if cap(buf) < len(kept)+int(next) {
			nb := make([]byte, len(kept), len(kept)+int(next)+lzfMaxOff)
			copy(nb, kept)
			buf = nb
		} else {
			copy(buf[:len(kept)], kept)
			buf = buf[:len(kept)]
		}
		buf = buf[:len(kept)+int(next)]
		readAt(buf[len(kept):], end)
		return buf, from
	}
	return z.compress(out, &in, maxOut)
}
