package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parsers for the numbers users type: counts (-n), rates (-p) and sizes (-m). Each accepts the
// forms people write in a shell and says which forms it takes when it refuses one.

// maxCount bounds counts and bit sizes: 2^56 is far beyond any filter a machine can hold, and
// keeps every later computation exact in float64 and int64.
const maxCount = 1 << 56

type suffix struct {
	s   string
	mul float64
}

// decimalSuffixes scale counts: 100M is a hundred million.
var decimalSuffixes = []suffix{{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}

// sizeSuffixes scale sizes: binary ones first, so that 8Mi is 8·2^20 and 8M is 8·10^6.
var sizeSuffixes = append([]suffix{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}}, decimalSuffixes...)

// parseCount parses a number of items: 1000000, 1_000_000, 1,000,000, 1e6, 1M or 1.5k.
func parseCount(s string) (uint64, error) {
	v, err := parseScaled(s, decimalSuffixes)
	if err != nil {
		return 0, fmt.Errorf("%s is not a count: %v; write it as 1000000, 1_000_000, 1e6 or 1M (k, M, G, T are powers of 1000)", quote(s), err)
	}
	return v, nil
}

// parseBits parses a filter size: a number of bits (9585088, 1e7, 10M, 8Mi) or, with a
// trailing B, of bytes (1.2MB, 1MiB, 4096B).
func parseBits(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "B") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "B")), 8
	}
	v, err := parseScaledFloat(t, sizeSuffixes)
	if err == nil {
		v *= scale
		if v >= maxCount {
			err = fmt.Errorf("larger than 2^56 bits")
		} else if v != math.Trunc(v) {
			err = fmt.Errorf("not a whole number of bits")
		}
	}
	if err != nil {
		return 0, fmt.Errorf("%s is not a size: %v; give bits (9585088, 1e7, 10M, 8Mi) or bytes with a B (1.2MB, 1MiB)", quote(s), err)
	}
	return uint64(v), nil
}

// parseRate parses a false-positive rate in (0, 1): 0.01, 1e-2, 1% or 1/100.
func parseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	var p float64
	var err error
	switch {
	case strings.HasSuffix(t, "%"):
		p, err = parseFloat(strings.TrimSuffix(t, "%"))
		p /= 100
	case strings.Contains(t, "/"):
		num, den, _ := strings.Cut(t, "/")
		var a, b float64
		if a, err = parseFloat(num); err == nil {
			if b, err = parseFloat(den); err == nil {
				p = a / b
			}
		}
	default:
		p, err = parseFloat(t)
	}
	if err == nil && !(p > 0 && p < 1) {
		err = fmt.Errorf("a rate must be above 0 and below 1")
	}
	if err != nil {
		return 0, fmt.Errorf("%s is not a false-positive rate: %v; write it as 0.01, 1e-2, 1%% or 1/100", quote(s), err)
	}
	return p, nil
}

// parseScaled parses a non-negative whole number with an optional suffix from suffixes.
func parseScaled(s string, suffixes []suffix) (uint64, error) {
	v, err := parseScaledFloat(strings.TrimSpace(s), suffixes)
	if err != nil {
		return 0, err
	}
	if v >= maxCount {
		return 0, fmt.Errorf("larger than 2^56")
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("not a whole number")
	}
	return uint64(v), nil
}

// parseScaledFloat parses a non-negative decimal number with thousands separators (, or _) and
// an optional suffix, the first of suffixes that t ends with.
func parseScaledFloat(t string, suffixes []suffix) (float64, error) {
	scale := 1.0
	for _, suf := range suffixes {
		if strings.HasSuffix(t, suf.s) {
			t, scale = t[:len(t)-len(suf.s)], suf.mul
			break
		}
	}
	t = strings.TrimSpace(t)
	if strings.ContainsAny(t, ",_") {
		if strings.HasPrefix(t, ",") || strings.HasPrefix(t, "_") || strings.HasSuffix(t, ",") || strings.HasSuffix(t, "_") {
			return 0, fmt.Errorf("misplaced separator")
		}
		t = strings.NewReplacer(",", "", "_", "").Replace(t)
	}
	v, err := parseFloat(t)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("negative")
	}
	v *= scale
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("too large")
	}
	return v, nil
}

// parseFloat is strconv.ParseFloat for finite decimal numbers only (no hex, Inf or NaN).
func parseFloat(t string) (float64, error) {
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, fmt.Errorf("empty")
	}
	for _, c := range t {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
			return 0, fmt.Errorf("unexpected %q", c)
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("out of range")
		}
		return 0, fmt.Errorf("not a number")
	}
	return v, nil
}

// formatRate formats a false-positive rate compactly: 1%, 0.1%, 1.2e-07.
func formatRate(p float64) string {
	switch {
	case p == 0:
		return "0"
	case p >= 1:
		return "1"
	case p >= 1e-4:
		return strconv.FormatFloat(p*100, 'g', 3, 64) + "%"
	default:
		return strconv.FormatFloat(p, 'e', 2, 64)
	}
}
