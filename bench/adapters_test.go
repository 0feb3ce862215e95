package bench

import "testing"

// The adapters must be right before their speed means anything: no false negatives, a plausible
// false-positive rate, batch answers equal to single ones, and Reset empties. Quick: n = 20000.
func TestAdapters(t *testing.T) {
	const n = 20_000
	for _, im := range allImpls() {
		s, err := im.make(n)
		if err != nil {
			t.Fatalf("%s: %v", im.name, err)
		}
		fill(s, n, saltPresent)
		var k [16]byte
		for i := range uint64(n) {
			makeKey(k[:], i, saltPresent)
			if !s.test(k[:]) {
				t.Fatalf("%s: false negative for key %d", im.name, i)
			}
		}
		fp := 0
		for i := range uint64(100_000) {
			makeKey(k[:], i, saltAbsent)
			if s.test(k[:]) {
				fp++
			}
		}
		if rate := float64(fp) / 100_000; rate > 1.3*p {
			t.Errorf("%s: false-positive rate %.4f at capacity, want about %g", im.name, rate, p)
		}
		if bpk := float64(s.bits()) / n; bpk < 9 || bpk > 50 {
			t.Errorf("%s: %.1f bits per key", im.name, bpk)
		}
		if s.testMany != nil {
			keys := batchKeys()
			for i := range keys {
				makeKey(keys[i], uint64(i)*7, saltPresent+uint64(i%2))
			}
			for i, r := range s.testMany(nil, keys) {
				if r != s.test(keys[i]) {
					t.Fatalf("%s: TestMany and Test disagree on key %d", im.name, i)
				}
			}
		}
		s.reset()
		makeKey(k[:], 1, saltPresent)
		if s.test(k[:]) {
			t.Errorf("%s: key present after reset", im.name)
		}
	}
}

func TestKeysDistinct(t *testing.T) {
	seen := map[[16]byte]bool{}
	var k [16]byte
	for _, salt := range []uint64{saltPresent, saltAbsent, saltFPP} {
		for i := range uint64(50_000) {
			makeKey(k[:], i, salt)
			if seen[k] {
				t.Fatalf("key (%d, %d) repeats", i, salt)
			}
			seen[k] = true
		}
	}
}
