package outbuf

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSetAsRedis applies values of client-output-buffer-limit one after another, as CONFIG SET
// would, and checks CONFIG GET's text or the error after each. The expectations are what
// redis-server 7.0.15 answered to the same sequence (the server package's
// TestClientOutputBufferLimitConfigAsRedis replays it against a live one).
func TestSetAsRedis(t *testing.T) {
	l := Default()
	const def = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
	if got := l.String(); got != def {
		t.Fatalf("defaults: %q, want %q", got, def)
	}
	for _, tc := range []struct {
		value string
		err   error
		get   string // after the step; "" means unchanged
	}{
		{"foo 1 2 3", ErrClass, ""},
		{"master 1 2 3", ErrClass, ""},
		{"normal 1 2", ErrArgs, ""},
		{"normal 1x 2 3", ErrValue, ""},
		{"normal 1 2 -3", ErrValue, ""},
		{"normal -1 2 3", ErrValue, ""},
		{"normal 1kb 2K 3 pubsub mb '' ''", ErrValue, ""},
		{"normal 1 2 ' 5'", ErrArgs, ""},
		{"normal 1 2 0x10", ErrValue, ""},
		{"normal 1 2 2147483648", ErrValue, ""},
		{"", nil, ""},
		{"NORMAL 1kb 2K +4", nil, "normal 1024 2000 4 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"normal  0 0", nil, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"normal mb 5B 0", nil, "normal 0 5 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"normal 1 2 ", nil, "normal 1 2 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"normal 1 2 3 normal 4 5 6", nil, "normal 4 5 6 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		{"replica 1 2 3", nil, "normal 4 5 6 slave 1 2 3 pubsub 33554432 8388608 60"},
		{"slave 1g 2gb 3 pubsub 1M 2mb -0", nil, "normal 4 5 6 slave 1000000000 2147483648 3 pubsub 1000000 2097152 0"},
		{"pubsub 1 2 3 normal 1 2 x", ErrValue, ""},
	} {
		before := l.String()
		err := l.Set(tc.value)
		if !errors.Is(err, tc.err) {
			t.Errorf("Set(%q): error %v, want %v", tc.value, err, tc.err)
		}
		want := tc.get
		if want == "" {
			want = before
		}
		if got := l.String(); got != want {
			t.Errorf("after Set(%q): %q, want %q", tc.value, got, want)
		}
	}
}

// TestLines checks CONFIG REWRITE's lines: units as Redis writes them, "replica" for the
// replica class, and which lines differ from the defaults.
func TestLines(t *testing.T) {
	l := Default()
	if err := l.Set("pubsub 64mb 1000 90 normal 3kb 0 0"); err != nil {
		t.Fatal(err)
	}
	got := l.Lines(Default())
	want := []Line{{"normal 3kb 0 0", true}, {"replica 256mb 64mb 60", false}, {"pubsub 64mb 1000 90", true}}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for n, s := range map[uint64]string{0: "0", 1: "1", 1024: "1kb", 1000: "1000", 3 << 20: "3mb", 1 << 30: "1gb", 1<<30 + 1024: "1048577kb"} {
		if got := FormatBytes(n); got != s {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, s)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]uint64{"": 0, "0": 0, "mb": 0, "7": 7, "7b": 7, "7B": 7, "7k": 7000, "7KB": 7168,
		"7m": 7000000, "7Mb": 7 << 20, "7g": 7000000000, "7gB": 7 << 30, "18446744073709551615": 1<<64 - 1, "17179869183gb": 17179869183 << 30} {
		got, err := ParseBytes(s)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"-1", "+1", " 1", "1 ", "1x", "1kbb", "1.5mb", "18446744073709551616", "17179869184gb", strings.Repeat("0", 128) + "1"} {
		if n, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", s, n)
		}
	}
}

// TestOver follows a client's output through Redis's rules: the hard limit at once, the soft
// limit only once it has lasted more than SoftSeconds, and the soft clock reset when the output
// drops under it.
func TestOver(t *testing.T) {
	l := Limit{Hard: 100, Soft: 50, SoftSeconds: 2}
	var since atomic.Int64
	sec := int64(1000)
	now := func() int64 { return sec }
	steps := []struct {
		at   int64
		used int64
		over bool
	}{
		{1000, 10, false},
		{1000, 60, false}, // soft reached: the clock starts
		{1001, 60, false},
		{1002, 60, false}, // 2 s: not more than SoftSeconds
		{1002, 40, false}, // under again: the clock stops
		{1003, 60, false}, // starts again
		{1005, 60, false},
		{1006, 60, true}, // 3 s > 2
		{1006, 100, true},
		{1006, 10, false},
		{1006, 100, true}, // hard: at once
	}
	for i, s := range steps {
		sec = s.at
		if got := l.Over(s.used, now, &since); got != s.over {
			t.Errorf("step %d (t=%d used=%d): over %v, want %v", i, s.at, s.used, got, s.over)
		}
	}
	if (Limit{}).Over(1<<62, now, &since) || !(Limit{}).Off() {
		t.Error("0 0 0 limits something")
	}
}
