package outbuf

import (
	"strings"
	"testing"
)

// FuzzLimits feeds arbitrary values to Set. It must never panic; a value it accepts must
// survive both ways Redis writes the setting back: CONFIG GET's text read again by Set, and
// CONFIG REWRITE's lines read again, each giving the same limits.
func FuzzLimits(f *testing.F) {
	for _, s := range []string{
		"", "normal 0 0 0", "replica 256mb 64mb 60", "pubsub 32mb 8mb 60",
		"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
		"NORMAL 1kb 2K +4", "normal  0 0", "normal mb 5B 0", "normal 1 2 ", "slave 1g 2gb 3 pubsub 1M 2mb -0",
		"normal 1 2 2147483647", "normal 18446744073709551615 17179869183gb 0",
		"master 1 2 3", "normal 1 2", "normal -1 2 3", "normal 1 2 0x10", "pubsub 1 2 3 normal 1 2 x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		l := Default()
		before := l
		if err := l.Set(value); err != nil {
			if l != before {
				t.Fatalf("Set(%q) failed (%v) but changed the limits", value, err)
			}
			return
		}
		var got Limits
		if err := got.Set(l.String()); err != nil || got != l {
			t.Fatalf("Set(%q): CONFIG GET's %q reads back as %v, %v", value, l.String(), got, err)
		}
		var again Limits
		for _, line := range l.Lines(Default()) {
			if err := again.SetArgs(strings.Fields(line.Text)); err != nil {
				t.Fatalf("Set(%q): rewritten line %q: %v", value, line.Text, err)
			}
		}
		if again != l {
			t.Fatalf("Set(%q): rewritten lines read back as %v, want %v", value, again, l)
		}
	})
}
