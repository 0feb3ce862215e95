package main

import (
	"strings"
	"testing"
)

// TestRun runs the example small: every attack request is answered 404 in both modes; without
// the guard each one costs a database query, with it only the filter's false positives do.
func TestRun(t *testing.T) {
	var out strings.Builder
	res, err := run([]string{"-rows", "5000", "-attack", "2000", "-concurrency", "4"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if len(res) != 2 {
		t.Fatalf("%d results; want 2", len(res))
	}
	for _, r := range res {
		if r.notFound != r.requests || r.requests != 2000 {
			t.Errorf("%s: %d of %d requests answered 404", r.mode, r.notFound, r.requests)
		}
	}
	if res[0].queries != 2000 {
		t.Errorf("without the guard: %d database queries for 2000 absent ids; want 2000", res[0].queries)
	}
	// Sized for twice the rows at 1%: well under 1% pass; 60 of 2000 is a wide bound.
	if res[1].queries > 60 {
		t.Errorf("with the guard: %d database queries for 2000 absent ids", res[1].queries)
	}
	if _, err := run([]string{"-rows", "0"}, &out); err == nil {
		t.Error("-rows 0 accepted")
	}
}
