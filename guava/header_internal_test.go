package guava

import (
	"errors"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// Sizes at Guava's limits, which no test can allocate: 2^31-1 words is the largest stream,
// and a filter of one more word is refused before anything is written.
func TestHeaderLimits(t *testing.T) {
	h, err := makeHeader(bloom.Guava32, 255, MaxWords)
	if err != nil || h != [HeaderSize]byte{0, 255, 0x7f, 0xff, 0xff, 0xff} {
		t.Errorf("largest header = % x, %v", h, err)
	}
	if p, err := parseHeader(h); err != nil || p != (streamHeader{bloom.Guava32, 255, MaxWords}) {
		t.Errorf("parseHeader(% x) = %+v, %v", h, p, err)
	}
	for _, c := range []struct {
		k     int
		words int64
		want  string
	}{
		{3, MaxWords + 1, "2147483648 words do not fit"},
		{3, 0, "0 words do not fit"},
		{0, 1, "k=0 does not fit"},
		{256, 1, "k=256 does not fit"},
	} {
		if _, err := makeHeader(bloom.Guava64, c.k, c.words); !errors.Is(err, bloom.ErrIncompatible) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("makeHeader(k=%d, %d words) = %v; want %q", c.k, c.words, err, c.want)
		}
	}
}
