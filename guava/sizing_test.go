package guava_test

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
)

// Guava's messages for the sizes BloomFilter.create refuses, with the numbers they carry.
var (
	numBitsMessage = regexp.MustCompile(`^Could not create BloomFilter of (\d+) bits$`)
	tooManyHashes  = regexp.MustCompile(`^numHashFunctions \((\d+)\) must be <= 255$`)
	tooManyWords   = regexp.MustCompile(`^Out of range: (\d+)$`)
)

// TestGuavaSizing checks bloom.GuavaSize (and OptimalBits, OptimalK) against what Guava's
// BloomFilter.create chose or refused for every (n, p) of testdata/sizing.tsv.
func TestGuavaSizing(t *testing.T) {
	f, err := os.Open("testdata/sizing.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, refusals := 0, 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 5 {
			t.Fatalf("line %d: %q", line, sc.Text())
		}
		n, err := strconv.ParseUint(c[0], 10, 64)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		p, err := parseBits(c[1])
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		rows++
		m, k, sizeErr := bloom.GuavaSize(n, p)
		switch c[3] {
		case "ok":
			wantK, _ := strconv.Atoi(c[4])
			words, _ := strconv.ParseUint(c[5], 10, 64)
			if sizeErr != nil || m != 64*words || k != wantK {
				t.Errorf("line %d: GuavaSize(%d, %s) = %d, %d, %v; Guava: %d longs (%d bits), k=%d",
					line, n, c[2], m, k, sizeErr, words, 64*words, wantK)
			}
		case "error":
			refusals++
			checkRefusal(t, line, n, p, c[2], c[4:], m, sizeErr)
		default:
			t.Fatalf("line %d: result %q", line, c[3])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rows < 250 || refusals < 20 {
		t.Fatalf("read %d rows, %d refusals; the table is incomplete", rows, refusals)
	}
}

// checkRefusal checks Go's answer for an (n, p) that Guava refused with message msg[0] and, if
// create wrapped one, cause msg[1].
func checkRefusal(t *testing.T, line int, n uint64, p float64, ps string, msg []string, m uint64, sizeErr error) {
	t.Helper()
	if strings.HasPrefix(msg[0], "False positive probability") {
		if !errors.Is(sizeErr, bloom.ErrInvalidParameter) {
			t.Errorf("line %d: GuavaSize(%d, %s) = %v; Guava: %s", line, n, ps, sizeErr, msg[0])
		}
		return
	}
	sm := numBitsMessage.FindStringSubmatch(msg[0])
	if sm == nil || len(msg) != 2 {
		t.Fatalf("line %d: unexpected refusal %q", line, msg)
	}
	numBits, _ := strconv.ParseUint(sm[1], 10, 64)
	bits, bitsErr := bloom.OptimalBits(n, p)
	switch cause := msg[1]; {
	case cause == "data length is zero!":
		if bitsErr != nil || bits != 0 || !errors.Is(sizeErr, bloom.ErrInvalidParameter) {
			t.Errorf("line %d: (%d, %s): OptimalBits = %d, %v; GuavaSize: %v; Guava: 0 bits, refused", line, n, ps, bits, bitsErr, sizeErr)
		}
	case tooManyHashes.MatchString(cause):
		k, _ := strconv.Atoi(tooManyHashes.FindStringSubmatch(cause)[1])
		if bitsErr != nil || bits != numBits || bloom.OptimalK(n, bits) != k || !errors.Is(sizeErr, bloom.ErrInvalidParameter) {
			t.Errorf("line %d: (%d, %s): OptimalBits = %d, %v, OptimalK = %d, GuavaSize: %v; Guava: %d bits, k=%d, refused",
				line, n, ps, bits, bitsErr, bloom.OptimalK(n, bits), sizeErr, numBits, k)
		}
	case tooManyWords.MatchString(cause):
		// Beyond Guava's 2^31-1 longs. Go filters may be larger, so GuavaSize either sizes it
		// (and the guava package refuses to write it) or reports it as too large for any machine.
		words, _ := strconv.ParseUint(tooManyWords.FindStringSubmatch(cause)[1], 10, 64)
		if errors.Is(bitsErr, bloom.ErrTooLarge) && errors.Is(sizeErr, bloom.ErrTooLarge) {
			return
		}
		if bitsErr != nil || bits != numBits || sizeErr != nil || m != 64*words || words <= guava.MaxWords {
			t.Errorf("line %d: (%d, %s): OptimalBits = %d, %v; GuavaSize: %d bits, %v; Guava: %d bits, %d longs, refused",
				line, n, ps, bits, bitsErr, m, sizeErr, numBits, words)
		}
	default:
		t.Fatalf("line %d: unexpected cause %q", line, cause)
	}
}
