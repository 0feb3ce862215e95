package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestInfo(t *testing.T) {
	out := run(t, "", "info", "--from", "guava", testdata("guava/longs.guava")).ok(t)
	for _, want := range []string{
		"format:      guava", "type:        classic", "scheme:      guava64",
		"bits:        28,800 (3.5 KiB)", // 450 longs
		"k:           10", "capacity:    1,996 items (m·ln2/k, the count for which k=10 is optimal",
		"count:       2,023", "(estimated from the bits set)", "fill ratio:", "fpp now:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	// --json has the same facts as numbers.
	var d description
	if err := json.Unmarshal([]byte(run(t, "", "info", "--json", "--from", "guava", testdata("guava/longs.guava")).ok(t)), &d); err != nil {
		t.Fatal(err)
	}
	if d.Format != "guava" || d.Kind != "classic" || d.Bits != 28800 || d.K != 10 || d.Bytes != 3600 ||
		d.Count < 1990 || d.Count > 2030 || !(d.FillRatio > 0.4 && d.FillRatio < 0.6) || !(d.FPP > 0 && d.FPP < 0.01) {
		t.Errorf("info --json: %+v", d)
	}
}

func TestInfoKinds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--type", "counting"}, []string{"type:        counting", "counters:", "(counted as added)"}},
		{[]string{"--type", "blocked"}, []string{"type:        blocked", "sectors of 64 bits"}},
		{[]string{"--type", "scalable", "-n", "1000"}, []string{"type:        scalable", "links:       5", "capacity:    31,000 items in the links so far", "count:       19,8"}},
		{[]string{"--type", "scalable", "-n", "1000", "--format", "redisbloom"}, []string{"format:      redisbloom", "scheme:      redisbloom64", "links:       5 (each new one 2× larger)"}},
		{[]string{"--format", "redisbloom", "-n", "30000"}, []string{"type:        classic", "links:       1 (non-scaling)", "capacity:    30,000"}},
	} {
		f := tempPath(t, "f")
		args := append([]string{"build", "-n", "20000", "-o", f}, c.args...)
		run(t, "", append(args, testdata("items/nums.txt.gz"))...).ok(t)
		out := run(t, "", "info", f).ok(t)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: info lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

// A damaged file is refused, never half-loaded.
func TestInfoRefusesCorruptFiles(t *testing.T) {
	for _, format := range []string{"native", "redisbloom"} {
		f := tempPath(t, "f")
		run(t, "", "build", "-n", "1000", "--format", format, "-o", f, testdata("items/users.txt")).ok(t)
		data := mustRead(t, f)
		for name, bad := range map[string][]byte{
			"truncated": data[:len(data)-7],
			"flipped":   flip(data, len(data)/2),
			"trailing":  append(append([]byte{}, data...), 0),
		} {
			p := tempPath(t, name)
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			r := run(t, "", "info", p)
			r.fails(t, "refused as a "+format+" file")
			if r.stdout != "" {
				t.Errorf("%s %s: printed %q", format, name, r.stdout)
			}
		}
	}
	// A Guava stream cut short, or with bytes after it.
	data := mustRead(t, testdata("guava/longs.guava"))
	p := tempPath(t, "g")
	os.WriteFile(p, data[:100], 0o644)
	run(t, "", "info", "--from", "guava", p).fails(t, "refused as a guava file", "really a Guava")
	os.WriteFile(p, append(append([]byte{}, data...), 1, 2), 0o644)
	run(t, "", "info", "--from", "guava", p).fails(t, "unexpected bytes after the filter")
	os.WriteFile(p, nil, 0o644)
	run(t, "", "info", p).fails(t, "is empty")
	run(t, "", "info", "a", "b").fails(t, "too many arguments")
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x10
	return c
}
