package bloom_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bloomd/bloom"
)

// addKindSeeds seeds a fuzz target with one small record of every kind (testdata/kinds and the
// classic ones in testdata/native) and a few crafted headers.
func addKindSeeds(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/kinds/*.bloom")
	native, _ := filepath.Glob("testdata/native/*.bloom")
	for _, s := range append(seeds, native...) {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(nativeHeader(2, 1, 6, 1<<40, 0, 1<<37, []byte{2}))
	f.Add(nativeHeader(3, 1, 7, 1<<20, 5, 1<<30, []byte{1, 0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0}))
	f.Add(nativeHeader(4, 4, 3, 70, 0, 40, nil))
}

// checkDecoded is the property every decoder must have: it fails only with ErrCorrupt or
// ErrTooLarge, and what it accepts re-encodes to bytes that decode to the same filter (the
// count field of classic and blocked records is recomputed, so the first encoding may differ
// from the input).
func checkDecoded(t *testing.T, f bloom.AnyFilter, err error) {
	if err != nil {
		if !errors.Is(err, bloom.ErrCorrupt) && !errors.Is(err, bloom.ErrTooLarge) {
			t.Fatalf("decoding failed with an error that is neither ErrCorrupt nor ErrTooLarge: %v", err)
		}
		return
	}
	once, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	g, err := bloom.DecodeBytes(once)
	if err != nil {
		t.Fatalf("re-encoded filter does not decode: %v", err)
	}
	twice, _ := g.MarshalBinary()
	if !bytes.Equal(once, twice) {
		t.Fatal("encoding is not stable across a round trip")
	}
	f.TestString("x") // must not panic
	g.AddString("x")
}

func FuzzDecode(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := bloom.DecodeBytes(data)
		checkDecoded(t, g, err)
		// The streaming reader must agree with the byte decoder on what it accepts.
		r := bytes.NewReader(data)
		_, err2 := bloom.Decode(r)
		if err == nil && (err2 != nil || r.Len() != 0) || err != nil && err2 == nil && r.Len() == 0 {
			t.Fatalf("Decode (%v, %d bytes left) and DecodeBytes (%v) disagree", err2, r.Len(), err)
		}
	})
}

func FuzzUnmarshalBlocked(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g bloom.Blocked
		err := g.UnmarshalBinary(data)
		checkDecoded(t, &g, err)
	})
}

func FuzzUnmarshalScalable(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g bloom.Scalable
		err := g.UnmarshalBinary(data)
		if err != nil {
			checkDecoded(t, nil, err)
			return
		}
		checkDecoded(t, &g, nil)
	})
}

func FuzzUnmarshalCounting(f *testing.F) {
	addKindSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g bloom.Counting
		err := g.UnmarshalBinary(data)
		checkDecoded(t, &g, err)
	})
}
