package cli

import (
	"strings"
	"testing"
)

func TestCalcSizing(t *testing.T) {
	out := run(t, "", "calc", "-n", "1e6", "-p", "0.01").ok(t)
	// Guava's BloomFilter.create(funnel, 1_000_000, 0.01): 9,585,058 bits rounded to whole
	// words, k = 7; RedisBloom's BF.RESERVE gives the same bit count here.
	for _, want := range []string{
		"1,000,000 items at a false-positive rate of 1%",
		"guava        9,585,088    1.1 MiB   7 ",
		"redisbloom   9,585,088",
		"blocked",
		"False-positive rate as the filter fills:",
		"¼n     250,000 ",
		"4n   4,000,000 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("calc output lacks %q:\n%s", want, out)
		}
	}
	// At n the classic rate is the planned 1% (to three digits).
	line := lineWith(out, " n   1,000,000 ")
	if !strings.Contains(line, "1%") {
		t.Errorf("rate at n is not 1%%: %q", line)
	}
}

func TestCalcInputForms(t *testing.T) {
	a := run(t, "", "calc", "-n", "100M", "-p", "1/1000").ok(t)
	b := run(t, "", "calc", "-n", "100_000_000", "-p", "0.1%").ok(t)
	if a != b {
		t.Errorf("100M at 1/1000 and 100_000_000 at 0.1%% differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, "1,437,758,784") {
		t.Errorf("100M at 0.1%% should need 1,437,758,784 bits:\n%s", a)
	}
}

func TestCalcGivenSize(t *testing.T) {
	out := run(t, "", "calc", "-m", "1MB", "-p", "1%").ok(t)
	if !strings.Contains(out, "8,000,000 bits") || !strings.Contains(out, "k=7 holds the most items") ||
		!strings.Contains(out, "It holds 833,945 items at a false-positive rate of 1%") {
		t.Errorf("calc -m 1MB -p 1%%:\n%s", out)
	}
	out = run(t, "", "calc", "-m", "16MiB", "-k", "7", "-n", "10M").ok(t)
	if !strings.Contains(out, "134,217,728 bits (16.0 MiB) with k=7") || !strings.Contains(out, "At 10,000,000 items its false-positive rate is 0.183%") {
		t.Errorf("calc -m 16MiB -k 7 -n 10M:\n%s", out)
	}
	out = run(t, "", "calc", "-m", "9585088", "-n", "1000000").ok(t)
	if !strings.Contains(out, "k=7 is the best") {
		t.Errorf("calc -m -n does not choose k=7:\n%s", out)
	}
	out = run(t, "", "calc", "-m", "8000000", "-k", "7").ok(t)
	if !strings.Contains(out, "792,168 is the count at which k=7 is optimal") {
		t.Errorf("calc -m -k:\n%s", out)
	}
}

func TestCalcErrors(t *testing.T) {
	run(t, "", "calc").fails(t, "give -n and -p")
	run(t, "", "calc", "-n", "1e6").fails(t, "give -n and -p")
	run(t, "", "calc", "-n", "lots", "-p", "0.01").fails(t, `-n: "lots" is not a count`, "1e6")
	run(t, "", "calc", "-n", "1e6", "-p", "2").fails(t, `-p: "2" is not a false-positive rate`, "1%")
	run(t, "", "calc", "-n", "1e6", "-p", "0").fails(t, "above 0 and below 1")
	run(t, "", "calc", "-n", "0", "-p", "0.01").fails(t, "0 items")
	run(t, "", "calc", "-n", "1e6", "-k", "3").fails(t, "-k goes with -m")
	run(t, "", "calc", "-m", "1MB").fails(t, "-m alone")
	run(t, "", "calc", "-m", "1MB", "-n", "1", "-p", "0.1").fails(t, "drop one")
	run(t, "", "calc", "-m", "0", "-n", "1").fails(t, "at least 1 bit")
	run(t, "", "calc", "-m", "1MB", "-k", "0").fails(t, "-k", "from 1 to")
	run(t, "", "calc", "-m", "1", "-p", "1e-9").fails(t, "cannot reach", "larger -m")
	run(t, "", "calc", "extra", "-n", "1", "-p", "0.1").fails(t, "too many arguments")
	// A rate no Guava filter can have is reported in its row; the other rules still answer.
	out := run(t, "", "calc", "-n", "1", "-p", "0.9").ok(t)
	if !strings.Contains(out, "guava        cannot:") || !strings.Contains(out, "redisbloom   64") {
		t.Errorf("calc -n 1 -p 0.9:\n%s", out)
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
