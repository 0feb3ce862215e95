package cli

import (
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"
)

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bloom test answers exactly as Guava's mightContain did, item for item, for filters Guava
// wrote; the items arrive gzip-compressed on stdin.
func TestTestAnswersAsGuava(t *testing.T) {
	for _, c := range []struct{ keys, name string }{{"int64", "longs"}, {"int32", "ints"}} {
		f, err := os.Open(testdata("guava/" + c.name + "-probes.txt.gz"))
		if err != nil {
			t.Fatal(err)
		}
		got := runReader(t, f, "test", "--from", "guava", "--keys", c.keys, testdata("guava/"+c.name+".guava")).ok(t)
		f.Close()
		if want := gunzip(t, testdata("guava/"+c.name+"-probes.want.gz")); got != want {
			t.Errorf("%s: answers differ from Guava's (%d vs %d bytes)", c.name, len(got), len(want))
		}
	}
}

func TestTestExitStatus(t *testing.T) {
	f := tempPath(t, "users.bloom")
	run(t, "", "build", "-n", "100", "-o", f, testdata("items/users.txt")).ok(t)

	r := run(t, "", "test", f, "alice@example.com", "mallory@example.com", "naïve café")
	if r.code != 0 || r.stdout != "maybe\nno\nmaybe\n" {
		t.Errorf("mixed items: status %d, %q", r.code, r.stdout)
	}
	r = run(t, "", "test", f, "mallory@example.com", "trent@example.com")
	if r.code != exitNone || r.stdout != "no\nno\n" || r.stderr != "" {
		t.Errorf("absent items: status %d, %q, %q; want 1, no output on stderr", r.code, r.stdout, r.stderr)
	}
	// Items from stdin, one per line, answered in order.
	r = run(t, "bob@example.com\nzed@example.com\n", "test", f)
	if r.code != 0 || r.stdout != "maybe\nno\n" {
		t.Errorf("stdin items: status %d, %q", r.code, r.stdout)
	}
	// No items at all: none may be present.
	if r = run(t, "", "test", f); r.code != exitNone || r.stdout != "" {
		t.Errorf("no items: status %d, %q", r.code, r.stdout)
	}
	// -q prints nothing; the status tells.
	if r = run(t, "", "test", "-q", f, "alice@example.com"); r.code != 0 || r.stdout != "" {
		t.Errorf("-q: status %d, %q", r.code, r.stdout)
	}
	// A bad item is an error (status 2) after the answers for the items before it.
	r = run(t, "1\n2\nx\n3\n", "test", "--keys", "int64", f)
	if r.code != exitError || r.stdout != "no\nno\n" || !strings.Contains(r.stderr, "stdin:3") {
		t.Errorf("bad item: status %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	// The filter from stdin, items as arguments.
	r = runReader(t, strings.NewReader(string(mustRead(t, f))), "test", "-", "carol@example.com")
	if r.code != 0 || r.stdout != "maybe\n" {
		t.Errorf("filter on stdin: status %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	run(t, "", "test", "-").fails(t, "items must be arguments")
}

func TestTestErrors(t *testing.T) {
	run(t, "", "test").fails(t, "missing arguments", "bloom test FILE")
	run(t, "", "test", testdata("items/nope.bloom"), "x").fails(t, "nope.bloom: no such file")
	run(t, "", "test", testdata("guava/longs.guava"), "1").fails(t, "no magic", "pass --from guava")
	run(t, "", "test", testdata("items/users.txt"), "1").fails(t, "no magic")
	run(t, "", "test", testdata("items/nums.txt.gz"), "1").fails(t, "gzip-compressed")
	run(t, "", "test", "--from", "xml", testdata("guava/longs.guava"), "1").fails(t, "native, guava or redisbloom")
	f := tempPath(t, "users.bloom")
	run(t, "", "build", "-n", "100", "-o", f, testdata("items/users.txt")).ok(t)
	run(t, "", "test", "--from", "guava", f, "1").fails(t, "is a native file, not a Guava stream")
	run(t, "", "test", "--from", "redisbloom", f, "1").fails(t, "is a native file, not a redisbloom one")
}
