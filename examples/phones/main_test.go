package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestRun runs the example small: the map and the sorted slice agree on the exact number of
// distinct numbers, and the filters find at most that many, missing few.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-n", "200000", "-p", "0.01"}, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	unique := map[string]uint64{}
	re := regexp.MustCompile(`(?m)^(classic|blocked|map|sorted)\s.*?\s(\d+)( \(|$)`)
	for _, m := range re.FindAllStringSubmatch(out.String(), -1) {
		unique[m[1]], _ = strconv.ParseUint(m[2], 10, 64)
	}
	if len(unique) != 4 {
		t.Fatalf("found results for %v; want classic, blocked, map, sorted", unique)
	}
	exact := unique["map"]
	if unique["sorted"] != exact || exact < 178000 || exact > 181000 {
		t.Fatalf("map found %d distinct numbers, sorted %d; want equal, about 90%% of 200000", exact, unique["sorted"])
	}
	for _, f := range []string{"classic", "blocked"} {
		// Each new number is lost with probability below the filter's rate at that fill: under
		// 1% here, so under 2% of 180000 with a wide margin.
		if u := unique[f]; u > exact || exact-u > exact/50 {
			t.Errorf("%s found %d of %d distinct numbers", f, u, exact)
		}
	}
	if err := run([]string{"-n", "0"}, &out); err == nil {
		t.Error("-n 0 accepted")
	}
}
