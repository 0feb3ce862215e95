package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/skipped"
)

const dict = "/usr/share/dict/american-english"

func TestMain(m *testing.M) { skipped.Main(m) }

func needDict(t *testing.T) {
	if _, err := os.Stat(dict); err != nil {
		skipped.Missing(t, "wamerican", fmt.Sprintf("%s is missing (Debian's wamerican, which .ci/run installs): %v", dict, err))
	}
}

// TestRun runs the example small on the real word list: the measured false-positive rate is
// within an honest bound of the configured one, and the filter is far smaller than the map.
func TestRun(t *testing.T) {
	needDict(t)
	words, err := readWords(dict, 5000)
	if err != nil {
		t.Fatal(err)
	}
	weak := variants(words[4000])[2] + "123" // capitalised, "123" appended
	var out strings.Builder
	r, err := run([]string{"-limit", "5000", "-p", "0.01", "-probes", "50000", weak}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if r.words != 5000 || r.entries < 5000*10 {
		t.Errorf("%d words made %d entries", r.words, r.entries)
	}
	// 50000 probes at p = 0.01: 500 expected, standard deviation about 22; 650 is 6 sigma.
	if r.fp > 650 {
		t.Errorf("%d false positives of %d at p=0.01", r.fp, r.probes)
	}
	if r.mapBytes < 5*uint64(r.filterBytes) {
		t.Errorf("map %d bytes, filter %d: expected the filter several times smaller", r.mapBytes, r.filterBytes)
	}
	if want := fmt.Sprintf("sign-up with %-30q refused", weak); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q", want)
	}
}

// TestNoFalseNegatives: every variant of every word of the list (the first 2000) is refused.
func TestNoFalseNegatives(t *testing.T) {
	needDict(t)
	words, err := readWords(dict, 2000)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := bloom.New(uint64(len(words)*20), 0.01)
	for _, w := range words {
		for _, v := range variants(w) {
			f.AddString(v)
		}
	}
	for _, w := range words {
		for _, v := range variants(w) {
			if !f.TestString(v) {
				t.Fatalf("variant %q of %q not refused", v, w)
			}
		}
	}
	if v := variants("Password"); !contains(v, "p@$$w0rd") || !contains(v, "Password123") || !contains(v, "PASSWORD") {
		t.Errorf("variants(Password) = %q", v)
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
