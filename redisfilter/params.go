package redisfilter

import (
	"fmt"
	"strconv"
	"strings"
)

// formatVersion names the native layout's format in every stored parameter line. A future
// incompatible layout gets a new name, and handles of either version refuse the other's filters
// with ErrConfigMismatch instead of misreading them.
const formatVersion = "redisfilter/1"

// field is one key=value pair of a parameter line.
type field struct{ key, val string }

// paramLine is the description of a filter (or of one part of it) that is stored beside its bits
// and compared, as a whole string, by every script call: a line such as
//
//	redisfilter/1 kind=classic scheme=guava64 m=9600 k=7 n=1000 p=0.01 parts=1 part=0 partbits=4294967296
//
// One string compare in Lua checks every parameter at once; on a mismatch the script returns the
// stored line and the client says which fields differ (see describeMismatch).
func paramLine(fields ...field) string {
	var b strings.Builder
	b.WriteString(formatVersion)
	for _, f := range fields {
		b.WriteByte(' ')
		b.WriteString(f.key)
		b.WriteByte('=')
		b.WriteString(f.val)
	}
	return b.String()
}

// parseLine splits a parameter line into its format token and its fields, in order.
func parseLine(s string) (format string, fields []field) {
	toks := strings.Fields(s)
	if len(toks) == 0 {
		return "", nil
	}
	format = toks[0]
	for _, t := range toks[1:] {
		k, v, _ := strings.Cut(t, "=")
		fields = append(fields, field{k, v})
	}
	return format, fields
}

// lookup returns the value of key in fields.
func lookup(fields []field, key string) (string, bool) {
	for _, f := range fields {
		if f.key == key {
			return f.val, true
		}
	}
	return "", false
}

// describeMismatch says how a stored parameter line differs from the one a handle expects,
// field by field, in the expected line's order: "k: stored 5, this handle 7; m: stored 729, ...".
func describeMismatch(stored, want string) string {
	if stored == "" {
		return "no parameters are stored beside existing bits (not created by this package, or its parameters were deleted)"
	}
	sf, sfields := parseLine(stored)
	wf, wfields := parseLine(want)
	var diffs []string
	if sf != wf {
		diffs = append(diffs, fmt.Sprintf("format: stored %q, this handle %q", sf, wf))
	}
	for _, w := range wfields {
		s, ok := lookup(sfields, w.key)
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: not stored, this handle %s", w.key, w.val))
		case s != w.val:
			diffs = append(diffs, fmt.Sprintf("%s: stored %s, this handle %s", w.key, s, w.val))
		}
	}
	for _, s := range sfields {
		if _, ok := lookup(wfields, s.key); !ok {
			diffs = append(diffs, fmt.Sprintf("%s: stored %s, unknown to this handle", s.key, s.val))
		}
	}
	if len(diffs) == 0 {
		return fmt.Sprintf("stored %q, this handle %q", stored, want)
	}
	return strings.Join(diffs, "; ")
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// formatRate writes a false-positive rate so that parsing it gives back the same float64.
func formatRate(p float64) string { return strconv.FormatFloat(p, 'g', -1, 64) }
