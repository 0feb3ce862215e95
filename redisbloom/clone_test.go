package redisbloom

import (
	"bytes"
	"fmt"
	"testing"
)

// A clone dumps as its original did, and changes to either leave the other as it was.
func TestClone(t *testing.T) {
	c, err := NewChain(50, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		c.Add(fmt.Appendf(nil, "item-%d", i))
	}
	d := c.Clone()
	dump := func(ch *Chain) []byte {
		var b bytes.Buffer
		for it := int64(0); ; {
			next, data := ch.ScanDump(it)
			if next == 0 {
				return b.Bytes()
			}
			fmt.Fprintf(&b, "%d:%x;", next, data)
			it = next
		}
	}
	before := dump(c)
	if !bytes.Equal(dump(d), before) || d.NumFilters() != c.NumFilters() || d.Card() != c.Card() {
		t.Fatal("the clone dumps differently from its original")
	}
	for i := 300; i < 600; i++ {
		d.Add(fmt.Appendf(nil, "item-%d", i))
	}
	if !bytes.Equal(dump(c), before) {
		t.Error("adds to the clone changed the original")
	}
	c.Add([]byte("only in the original"))
	if d.Exists([]byte("only in the original")) {
		t.Error("an add to the original shows in the clone")
	}
}
