package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestNormalize: every spelling of one URL normalises to the same string; different pages stay
// different.
func TestNormalize(t *testing.T) {
	base, _ := url.Parse("http://site.example/dir/page")
	for _, tc := range []struct{ in, want string }{
		{"http://site.example/a", "http://site.example/a"},
		{"HTTP://SITE.Example/a", "http://site.example/a"},
		{"http://site.example:80/a", "http://site.example/a"},
		{"https://site.example:443/a", "https://site.example/a"},
		{"http://site.example:8080/a", "http://site.example:8080/a"},
		{"http://site.example/a#frag", "http://site.example/a"},
		{"http://site.example/a/", "http://site.example/a"},
		{"http://site.example", "http://site.example/"},
		{"http://site.example/", "http://site.example/"},
		{"http://site.example/%7Euser", "http://site.example/~user"},
		{"http://site.example/%61%62", "http://site.example/ab"},
		{"http://site.example/a%2fb", "http://site.example/a%2Fb"},
		{"http://site.example/a%20b", "http://site.example/a%20b"},
		{"http://site.example/x/../a/./b", "http://site.example/a/b"},
		{"http://site.example/a?", "http://site.example/a"},
		{"http://site.example/a?q=%7e&r=1", "http://site.example/a?q=~&r=1"},
		{"http://[::1]:80/a", "http://[::1]/a"},
		{"../other", "http://site.example/other"},
		{"sub/", "http://site.example/dir/sub"},
		{"/abs#top", "http://site.example/abs"},
		{"  http://site.example/a  ", "http://site.example/a"},
	} {
		got, err := Normalize(base, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"mailto:a@b.example", "ftp://site.example/a", "http://", "http://site.example/%zz\x7f:"} {
		if got, err := Normalize(nil, bad); err == nil {
			t.Errorf("Normalize(%q) = %q; want an error", bad, got)
		}
	}
}

// FuzzNormalize: Normalize never panics, and its output is a fixed point.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"http://site.example/a", "HTTP://X:80/%7e/../b/#f", "https://[::1]:443/?", "/rel/./x"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://site.example/dir/page")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Normalize(base, s)
		if err != nil {
			return
		}
		again, err := Normalize(nil, n)
		if err != nil || again != n {
			t.Fatalf("Normalize(%q) = %q, which normalises to %q, %v", s, n, again, err)
		}
	})
}

// TestRun crawls a small site both ways: with normalised URLs every reachable page is fetched
// exactly once; with raw URLs the same pages are fetched many times over.
func TestRun(t *testing.T) {
	var out strings.Builder
	res, err := run([]string{"-pages", "300", "-workers", "4"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	raw, norm := res[0], res[1]
	if norm.fetches != int64(norm.distinct) || norm.queued != norm.fetches {
		t.Errorf("normalised: %d fetches of %d pages (%d queued); want each page once", norm.fetches, norm.distinct, norm.queued)
	}
	if norm.distinct < 290 || raw.distinct != norm.distinct {
		t.Errorf("pages reached: raw %d, normalised %d (of 300)", raw.distinct, norm.distinct)
	}
	if raw.fetches < 3*norm.fetches {
		t.Errorf("raw URLs made %d fetches, normalised %d; want many more without normalisation", raw.fetches, norm.fetches)
	}
}

// TestRunRepeatable: the counts do not depend on the timing of the workers, nor on their number.
func TestRunRepeatable(t *testing.T) {
	var first []result
	for _, workers := range []string{"1", "4"} {
		var out strings.Builder
		res, err := run([]string{"-pages", "100", "-workers", workers}, &out)
		if err != nil {
			t.Fatal(err)
		}
		for i := range res {
			res[i].elapsed = 0
		}
		if first == nil {
			first = res
		} else if res[0] != first[0] || res[1] != first[1] {
			t.Errorf("-workers %s: %+v; the first run, with 1 worker: %+v", workers, res, first)
		}
	}
}

// TestRunRedis crawls with the filter in a real redis-server: its Add is atomic on the server, so
// every page is fetched once without a lock in the crawler.
func TestRunRedis(t *testing.T) {
	srv := redistest.New(t, nil)
	var out strings.Builder
	res, err := run([]string{"-pages", "100", "-workers", "4", "-redis", srv.Addr}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if norm := res[1]; norm.fetches != int64(norm.distinct) || norm.distinct < 95 {
		t.Errorf("normalised, filter in Redis: %d fetches of %d pages", norm.fetches, norm.distinct)
	}
}
