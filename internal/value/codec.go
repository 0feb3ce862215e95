package value

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A hash in bloomd's snapshot (internal/persist writes it as a section's value, under the
// section's checksum) is its fields in order:
//
//	uvarint  number of fields n
//	n times: uvarint name length, name, uvarint value length, value
//
// Nothing else: whether the hash is large (see Hash.Large) is decided again from the limits
// when it is read, as Redis decides a hash's encoding again when it loads one.

// ErrCorrupt reports an encoded hash that is not one.
var ErrCorrupt = errors.New("value: corrupt hash encoding")

// HashEncodedLen returns the length of the view's encoding.
func HashEncodedLen(v HashView) int {
	n := uvarintLen(uint64(v.Len()))
	v.Each(func(name string, val []byte) {
		n += uvarintLen(uint64(len(name))) + len(name) + uvarintLen(uint64(len(val))) + len(val)
	})
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// AppendHash appends the view's encoding to b.
func AppendHash(b []byte, v HashView) []byte {
	b = binary.AppendUvarint(b, uint64(v.Len()))
	v.Each(func(name string, val []byte) {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(val)))
		b = append(b, val...)
	})
	return b
}

// DecodeHash decodes an encoded hash. The values alias p, which the caller must not change
// afterwards. It allocates no more than p's length warrants: the field count is checked against
// the bytes before anything is made for it. A field that appears twice, a length past the end,
// a length not in its shortest form or bytes after the last field is ErrCorrupt, so a hash has
// one encoding.
func DecodeHash(p []byte, lim Limits) (*Hash, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || k != uvarintLen(n) || n > uint64(len(p)-k)/2 {
		return nil, fmt.Errorf("%w: a count of %d fields in %d bytes", ErrCorrupt, n, len(p))
	}
	p = p[k:]
	h := &Hash{index: make(map[string]int, n), order: make([]slot, 0, n)}
	next := func(what string) ([]byte, error) {
		l, k := binary.Uvarint(p)
		if k <= 0 || k != uvarintLen(l) || l > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: %s %d runs past the end", ErrCorrupt, what, len(h.order))
		}
		b := p[k : k+int(l) : k+int(l)]
		p = p[k+int(l):]
		return b, nil
	}
	for range n {
		name, err := next("field name")
		if err != nil {
			return nil, err
		}
		val, err := next("field value")
		if err != nil {
			return nil, err
		}
		if _, dup := h.index[string(name)]; dup {
			return nil, fmt.Errorf("%w: field %q twice", ErrCorrupt, name[:min(len(name), 64)])
		}
		h.Set(name, val, lim)
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last field", ErrCorrupt, len(p))
	}
	return h, nil
}
