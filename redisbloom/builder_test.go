package redisbloom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestBuilderMakesTheSameChain builds a grown chain again link by link, as an RDB reader does,
// and requires the same dump; ReadAt reads the concatenated bit arrays ScanDump returns.
func TestBuilderMakesTheSameChain(t *testing.T) {
	c, err := NewChain(10, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := c.Add(fmt.Appendf(nil, "item-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ParseHeader(c.Header())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Append(nil), c.Header()) {
		t.Fatal("ParseHeader and Append do not round-trip")
	}
	var bits []byte
	for it, data := range c.Chunks() {
		if it != 1 {
			bits = append(bits, data...)
		}
	}
	all := make([]byte, len(bits)+5)
	n, err := c.ReadAt(all, 0)
	if n != len(bits) || err != io.EOF || !bytes.Equal(all[:n], bits) {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	var reserved uint64
	b, err := NewBuilder(h.Items, uint64(len(h.Links)), h.Options, h.Expansion, &Options{Reserve: func(n uint64) error { reserved += n; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	for _, l := range h.Links {
		items := l.Items
		l.Items = 0
		if err := b.AddLink(l); err != nil {
			t.Fatal(err)
		}
		if err := b.WriteAt(bits[off:off+int64(l.Bytes)], 0); err != nil {
			t.Fatal(err)
		}
		if err := b.SetItems(items); err != nil {
			t.Fatal(err)
		}
		off += int64(l.Bytes)
	}
	d, err := b.Chain()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.Header(), c.Header()) || reserved != c.Size() {
		t.Fatalf("built header differs or reserved %d of %d", reserved, c.Size())
	}
	for it, data := range d.Chunks() {
		if _, want := c.ScanDump(it - int64(len(data))); it != 1 && !bytes.Equal(data, want[:len(data)]) {
			t.Fatalf("chunk at %d differs", it)
		}
	}
}

func TestBuilderRefuses(t *testing.T) {
	if _, err := NewBuilder(0, 0, 5, 2, nil); !errors.Is(err, ErrBadData) {
		t.Errorf("0 links: %v", err)
	}
	if _, err := NewBuilder(0, 1, 0, 2, nil); !errors.Is(err, ErrBadData) {
		t.Errorf("options 0: %v", err)
	}
	b, _ := NewBuilder(5, 1, 5, 2, nil)
	if err := b.AddLink(LinkHeader{Bytes: 8, Bits: 64, ErrorRate: 0.01, BitsPerEntry: 9.585, Hashes: 7, Capacity: 5}); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAt(make([]byte, 9), 0); !errors.Is(err, ErrChunkTooBig) {
		t.Errorf("9 bytes into 8: %v", err)
	}
	if err := b.AddLink(LinkHeader{Bytes: 8, Bits: 64, ErrorRate: 0.01, BitsPerEntry: 9.585, Hashes: 7, Capacity: 5}); !errors.Is(err, ErrBadData) {
		t.Errorf("a second link of one declared: %v", err)
	}
	if _, err := b.Chain(); !errors.Is(err, ErrBadData) {
		t.Errorf("counts 0 of 5 declared: %v", err)
	}
}
