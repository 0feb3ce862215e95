package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// Built from the items Guava put, with the same n and p, the stream is byte for byte the one
// Guava wrote, and the counts of new and present items are Guava's put results.
func TestBuildMatchesGuava(t *testing.T) {
	for _, c := range []struct{ keys, n, p, items, fixture, summary string }{
		{"int64", "2000", "0.001", "longs.txt", "longs.guava", "2,010 items: 2,010 new, 0 already present"},
		{"int32", "1000", "1%", "ints.txt", "ints.guava", "1,006 items: 1,001 new, 5 already present"},
	} {
		out := tempPath(t, "f.guava")
		stdout := run(t, "", "build", "--keys", c.keys, "--format", "guava", "-n", c.n, "-p", c.p, "-o", out, testdata("guava/"+c.items)).ok(t)
		if !strings.Contains(stdout, c.summary) {
			t.Errorf("summary %q lacks %q", stdout, c.summary)
		}
		if got, want := mustRead(t, out), mustRead(t, testdata("guava/"+c.fixture)); !bytes.Equal(got, want) {
			t.Errorf("%s: built stream differs from Guava's (%d vs %d bytes)", c.items, len(got), len(want))
		}
	}
}

// Every type in every format that can hold it: all items test present afterwards, from files,
// gzip files and stdin.
func TestBuildTypesAndFormats(t *testing.T) {
	users := strings.Split(strings.TrimSuffix(string(mustRead(t, testdata("items/users.txt"))), "\n"), "\n")
	for _, c := range []struct{ typ, format string }{
		{"classic", "native"}, {"blocked", "native"}, {"scalable", "native"}, {"counting", "native"},
		{"classic", "guava"}, {"classic", "redisbloom"}, {"scalable", "redisbloom"},
	} {
		out := tempPath(t, "f")
		stdout := run(t, "", "build", "--type", c.typ, "--format", c.format, "-n", "100", "-o", out, testdata("items/users.txt")).ok(t)
		if !strings.Contains(stdout, "10 items: 9 new, 1 already present") {
			t.Errorf("%s/%s: summary %q", c.typ, c.format, stdout)
		}
		args := []string{"test", out}
		if c.format == "guava" {
			args = append(args, "--from", "guava")
		}
		got := run(t, "", append(args, users...)...).ok(t)
		if want := strings.Repeat("maybe\n", len(users)); got != want {
			t.Errorf("%s/%s: test answers %q, want all maybe", c.typ, c.format, got)
		}
	}
}

func TestBuildInputs(t *testing.T) {
	out := tempPath(t, "nums.bloom")
	// gzip detected by magic; the same items from stdin give the same file.
	stdout := run(t, "", "build", "-n", "20000", "-o", out, testdata("items/nums.txt.gz")).ok(t)
	if !strings.Contains(stdout, "20,000 items:") {
		t.Errorf("gzip input: %q", stdout)
	}
	gz, err := os.Open(testdata("items/nums.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	out2 := tempPath(t, "nums2.bloom")
	runReader(t, gz, "build", "-n", "20000", "-o", out2).ok(t)
	if !bytes.Equal(mustRead(t, out), mustRead(t, out2)) {
		t.Error("the same items from a gzip file and from stdin built different filters")
	}
	// CRLF line ends are the same items as LF ones.
	a, b := tempPath(t, "a"), tempPath(t, "b")
	run(t, "", "build", "-n", "10", "-o", a, testdata("items/crlf.txt")).ok(t)
	run(t, "alice@example.com\nbob@example.com\n", "build", "-n", "10", "-o", b, "-").ok(t)
	if !bytes.Equal(mustRead(t, a), mustRead(t, b)) {
		t.Error("CRLF lines built a different filter from LF lines")
	}
	// hex keys: "0xDEADBEEF" and "deadbeef" are the same key.
	h := tempPath(t, "h")
	run(t, "", "build", "--keys", "hex", "-n", "10", "-o", h, testdata("items/hex.txt")).ok(t)
	if got := run(t, "", "test", "--keys", "hex", h, "deadbeef", "00FF", "", "0102").stdout; got != "maybe\nmaybe\nmaybe\nno\n" {
		t.Errorf("hex keys: %q", got)
	}
	// -o - writes the filter to stdout and the summary to stderr.
	r := run(t, "x\n", "build", "-n", "10", "-o", "-")
	if r.ok(t); !strings.HasPrefix(r.stdout, nativeMagic) || !strings.Contains(r.stderr, "1 item: 1 new") {
		t.Errorf("-o -: stdout %q..., stderr %q", r.stdout[:min(8, len(r.stdout))], r.stderr)
	}
}

func TestBuildErrorsWriteNothing(t *testing.T) {
	dir := t.TempDir()
	out := dir + "/f.bloom"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-o", out}, []string{"-n is required"}},
		{[]string{"-n", "10"}, []string{"give -o FILE"}},
		{[]string{"-n", "ten", "-o", out}, []string{"-n:", "not a count"}},
		{[]string{"-n", "0", "-o", out}, []string{"0 items"}},
		{[]string{"-n", "10", "-p", "5", "-o", out}, []string{"-p:", "1%"}},
		{[]string{"-n", "10", "--type", "cuckoo", "-o", out}, []string{"--type", "classic, blocked, scalable or counting"}},
		{[]string{"-n", "10", "--format", "json", "-o", out}, []string{"native, guava or redisbloom"}},
		{[]string{"-n", "10", "--type", "blocked", "--format", "guava", "-o", out}, []string{"guava holds only classic"}},
		{[]string{"-n", "10", "--type", "counting", "--format", "redisbloom", "-o", out}, []string{"redisbloom holds classic and scalable"}},
		{[]string{"-n", "10", "--scheme", "redisbloom64", "--format", "guava", "-o", out}, []string{"guava64 or guava32"}},
		{[]string{"-n", "10", "--scheme", "md5", "-o", out}, []string{"--scheme", "unknown"}},
		{[]string{"-n", "10", "--type", "blocked", "--scheme", "guava32", "-o", out}, []string{"classic and counting"}},
		{[]string{"-n", "1e15", "-p", "1e-9", "-o", out}, []string{"does not fit", "lower -n"}},
		{[]string{"-n", "10", "--keys", "int64", "-o", out, testdata("items/badint.txt")}, []string{"badint.txt:3", `"three" is not an int64`}},
		{[]string{"-n", "10", "--keys", "hex", "-o", out, testdata("items/badhex.txt")}, []string{"badhex.txt:2", "odd number of hex digits"}},
		{[]string{"-n", "10", "-o", out, testdata("items/broken.gz")}, []string{"broken.gz", "gzip data is damaged or truncated"}},
		{[]string{"-n", "10", "-o", out, testdata("items/missing.txt")}, []string{"missing.txt: no such file"}},
		{[]string{"-n", "10", "-o", out, "testdata"}, []string{"is a directory"}},
		{[]string{"-n", "10", "-o", out, "--progress", "--no-progress"}, []string{"contradict"}},
		// A non-scaling RedisBloom filter refuses items past its capacity.
		{[]string{"-n", "100", "--format", "redisbloom", "-o", out, testdata("items/nums.txt.gz")}, []string{"full after 100 new items", "--type scalable"}},
		{[]string{"-n", "10", "-o", dir + "/no/such/dir/f"}, []string{"cannot write"}},
	} {
		run(t, "", append([]string{"build"}, c.args...)...).fails(t, c.want...)
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("build %q left %s behind", c.args, out)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("failed builds left files: %v", entries)
	}
}

func TestBuildInterrupted(t *testing.T) {
	out := tempPath(t, "f")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if code := Run(ctx, []string{"build", "-n", "20000", "-o", out, testdata("items/nums.txt.gz")}, strings.NewReader(""), &o, &e); code != exitError {
		t.Fatalf("interrupted build exited %d", code)
	}
	if !strings.Contains(e.String(), "interrupted; nothing was written") {
		t.Errorf("stderr %q", e.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an interrupted build wrote its file")
	}
}

func TestBuildWarnsWhenOverfull(t *testing.T) {
	out := tempPath(t, "f")
	stdout := run(t, "", "build", "-n", "1000", "-o", out, testdata("items/nums.txt.gz")).ok(t)
	if !strings.Contains(stdout, "warning:") || !strings.Contains(stdout, "exceed -n 1,000") || !strings.Contains(stdout, "--type scalable") {
		t.Errorf("no overfull warning: %q", stdout)
	}
	stdout = run(t, "", "build", "-n", "1000", "--type", "scalable", "--force", "-o", out, testdata("items/nums.txt.gz")).ok(t)
	if strings.Contains(stdout, "warning:") {
		t.Errorf("a scalable filter warned: %q", stdout)
	}
}

func TestBuildProgress(t *testing.T) {
	out := tempPath(t, "f")
	// stderr is not a terminal here: no bar unless forced.
	r := run(t, "", "build", "-n", "20000", "-o", out, testdata("items/nums.txt.gz"))
	if r.ok(t); r.stderr != "" {
		t.Errorf("unforced progress on a non-terminal: %q", r.stderr)
	}
	r = run(t, "", "build", "--progress", "--force", "-n", "20000", "-o", out, testdata("items/nums.txt.gz"))
	r.ok(t)
	if !strings.Contains(r.stderr, "adding") {
		t.Errorf("--progress drew nothing: %q", r.stderr)
	}
	if strings.Contains(r.stdout, "adding") {
		t.Error("the progress bar went to stdout")
	}
}
