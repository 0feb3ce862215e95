package bloom

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/twmb/murmur3"
)

// A blocked filter of more than 2^32 bits must reach its blocks above bit 2^32 (block index
// 2^23 and up), in Add, Test and the batch forms, as the classic filter must (see
// TestLargerThan2To32Bits); a 32-bit block index would fold them onto the lower part.
func TestBlockedLargerThan2To32Bits(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 520 MB")
	}
	const m = 1<<32 + 1<<26 // 4.36e9 bits, 520 MB
	f, err := NewBlockedWithParams(m, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	if f.blocks <= 1<<23 {
		t.Fatalf("%d blocks, want more than 2^23", f.blocks)
	}
	const n = 40_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	// Half added one by one, half in a batch.
	for _, k := range keys[:n/2] {
		f.Add(k)
	}
	f.AddMany(nil, keys[n/2:])
	high := -1
	highCount := 0
	for i, k := range keys {
		h1, h2 := murmur3.Sum128(k)
		blk, _ := bits.Mul64(h1, f.blocks)
		if blk < 1<<32/blockBits {
			continue
		}
		highCount++
		high = i
		// The key's bits must be set in that block, not elsewhere.
		w0, w1, m0, m1 := sectors2(h2, f.b)
		words := f.bits[blk*blockWords : blk*blockWords+blockWords]
		if words[w0]&m0 != m0 || words[w1]&m1 != m1 {
			t.Fatalf("key %d: its bits are not set in its block %d (above bit 2^32)", i, blk)
		}
	}
	// Blocks are uniform: about 1.5% of the keys land above bit 2^32.
	if want := n * (m - 1<<32) / m; highCount < int(want)/2 {
		t.Fatalf("%d of %d keys in blocks above bit 2^32, want about %d", highCount, n, want)
	}
	for i, r := range f.TestMany(nil, keys) {
		if !r || !f.Test(keys[i]) {
			t.Fatalf("false negative for key %d", i)
		}
	}
	// Test must read the block above 2^32: with it cleared, its key tests absent.
	h1, _ := murmur3.Sum128(keys[high])
	blk, _ := bits.Mul64(h1, f.blocks)
	clear(f.bits[blk*blockWords : blk*blockWords+blockWords])
	if f.Test(keys[high]) || f.TestMany(nil, keys[high:high+1])[0] {
		t.Errorf("key %d still tests present with its block %d (above bit 2^32) cleared", high, blk)
	}
	if got := f.ApproximateCount(); got < n*97/100 || got > n*103/100 {
		t.Errorf("ApproximateCount = %d, want about %d", got, n)
	}
}
