package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestConvertRoundTrips(t *testing.T) {
	// Guava -> native -> Guava gives back Guava's bytes, and the native file answers the same.
	native, back := tempPath(t, "n"), tempPath(t, "g")
	out := run(t, "", "convert", "--from", "guava", testdata("guava/longs.guava"), native, "--to", "native").ok(t)
	if !strings.Contains(out, "wrote "+native+": native, from guava") {
		t.Errorf("convert said %q", out)
	}
	run(t, "", "convert", native, back, "--to", "guava").ok(t)
	if !bytes.Equal(mustRead(t, back), mustRead(t, testdata("guava/longs.guava"))) {
		t.Error("guava -> native -> guava changed the bytes")
	}
	items := string(mustRead(t, testdata("guava/longs.txt")))
	if got := run(t, items, "test", "--keys", "int64", native).ok(t); got != strings.Repeat("maybe\n", 2010) {
		t.Error("the converted filter lost items")
	}

	// A non-scaling RedisBloom filter (one link) -> native classic redisbloom64 -> RedisBloom
	// gives back the same dump, and the native file answers the same.
	rb, n2, rb2 := tempPath(t, "rb"), tempPath(t, "n2"), tempPath(t, "rb2")
	run(t, numbers(1, 900), "build", "--format", "redisbloom", "-n", "1000", "-o", rb).ok(t)
	run(t, "", "convert", rb, n2, "--to", "native").ok(t)
	if info := run(t, "", "info", n2).ok(t); !strings.Contains(info, "scheme:      redisbloom64") {
		t.Errorf("converted chain:\n%s", info)
	}
	if got := run(t, numbers(1, 900), "test", n2).ok(t); got != strings.Repeat("maybe\n", 900) {
		t.Error("the chain converted to native lost items")
	}
	run(t, "", "convert", n2, rb2, "--to", "redisbloom").ok(t)
	if got := run(t, numbers(1, 900), "test", rb2).ok(t); got != strings.Repeat("maybe\n", 900) {
		t.Error("native -> redisbloom lost items")
	}
	a, b := run(t, "", "info", "--json", rb).ok(t), run(t, "", "info", "--json", rb2).ok(t)
	if !strings.Contains(b, `"bits": 9600`) || !strings.Contains(a, `"bits": 9600`) {
		t.Errorf("sizes changed:\n%s\n%s", a, b)
	}
	// Converting to the format it is already in rewrites the same bytes.
	same := tempPath(t, "same")
	run(t, "", "convert", rb, same, "--to", "redisbloom").ok(t)
	if !bytes.Equal(mustRead(t, same), mustRead(t, rb)) {
		t.Error("redisbloom -> redisbloom changed the bytes")
	}
	// In place: IN and OUT may be the same file.
	run(t, "", "convert", native, native, "--to", "native").fails(t, "already exists; pass --force")
	run(t, "", "convert", "--force", native, native, "--to", "native").ok(t)
	run(t, "", "info", native).ok(t)
}

func TestConvertRefusesWhatAFormatCannotHold(t *testing.T) {
	build := func(args ...string) string {
		p := tempPath(t, "f")
		run(t, numbers(1, 100), append([]string{"build", "-n", "50", "-o", p}, args...)...).ok(t)
		return p
	}
	out := tempPath(t, "out")
	for _, c := range []struct {
		in   string
		to   string
		want []string
	}{
		{build("--type", "blocked"), "guava", []string{"blocked filter cannot be written as a Guava stream", "bloom build"}},
		{build("--type", "counting"), "redisbloom", []string{"counting filter cannot be held by RedisBloom"}},
		{build(), "redisbloom", []string{"hashed with guava64 cannot be held by RedisBloom", "rebuild"}},
		{build("--scheme", "redisbloom64"), "guava", []string{"hashed with redisbloom64 cannot be written as a Guava stream"}},
		{build("--type", "scalable", "--format", "redisbloom"), "native", []string{"chain of 2 sub-filters", "--to redisbloom"}},
		{build("--type", "scalable", "--format", "redisbloom"), "guava", []string{"RedisBloom filter cannot be written as a Guava stream"}},
	} {
		run(t, "", "convert", c.in, out, "--to", c.to).fails(t, c.want...)
	}
	run(t, "", "convert", build(), out).fails(t, "give --to")
	run(t, "", "convert", build(), out, "--to", "xml").fails(t, "native, guava or redisbloom")
	run(t, "", "convert", testdata("guava/longs.guava"), out, "--to", "native").fails(t, "pass --from guava")
	run(t, "", "convert", build()).fails(t, "missing arguments")
}
