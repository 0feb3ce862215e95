package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// numbers returns the decimal numbers from lo to hi, one per line.
func numbers(lo, hi int) string {
	var b strings.Builder
	for i := lo; i <= hi; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

// The union of two halves is the filter of the whole: for classic filters, byte for byte.
func TestMergeClassicIsTheWhole(t *testing.T) {
	a, b, all, m := tempPath(t, "a"), tempPath(t, "b"), tempPath(t, "all"), tempPath(t, "m")
	run(t, numbers(1, 5000), "build", "-n", "10000", "-o", a).ok(t)
	run(t, numbers(5001, 10000), "build", "-n", "10000", "-o", b).ok(t)
	run(t, numbers(1, 10000), "build", "-n", "10000", "-o", all).ok(t)
	out := run(t, "", "merge", a, b, "-o", m).ok(t)
	if !strings.Contains(out, "wrote "+m+": native classic filter") {
		t.Errorf("merge said %q", out)
	}
	if !bytes.Equal(mustRead(t, m), mustRead(t, all)) {
		t.Error("merged halves differ from the filter of the whole")
	}
	// Guava streams merge into a Guava stream.
	ga, gb, gall, gm := tempPath(t, "ga"), tempPath(t, "gb"), tempPath(t, "gall"), tempPath(t, "gm")
	run(t, numbers(1, 500), "build", "--format", "guava", "-n", "1000", "-o", ga).ok(t)
	run(t, numbers(501, 1000), "build", "--format", "guava", "-n", "1000", "-o", gb).ok(t)
	run(t, numbers(1, 1000), "build", "--format", "guava", "-n", "1000", "-o", gall).ok(t)
	run(t, "", "merge", "--from", "guava", ga, gb, "-o", gm).ok(t)
	if !bytes.Equal(mustRead(t, gm), mustRead(t, gall)) {
		t.Error("merged Guava halves differ from the stream of the whole")
	}
}

// Scalable filters and RedisBloom chains merge link by link; every item of either tests present.
func TestMergeScalable(t *testing.T) {
	for _, format := range []string{"native", "redisbloom"} {
		a, b, m := tempPath(t, "a"), tempPath(t, "b"), tempPath(t, "m")
		run(t, numbers(1, 3000), "build", "--type", "scalable", "--format", format, "-n", "1000", "-o", a).ok(t)
		run(t, numbers(3001, 4000), "build", "--type", "scalable", "--format", format, "-n", "1000", "-o", b).ok(t)
		run(t, "", "merge", a, b, "-o", m).ok(t)
		if got := run(t, numbers(1, 4000), "test", m).ok(t); got != strings.Repeat("maybe\n", 4000) {
			t.Errorf("%s: merged filter misses items", format)
		}
		info := run(t, "", "info", m).ok(t)
		if !strings.Contains(info, "format:      "+format) || !strings.Contains(info, "links:       2") {
			t.Errorf("%s: merged info:\n%s", format, info)
		}
		// --to converts on the way out where the format can hold the result.
		if format == "native" {
			run(t, "", "merge", a, b, "-o", m, "--force", "--to", "guava").fails(t, "scalable filter cannot be written as a Guava stream")
		}
	}
}

// A native classic filter hashed as RedisBloom hashes is a one-link chain: it merges with a
// RedisBloom dump of the same size, in either order, into the first input's format.
func TestMergeNativeRedisBloom64WithChain(t *testing.T) {
	a, b, native := tempPath(t, "a.rb"), tempPath(t, "b.rb"), tempPath(t, "a.bloom")
	run(t, numbers(1, 500), "build", "--format", "redisbloom", "-n", "1000", "-o", a).ok(t)
	run(t, numbers(501, 1000), "build", "--format", "redisbloom", "-n", "1000", "-o", b).ok(t)
	run(t, "", "convert", a, native, "--to", "native").ok(t)
	for _, order := range [][2]string{{native, b}, {b, native}} {
		m := tempPath(t, "m")
		run(t, "", "merge", order[0], order[1], "-o", m).ok(t)
		if got := run(t, numbers(1, 1000), "test", m).ok(t); got != strings.Repeat("maybe\n", 1000) {
			t.Errorf("merge %v: the merged filter misses items", order)
		}
	}
}

func TestMergeRefusesIncompatible(t *testing.T) {
	f := func(args ...string) string {
		p := tempPath(t, "f")
		run(t, numbers(1, 100), append([]string{"build", "-o", p}, args...)...).ok(t)
		return p
	}
	small, big := f("-n", "100"), f("-n", "1000")
	out := tempPath(t, "out")
	run(t, "", "merge", small, big, "-o", out).fails(t, "cannot merge", "incompatible", "same -n, -p")
	run(t, "", "merge", small, f("-n", "100", "--type", "blocked"), "-o", out).fails(t, "blocked filter and the first a classic one")
	run(t, "", "merge", f("-n", "100", "--type", "counting"), f("-n", "100", "--type", "counting"), "-o", out).fails(t, "counting filters cannot be merged")
	// A native filter hashed otherwise than RedisBloom's can never merge with a chain: the
	// message says so rather than suggest a conversion.
	for _, native := range []string{small, f("-n", "100", "--type", "scalable")} {
		r := run(t, "", "merge", native, f("-n", "100", "--format", "redisbloom"), "-o", out)
		if r.fails(t, "RedisBloom chain", "can never be merged"); strings.Contains(r.stderr, "convert") {
			t.Errorf("merge advises a conversion: %s", r.stderr)
		}
	}
	run(t, "", "merge", f("-n", "100", "--format", "redisbloom"), f("-n", "200", "--format", "redisbloom"), "-o", out).fails(t, "sub-filter 0 differs")
	run(t, "", "merge", f("-n", "100", "--format", "redisbloom", "--type", "scalable"), f("-n", "100", "--format", "redisbloom"), "-o", out).fails(t, "differ in growth")
	run(t, "", "merge", small, "-o", out).fails(t, "missing arguments")
	run(t, "", "merge", small, big).fails(t, "give -o OUT")
	run(t, "", "merge", small, testdata("guava/longs.guava"), "-o", out).fails(t, "longs.guava", "pass --from guava")
}
