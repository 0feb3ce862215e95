package bloom

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWriteAtEveryRange writes every range of a small array's bytes, aligned to words or not,
// over a background of other bytes, and compares the whole array with the same writes made to a
// byte slice: storeWords's unrolled loop and its tail, and the partial words around them.
func TestWriteAtEveryRange(t *testing.T) {
	const words = 11 // 88 bytes: runs of 0 to 11 whole words
	for off := 0; off <= 8*words; off++ {
		for n := 0; n <= 8*words-off; n++ {
			a := make(bitArray, words)
			want := make([]byte, 8*words)
			for i := range want {
				want[i] = byte(i*29 + 3)
			}
			if _, err := a.writeAt(want, 0); err != nil {
				t.Fatal(err)
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(200 - i*7)
			}
			if k, err := a.writeAt(p, int64(off)); k != n || err != nil {
				t.Fatalf("writeAt(%d bytes, %d) = %d, %v", n, off, k, err)
			}
			copy(want[off:], p)
			got := make([]byte, 8*words)
			if _, err := a.readAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("writeAt(%d bytes, %d): array\n%x\nwant\n%x", n, off, got, want)
			}
		}
	}
}

// TestWriteAtBesideAdds writes whole words of an array's first half while other goroutines set
// bits in its second half (and in the partial words at the border): no add is lost, and every
// written word is exact. Under -race it also shows that the stores need no lock.
func TestWriteAtBesideAdds(t *testing.T) {
	const words = 1 << 12
	a := make(bitArray, words)
	half := words * 8 / 2
	src := make([]byte, half-3) // leaves the border word's last three bytes to the adds
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	var wg sync.WaitGroup
	var added atomic.Int64
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				// bits of the border word's last three bytes and of the second half
				b := uint64((half-3)*8) + uint64((i*2+g)*131)%uint64(words*64-(half-3)*8)
				a.set(b)
				added.Add(1)
			}
		}()
	}
	for range 50 {
		if _, err := a.writeAt(src, 0); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	got := make([]byte, len(src))
	if _, err := a.readAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("the written bytes did not survive the adds beside them")
	}
	for g := range 2 {
		for i := range 20000 {
			b := uint64((half-3)*8) + uint64((i*2+g)*131)%uint64(words*64-(half-3)*8)
			if !a.get(b) {
				t.Fatalf("bit %d, added beside the writes, is lost", b)
			}
		}
	}
}

// BenchmarkWriteAt loads 64 MiB of bytes into an array, as loading a snapshot or a full sync
// does; its MB/s is the speed of that copy.
func BenchmarkWriteAt(b *testing.B) {
	const size = 64 << 20
	a := make(bitArray, size/8)
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i * 7)
	}
	b.SetBytes(size)
	for b.Loop() {
		if _, err := a.writeAt(src, 0); err != nil {
			b.Fatal(err)
		}
	}
}
