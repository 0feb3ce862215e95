package main

import (
	"math"
	"strings"
	"testing"
)

var small = []string{"-initial", "5000", "-batches", "5", "-batch", "500", "-checkers", "2", "-checks", "5", "-p", "0.01"}

// TestRun runs the example small against bloomd in this process: every spam sender published
// before a check is flagged, and good senders are flagged at about the configured rate.
func TestRun(t *testing.T) {
	var out strings.Builder
	r, err := run(small, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if r.updates != 5 || r.checks != 2*6*5*100 || r.spamCaught == 0 {
		t.Fatalf("result %+v", r)
	}
	if r.spamMissed != 0 {
		t.Errorf("%d published spam senders were let through", r.spamMissed)
	}
	// At p = 0.01 with the list under capacity: the bound is 1% plus 5 standard deviations.
	if limit := r.good/100 + 5*int64(math.Sqrt(float64(r.good)/100)) + 5; r.falsePositive > limit {
		t.Errorf("%d of %d good senders flagged; limit %d", r.falsePositive, r.good, limit)
	}
	if _, err := run([]string{"-initial", "0"}, &out); err == nil {
		t.Error("-initial 0 accepted")
	}
}

// TestRunRepeatable: two runs count the same checks, catches and false positives, whatever the
// timing of the checkers.
func TestRunRepeatable(t *testing.T) {
	var out strings.Builder
	a, err := run(small, &out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := run(small, &out)
	if err != nil {
		t.Fatal(err)
	}
	a.elapsed, b.elapsed = 0, 0
	if a != b {
		t.Errorf("two runs differ:\n%+v\n%+v", a, b)
	}
}
