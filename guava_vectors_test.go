package bloom_test

import (
	"bufio"
	"encoding/hex"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// TestGuavaVectors pins Guava64 and Guava32 to the real Guava 31.1: for every key of
// testdata/guava/positions.tsv, Scheme.Hash must give murmur3_128's (h1, h2) and Locations the
// k indexes Guava probes, in Guava's order, and a filter must set exactly those bits.
func TestGuavaVectors(t *testing.T) {
	f, err := os.Open("testdata/guava/positions.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		c := strings.Split(text, "\t")
		if len(c) != 8 {
			t.Fatalf("line %d: %d fields, want 8", line, len(c))
		}
		scheme, err := bloom.ParseScheme(c[1])
		m, err1 := strconv.ParseUint(c[2], 10, 64)
		k, err2 := strconv.Atoi(c[3])
		key, err3 := hex.DecodeString(c[4])
		h1, err4 := strconv.ParseUint(c[5], 16, 64)
		h2, err5 := strconv.ParseUint(c[6], 16, 64)
		var want []uint64
		for _, s := range strings.Split(c[7], ",") {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			want = append(want, v)
		}
		for _, err := range []error{err, err1, err2, err3, err4, err5} {
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		if len(want) != k {
			t.Fatalf("line %d: %d indexes for k=%d", line, len(want), k)
		}
		rows++

		if g1, g2 := scheme.Hash(key); g1 != h1 || g2 != h2 {
			t.Errorf("line %d (%s, key %x): Hash = %016x %016x, Guava's murmur3_128 = %016x %016x", line, c[0], key, g1, g2, h1, h2)
		}
		if got := scheme.Locations(nil, key, k, m); !slices.Equal(got, want) {
			t.Errorf("line %d (%s, key %x): Locations = %v, Guava's indexes = %v", line, c[0], key, got, want)
		}
		filter, err := bloom.NewWithParams(m, k, scheme)
		if err != nil {
			t.Fatal(err)
		}
		filter.Add(key)
		var b [8]byte
		set := 0
		for i := uint64(0); i < m; i++ {
			filter.ReadAt(b[:1], int64(i/8))
			if b[0]&(1<<(i%8)) != 0 {
				set++
				if !slices.Contains(want, i) {
					t.Errorf("line %d: bit %d set, not one of Guava's indexes %v", line, i, want)
				}
			}
		}
		if distinct := len(slices.Compact(slices.Sorted(slices.Values(want)))); set != distinct {
			t.Errorf("line %d: %d bits set, want %d", line, set, distinct)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows < 150 {
		t.Fatalf("only %d vectors read", rows)
	}
}
