package cli

import (
	"math"
	"strings"
	"testing"
)

func TestParseCount(t *testing.T) {
	for in, want := range map[string]uint64{
		"1000000": 1e6, "1_000_000": 1e6, "1,000,000": 1e6, "1e6": 1e6, "1M": 1e6, "1.5k": 1500,
		"100M": 1e8, " 7 ": 7, "0": 0, "2G": 2e9, "1T": 1e12, "10K": 1e4,
	} {
		got, err := parseCount(in)
		if err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1.5", "1e-3", "1e30", "NaN", "Inf", "0x10", "1MB", "_1", "1,", "1Mi", "1 000"} {
		if got, err := parseCount(in); err == nil {
			t.Errorf("parseCount(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "1e6") {
			t.Errorf("parseCount(%q) error %q does not show the accepted forms", in, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"0.01": 0.01, "1e-2": 0.01, "1%": 0.01, "1/100": 0.01, "0.5%": 0.005, " 3/1000 ": 0.003,
	} {
		got, err := parseRate(in)
		if err != nil || math.Abs(got-want) > 1e-15 {
			t.Errorf("parseRate(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "1", "100%", "-0.1", "2/1", "1/0", "0/5", "NaN", "x%", "1/", "/2", "1e-400"} {
		if got, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) = %g, want an error", in, got)
		}
	}
}

func TestParseBits(t *testing.T) {
	for in, want := range map[string]uint64{
		"9585088": 9585088, "1e7": 1e7, "10M": 1e7, "8Mi": 8 << 20, "1MiB": 8 << 20, "1.2MB": 9.6e6,
		"4096B": 32768, "1KiB": 8192, "1 GiB": 8 << 30,
	} {
		got, err := parseBits(in)
		if err != nil || got != want {
			t.Errorf("parseBits(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "B", "x", "-8", "1.5", "1e20", "1PiB", "0.1B"} {
		if got, err := parseBits(in); err == nil {
			t.Errorf("parseBits(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for p, want := range map[float64]string{0.01: "1%", 0.001: "0.1%", 0.5: "50%", 1.07e-8: "1.07e-08", 0: "0", 1: "1"} {
		if got := formatRate(p); got != want {
			t.Errorf("formatRate(%g) = %q, want %q", p, got, want)
		}
	}
}

// The parsers take whatever a user types: they must never panic, and what they accept must be
// in range.
func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"1e6", "1_000_000", "1,000", "100M", "1.5k", "", "-1", "1e400", "1Mi", ",", "0x1p3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseCount(s); err == nil && v >= maxCount {
			t.Fatalf("parseCount(%q) = %d, beyond the limit", s, v)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"0.01", "1%", "1/100", "1e-2", "", "0", "1/0", "NaN", "%", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := parseRate(s); err == nil && !(p > 0 && p < 1) {
			t.Fatalf("parseRate(%q) = %g, outside (0, 1)", s, p)
		}
	})
}

func FuzzParseBits(f *testing.F) {
	for _, s := range []string{"8Mi", "1MiB", "1.2MB", "10M", "B", "", "1e99B", "0.125B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseBits(s); err == nil && v >= maxCount {
			t.Fatalf("parseBits(%q) = %d, beyond the limit", s, v)
		}
	})
}
