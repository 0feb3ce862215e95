package bloom

import (
	"fmt"
	"io"
)

// AnyFilter is what every filter type of this package offers: Filter, Blocked, Scalable and
// Counting all satisfy it. Programs that handle filters of any kind (the bloom command reading a
// file, say) hold one as an AnyFilter; Decode returns one.
type AnyFilter interface {
	// Add adds key and reports whether it was definitely new; Test reports whether it may be
	// present. The string forms add and test the UTF-8 bytes of s.
	Add(key []byte) bool
	Test(key []byte) bool
	AddString(s string) bool
	TestString(s string) bool

	// AddMany and TestMany do the same for a batch of keys, appending one result per key to dst.
	AddMany(dst []bool, keys [][]byte) []bool
	TestMany(dst []bool, keys [][]byte) []bool
	AddManyStrings(dst []bool, keys []string) []bool
	TestManyStrings(dst []bool, keys []string) []bool

	// ApproximateCount estimates the number of keys added; EstimatedFPP the probability that
	// Test reports a never-added key as present, given the filter's content now.
	ApproximateCount() uint64
	EstimatedFPP() float64

	// Info describes the filter: its kind and sizes.
	Info() Info

	// WriteTo writes the filter as one native record, which Decode reads back.
	io.WriterTo
	MarshalBinary() ([]byte, error)
}

var (
	_ AnyFilter = (*Filter)(nil)
	_ AnyFilter = (*Blocked)(nil)
	_ AnyFilter = (*Scalable)(nil)
	_ AnyFilter = (*Counting)(nil)
)

// Info describes a filter, as the bloom command's info subcommand prints it.
type Info struct {
	Kind    string  // "classic", "blocked", "scalable" or "counting"
	Scheme  Scheme  // how keys are hashed (blocked filters hash as Guava64)
	K       int     // bits (counters) per key; for a scalable filter, of its first link
	M       uint64  // bits, or counters for a counting filter; for a scalable filter, of all links
	Sectors int     // blocked filters, and scalable ones over them: 64-bit words per key
	Links   int     // scalable filters: number of filters in the chain
	Bytes   int64   // memory held by the bit or counter arrays
	Count   uint64  // keys added: exact for scalable and counting filters, else estimated
	FPP     float64 // EstimatedFPP
}

// Decode reads one native record of any kind from r and returns the filter it holds, leaving r
// positioned after it. It validates the record as the ReadFrom methods do: damaged input is
// refused with ErrCorrupt and a message saying what is wrong, sizes beyond this machine's memory
// with ErrTooLarge, before anything large is allocated. The dynamic type of the result is
// *Filter, *Blocked, *Scalable or *Counting.
func Decode(r io.Reader) (AnyFilter, error) {
	h, err := readAnyHeader(r)
	if err != nil {
		return nil, err
	}
	return decodeBody(r, h)
}

// DecodeBytes decodes data, which must hold exactly one native record of any kind.
func DecodeBytes(data []byte) (AnyFilter, error) {
	r := &byteReader{b: data}
	f, err := Decode(r)
	if err != nil {
		return nil, err
	}
	if len(r.b) != 0 {
		return nil, corruptf("%d unexpected bytes after the filter", len(r.b))
	}
	return f, nil
}

func decodeBody(r io.Reader, h fileHeader) (AnyFilter, error) {
	switch h.kind {
	case kindClassic:
		return nilIfErr(readClassicBody(r, h))
	case kindBlocked:
		return nilIfErr(readBlockedBody(r, h))
	case kindScalable:
		return nilIfErr(readScalableBody(r, h))
	case kindCounting:
		return nilIfErr(readCountingBody(r, h))
	case kindCuckoo:
		return nil, fmt.Errorf("%w: the record holds a cuckoo filter, which Cuckoo.ReadFrom reads", ErrIncompatible)
	}
	return nil, corruptf("unknown filter kind %d", uint8(h.kind))
}

// nilIfErr keeps a typed nil pointer from becoming a non-nil AnyFilter beside an error.
func nilIfErr[T AnyFilter](f T, err error) (AnyFilter, error) {
	if err != nil {
		return nil, err
	}
	return f, nil
}
