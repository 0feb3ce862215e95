package redisbloom

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// dumpBytes is a chain's whole BF.SCANDUMP: header (counts included) and every bit.
func dumpBytes(c *Chain) []byte {
	var b []byte
	for _, data := range c.Chunks() {
		b = append(b, data...)
	}
	return b
}

// TestAddNewReplaysOntoAFuzzyCopy is the invariant bloomd's snapshots rest on: a copy whose
// header (counts, links) is taken at one moment and whose bits are copied later, while adds go
// on, plus the adds that were new after that moment replayed with AddNew, is exactly the
// original, counts and growth included. Replaying them with Add instead loses counts.
func TestAddNewReplaysOntoAFuzzyCopy(t *testing.T) {
	for _, lateBits := range []int{0, 150, 400, 1000} {
		t.Run(fmt.Sprint("bits copied after ", lateBits, " more adds"), func(t *testing.T) {
			live, err := NewChain(50, 0.01, 2, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 120 {
				live.Add(fmt.Appendf(nil, "before-%d", i))
			}
			header := live.Header() // the moment the journal starts
			var journal [][]byte    // adds that were new after it
			add := func(i int) {
				item := fmt.Appendf(nil, "after-%d", i%700) // some repeats
				if ok, err := live.Add(item); err != nil {
					t.Fatal(err)
				} else if ok {
					journal = append(journal, item)
				}
			}
			for i := range lateBits {
				add(i)
			}
			image, err := LoadHeader(header, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Bits of the links the header names, as they are now (later adds included).
			total := int64(0)
			for _, l := range image.Links() {
				total += int64(l.Bytes)
			}
			for it := int64(1); it <= total; {
				next, data := live.ScanDump(it)
				if err := image.LoadChunk(next, data); err != nil {
					t.Fatal(err)
				}
				it = next
			}
			for i := lateBits; i < 1000; i++ {
				add(i)
			}

			replayed, err := LoadHeader(header, nil)
			if err != nil {
				t.Fatal(err)
			}
			naive, _ := LoadHeader(header, nil)
			for _, l := range []*Chain{replayed, naive} {
				for it, data := range image.Chunks() {
					if it > 1 {
						l.LoadChunk(it, data)
					}
				}
			}
			for _, item := range journal {
				if err := replayed.AddNew(item); err != nil {
					t.Fatal(err)
				}
				naive.Add(item)
			}
			if !bytes.Equal(dumpBytes(replayed), dumpBytes(live)) {
				t.Errorf("AddNew replay differs from the original: card %d, links %d; want %d, %d",
					replayed.Card(), replayed.NumFilters(), live.Card(), live.NumFilters())
			}
			if lateBits > 0 && naive.Card() == live.Card() {
				t.Errorf("Add replay kept the count (%d): the test no longer exercises a fuzzy copy", live.Card())
			}
		})
	}
}

func TestAddNewCountsPresentItems(t *testing.T) {
	c, _ := NewChain(2, 0.01, 2, false, nil)
	for range 3 {
		if err := c.AddNew([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if c.Card() != 3 || c.NumFilters() != 2 {
		t.Fatalf("card %d, filters %d; want 3 and 2", c.Card(), c.NumFilters())
	}
	n, _ := NewChain(1, 0.01, 2, true, nil)
	if err := n.AddNew([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := n.AddNew([]byte("a")); !errors.Is(err, ErrFull) {
		t.Fatalf("AddNew on a full non-scaling chain: %v, want ErrFull", err)
	}
	if n.Card() != 1 {
		t.Fatalf("card %d after a refused AddNew, want 1", n.Card())
	}
}
