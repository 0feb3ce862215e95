package value

import "testing"

// TestLongDoubleSyntax: what strtold takes, whole, and Redis's string2ld keeps. The results of
// the arithmetic are checked against redis-server in internal/server's transcripts
// (commands-hashes.txt), up to values of 4933 digits.
func TestLongDoubleSyntax(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{"1", true}, {"-1.5", true}, {"+.5", true}, {"5.", true}, {"1e5", true}, {"1E+5", true},
		{"1e-5", true}, {"0x1p3", true}, {"0X1.8P-1", true}, {"0x.8", true}, {"0xAbC", true},
		{"inf", true}, {"-INFINITY", true}, {"0", true}, {"-0", true}, {"1e4932", true},
		{"1e-4940", true}, // subnormal: kept, as strtold keeps it
		{"", false}, {" 1", false}, {"1 ", false}, {".", false}, {"e5", false}, {"1e", false},
		{"1e+", false}, {"0x", false}, {"0xp1", false}, {"0x1p", false}, {"1_0", false},
		{"0b1", false}, {"nan", false}, {"infinit", false}, {"1.2.3", false}, {"1e5000", false},
		{"1e-5000", false}, {"--1", false}, {"1\x00", false},
	} {
		if _, ok := parseLongDouble([]byte(c.s)); ok != c.ok {
			t.Errorf("%q: %v, want %v", c.s, ok, c.ok)
		}
	}
}

func TestIncrFloat(t *testing.T) {
	for _, c := range []struct {
		cur    string
		exists bool
		incr   string
		want   string
		msg    string
	}{
		{"", false, "10.5", "10.5", ""},
		{"0.1", true, "0.2", "0.3", ""},
		{"5.0e3", true, "2.0e2", "5200", ""},
		{"1", true, "-1", "0", ""},
		{"-0", true, "-0", "0", ""},
		{"abc", true, "1", "", ErrHashNotFlt},
		{"inf", true, "1", "", ErrNaNResult},
		{"1.1e4932", true, "1.1e4932", "", ErrNaNResult},
	} {
		incr, msg := ParseFloatIncr([]byte(c.incr))
		if msg != "" {
			t.Fatalf("%q: %s", c.incr, msg)
		}
		got, msg := IncrFloat([]byte(c.cur), c.exists, incr)
		if string(got) != c.want || msg != c.msg {
			t.Errorf("%q + %q: %q %q, want %q %q", c.cur, c.incr, got, msg, c.want, c.msg)
		}
	}
	for _, in := range []string{"inf", "-inf"} {
		if _, msg := ParseFloatIncr([]byte(in)); msg != ErrNaNArg {
			t.Errorf("%q: %q", in, msg)
		}
	}
	if _, msg := ParseFloatIncr([]byte("x")); msg != ErrNotFloat {
		t.Errorf("x: %q", msg)
	}
}
