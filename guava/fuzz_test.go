package guava_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
)

// FuzzUnmarshal: any input either decodes to a filter that encodes back to exactly the input, or
// is refused with a guava: error wrapping ErrCorrupt; ReadFrom agrees. Seeds: testdata/fuzz.
func FuzzUnmarshal(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := guava.Unmarshal(data)
		if err != nil {
			if g != nil || !errors.Is(err, bloom.ErrCorrupt) || !strings.HasPrefix(err.Error(), "guava: ") {
				t.Fatalf("Unmarshal = %v, %v; want nil and a guava: error wrapping ErrCorrupt", g, err)
			}
			return
		}
		again, err := guava.Marshal(g)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("Marshal(Unmarshal(data)) = %x, %v; want %x", again, err, data)
		}
		r := bytes.NewReader(data)
		h, err := guava.ReadFrom(r)
		if err != nil || !h.Equal(g) || r.Len() != 0 {
			t.Fatalf("ReadFrom = %v (%d bytes left); Unmarshal decoded the same input", err, r.Len())
		}
	})
}

// FuzzReadFrom: ReadFrom reads one stream from the front of any input and stops after it, or
// fails with ErrCorrupt (or ErrTooLarge for a size beyond this machine's memory).
func FuzzReadFrom(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		g, err := guava.ReadFrom(r)
		if err != nil {
			if g != nil || !(errors.Is(err, bloom.ErrCorrupt) || errors.Is(err, bloom.ErrTooLarge)) || !strings.HasPrefix(err.Error(), "guava: ") {
				t.Fatalf("ReadFrom = %v, %v; want nil and a guava: error wrapping ErrCorrupt", g, err)
			}
			if _, uerr := guava.Unmarshal(data); uerr == nil {
				t.Fatalf("ReadFrom failed (%v) where Unmarshal succeeded", err)
			}
			return
		}
		stream := data[:len(data)-r.Len()]
		if n, err := guava.EncodedLen(g); err != nil || n != int64(len(stream)) {
			t.Fatalf("ReadFrom consumed %d bytes of a %d-byte stream (%v)", len(stream), n, err)
		}
		again, err := guava.Marshal(g)
		if err != nil || !bytes.Equal(again, stream) {
			t.Fatalf("Marshal(ReadFrom(data)) = %x, %v; want %x", again, err, stream)
		}
	})
}
