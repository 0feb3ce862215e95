package acl

import (
	"bytes"
	"strings"
	"testing"
)

// TestMigrateKeys: MIGRATE's keys are found as Redis 7.0's migrateGetKeys finds them (its key
// specs are incomplete), and its permission check uses them: argument 3, or every argument after
// KEYS (looked for past AUTH's and AUTH2's arguments), and none when KEYS comes with a key.
func TestMigrateKeys(t *testing.T) {
	args := func(s string) [][]byte {
		var out [][]byte
		for _, w := range strings.Fields(s) {
			if w == `""` {
				w = ""
			}
			out = append(out, []byte(w))
		}
		return out
	}
	for _, c := range []struct {
		cmd  string
		keys string
	}{
		{`migrate h 1 a 0 10`, "a"},
		{`migrate h 1 a 0 10 copy replace`, "a"},
		{`migrate h 1 "" 0 10 keys a b`, "a b"},
		{`migrate h 1 "" 0 10 auth keys keys a`, "a"},           // the password "keys" is skipped
		{`migrate h 1 "" 0 10 auth2 keys keys keys a b`, "a b"}, // so are AUTH2's two
		{`migrate h 1 a 0 10 keys b`, ""},                       // refused by MIGRATE: no key
		{`migrate h 1 "" 0 10 keys`, ""},
		{`migrate h 1`, ""},
	} {
		a := args(c.cmd)
		first, n := MigrateKeys(a)
		var got []string
		for i := first; i < first+n; i++ {
			got = append(got, string(a[i]))
		}
		if strings.Join(got, " ") != c.keys {
			t.Errorf("%s: keys %q, want %q", c.cmd, got, c.keys)
		}
	}
	tb := NewTable([]Spec{DefaultSpec("migrate", Traits{Write: true, FirstKey: 3, LastKey: 3, Step: 1})}, func(p, s []byte) bool {
		return bytes.HasPrefix(s, bytes.TrimSuffix(p, []byte("*")))
	})
	u, err := tb.NewUser("u", []string{"+migrate", "~a*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  string
		want Result
		idx  int
	}{
		{`migrate h 1 a1 0 10`, Allowed, 0},
		{`migrate h 1 b1 0 10`, DeniedKey, 3},
		{`migrate h 1 "" 0 10 keys a1 a2`, Allowed, 0}, // "" is not a key
		{`migrate h 1 "" 0 10 keys a1 b2`, DeniedKey, 8},
	} {
		if r, i := u.Check(tb.Lookup("migrate"), args(c.cmd)); r != c.want || i != c.idx {
			t.Errorf("%s: %v at %d, want %v at %d", c.cmd, r, i, c.want, c.idx)
		}
	}
}
