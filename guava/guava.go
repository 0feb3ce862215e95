package guava

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bloomd/bloom"
)

const (
	// MaxK is the largest number of hash functions a stream can hold: Guava stores k in one
	// unsigned byte and its constructor refuses more.
	MaxK = 255

	// MaxWords is the largest number of 64-bit words a stream can hold: Guava counts them in a
	// Java int. That is 2^37 - 64 bits, 16 GiB.
	MaxWords = math.MaxInt32

	// HeaderSize is the length of the stream's header: ordinal, k and the word count.
	HeaderSize = 6
)

// Guava's Strategy enum ordinals, as stored in the first byte.
const (
	ordinalMitz32 = 0 // MURMUR128_MITZ_32
	ordinalMitz64 = 1 // MURMUR128_MITZ_64
)

// EncodedLen returns the length of f's stream, 6 + 8·L bytes, or an error if f cannot be
// written as a Guava stream (see WriteTo).
func EncodedLen(f *bloom.Filter) (int64, error) {
	if _, err := header(f); err != nil {
		return 0, err
	}
	return HeaderSize + f.ByteLen(), nil
}

// header returns the stream header of f, or the reason Guava could not have written f.
func header(f *bloom.Filter) ([HeaderSize]byte, error) {
	if f == nil {
		return [HeaderSize]byte{}, fmt.Errorf("guava: nil filter: %w", bloom.ErrInvalidParameter)
	}
	h, err := makeHeader(f.Scheme(), f.K(), f.ByteLen()/8)
	if err == nil && f.M() != 8*uint64(f.ByteLen()) {
		// Guava reduces positions modulo 64·words; a filter made by bloom.NewExact with another
		// modulus would answer differently once read back.
		err = fmt.Errorf("guava: a filter whose modulus is %d bits is not a whole number of 64-bit words, and a Guava stream holds only those: %w",
			f.M(), bloom.ErrIncompatible)
	}
	return h, err
}

// makeHeader returns the header of a filter with the given scheme, k and number of words.
func makeHeader(s bloom.Scheme, k int, words int64) ([HeaderSize]byte, error) {
	var h [HeaderSize]byte
	switch s {
	case bloom.Guava64:
		h[0] = ordinalMitz64
	case bloom.Guava32:
		h[0] = ordinalMitz32
	default:
		return h, fmt.Errorf("guava: a %s filter has no Guava strategy (Guava hashes with %s or %s): %w",
			s, bloom.Guava64, bloom.Guava32, bloom.ErrIncompatible)
	}
	if k < 1 || k > MaxK {
		return h, fmt.Errorf("guava: k=%d does not fit in Guava's stream (1 to %d hash functions): %w",
			k, MaxK, bloom.ErrIncompatible)
	}
	if words < 1 || words > MaxWords {
		return h, fmt.Errorf("guava: %d words do not fit in Guava's stream (1 to %d, a Java int): %w",
			words, MaxWords, bloom.ErrIncompatible)
	}
	h[1] = byte(k)
	binary.BigEndian.PutUint32(h[2:], uint32(words))
	return h, nil
}

// WriteTo writes f to w as Guava's BloomFilter.writeTo does, so that BloomFilter.readFrom reads
// a filter that answers exactly as f. It returns the number of bytes written.
//
// f must hash with bloom.Guava64 or bloom.Guava32, have at most MaxK hash functions and
// MaxWords words, and a modulus of whole words (as every filter has but some that bloom.NewExact
// makes); otherwise WriteTo writes nothing and returns an error wrapping bloom.ErrIncompatible.
// WriteTo may run while other goroutines add to f: each word is read atomically, so the stream
// holds every add that completed before WriteTo started.
func WriteTo(w io.Writer, f *bloom.Filter) (int64, error) {
	h, err := header(f)
	if err != nil {
		return 0, err
	}
	// The header and the words go out through one buffer of at most 64 KiB.
	buf := make([]byte, 0, min(HeaderSize+f.ByteLen(), 1<<16))
	buf = append(buf, h[:]...)
	var total int64
	for off := int64(0); off < f.ByteLen() || len(buf) > 0; {
		if n := min(int64(cap(buf)-len(buf)), f.ByteLen()-off) &^ 7; n > 0 {
			chunk := buf[len(buf) : len(buf)+int(n)]
			f.ReadAt(chunk, off) // cannot fail: the range lies inside the array
			swapWords(chunk)
			buf = buf[:len(buf)+int(n)]
			off += n
		}
		c, err := w.Write(buf)
		total += int64(c)
		if err != nil {
			return total, err
		}
		buf = buf[:0]
	}
	return total, nil
}

// Marshal returns f's stream as WriteTo writes it. It fails as WriteTo does, and with
// bloom.ErrTooLarge when the stream cannot fit in this machine's memory.
func Marshal(f *bloom.Filter) ([]byte, error) {
	n, err := EncodedLen(f)
	if err != nil {
		return nil, err
	}
	if err := bloom.CheckAlloc(uint64(n)); err != nil {
		return nil, err
	}
	h, _ := header(f)
	b := make([]byte, n)
	copy(b, h[:])
	f.ReadAt(b[HeaderSize:], 0)
	swapWords(b[HeaderSize:])
	return b, nil
}

// swapWords turns the little-endian bytes of whole 64-bit words (the filter's byte view) into
// their big-endian bytes (Java's DataOutputStream order), or back.
func swapWords(b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.BigEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:]))
	}
}

// ReadFrom reads one stream written by Guava's BloomFilter.writeTo (or by WriteTo) from r and
// returns the filter: a bloom.Filter with scheme bloom.Guava64 or bloom.Guava32 (from the
// strategy ordinal), k hash functions and a modulus of 64·L bits.
//
// ReadFrom reads exactly the stream's 6 + 8·L bytes and nothing after them, so r may hold more
// data after the filter; Guava's readFrom also stops there. It checks the header before it
// allocates: a size beyond this machine's memory is refused with bloom.ErrTooLarge, and the words
// are read in growing steps, so a stream that ends early costs memory in proportion to what it
// delivered. Errors caused by the bytes, truncation included, wrap bloom.ErrCorrupt; other
// errors from r are returned wrapped, with the position they interrupted.
func ReadFrom(r io.Reader) (*bloom.Filter, error) {
	var b [HeaderSize]byte
	if n, err := io.ReadFull(r, b[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, corrupt("empty stream, expected a %d-byte header", HeaderSize)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, corrupt("truncated header: %d of %d bytes", n, HeaderSize)
		}
		return nil, fmt.Errorf("guava: reading the header: %w", err)
	}
	h, err := parseHeader(b)
	if err != nil {
		return nil, err
	}
	if err := bloom.CheckAlloc(8 * uint64(h.words)); err != nil {
		return nil, fmt.Errorf("guava: stream of %d words: %w", h.words, err)
	}
	words, err := readWords(r, h.words)
	if err != nil {
		return nil, err
	}
	return h.filter(words)
}

// Unmarshal decodes data, which must hold exactly one stream as written by Guava's
// BloomFilter.writeTo, and returns the filter (see ReadFrom). Bytes after the stream are refused
// as corruption, unlike Guava's readFrom, which ignores them: a whole file with trailing bytes
// is more likely the wrong file, or two streams run together, than a filter. Use ReadFrom to read
// a stream followed by other data. Errors caused by the bytes wrap bloom.ErrCorrupt.
func Unmarshal(data []byte) (*bloom.Filter, error) {
	if len(data) < HeaderSize {
		if len(data) == 0 {
			return nil, corrupt("empty input, expected a %d-byte header", HeaderSize)
		}
		return nil, corrupt("truncated header: %d of %d bytes", len(data), HeaderSize)
	}
	h, err := parseHeader([HeaderSize]byte(data))
	if err != nil {
		return nil, err
	}
	payload := data[HeaderSize:]
	if want := 8 * uint64(h.words); uint64(len(payload)) != want {
		if uint64(len(payload)) < want {
			return nil, corrupt("truncated: %d of %d words (%d of %d bytes)",
				len(payload)/8, h.words, HeaderSize+len(payload), HeaderSize+want)
		}
		return nil, corrupt("%d unexpected bytes after the filter's %d words",
			uint64(len(payload))-want, h.words)
	}
	// The words are all in data, so this allocation is no larger than the input.
	words := make([]uint64, h.words)
	for i := range words {
		words[i] = binary.BigEndian.Uint64(payload[8*i:])
	}
	return h.filter(words)
}

// streamHeader is a validated header.
type streamHeader struct {
	scheme bloom.Scheme
	k      int
	words  int // 1..MaxWords
}

// parseHeader validates a header as Guava's readFrom does, with a message for each failure:
// the ordinal must name a strategy, k must be at least 1 (a byte cannot exceed 255), and the
// word count must be positive.
func parseHeader(b [HeaderSize]byte) (streamHeader, error) {
	var h streamHeader
	switch ordinal := int8(b[0]); ordinal {
	case ordinalMitz64:
		h.scheme = bloom.Guava64
	case ordinalMitz32:
		h.scheme = bloom.Guava32
	default:
		return h, corrupt("unknown strategy ordinal %d (want 1 for MURMUR128_MITZ_64 or 0 for MURMUR128_MITZ_32)", ordinal)
	}
	h.k = int(b[1])
	if h.k == 0 {
		return h, corrupt("number of hash functions is 0 (want 1 to %d)", MaxK)
	}
	words := int32(binary.BigEndian.Uint32(b[2:]))
	if words <= 0 {
		return h, corrupt("data length of %d words is not positive", words)
	}
	h.words = int(words)
	return h, nil
}

// filter builds the filter of header h over its decoded words.
func (h streamHeader) filter(words []uint64) (*bloom.Filter, error) {
	f, err := bloom.NewFromWords(words, 64*uint64(h.words), h.k, h.scheme)
	if err != nil {
		// Unreachable for a validated header; reported as corruption all the same.
		return nil, fmt.Errorf("guava: %w: %w", bloom.ErrCorrupt, err)
	}
	return f, nil
}

// readWords reads n big-endian words from r. The array grows with what arrives, eightfold at a
// time and straight to n once that is near, so a header that promises more than the stream
// holds costs memory in proportion to what was delivered (at most 16 times), while an honest
// stream peaks below 1.5 times its size.
func readWords(r io.Reader, n int) ([]uint64, error) {
	const chunk = 1 << 15 // words per read: 256 KiB
	buf := make([]byte, 8*min(n, chunk))
	words := make([]uint64, 0, min(n, chunk))
	for len(words) < n {
		c := min(n-len(words), chunk)
		if got, err := io.ReadFull(r, buf[:8*c]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				have := 8*len(words) + got
				return nil, corrupt("truncated: %d of %d words (%d of %d bytes)",
					have/8, n, HeaderSize+have, HeaderSize+8*n)
			}
			return nil, fmt.Errorf("guava: reading word %d of %d: %w", len(words), n, err)
		}
		if cap(words)-len(words) < c {
			next := 8 * cap(words)
			if 2*next >= n {
				next = n
			}
			grown := make([]uint64, len(words), next)
			copy(grown, words)
			words = grown
		}
		for i := 0; i < 8*c; i += 8 {
			words = append(words, binary.BigEndian.Uint64(buf[i:]))
		}
	}
	return words, nil
}

// corrupt returns an error wrapping bloom.ErrCorrupt that says what is wrong with the stream.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("guava: %s: %w", fmt.Sprintf(format, args...), bloom.ErrCorrupt)
}
