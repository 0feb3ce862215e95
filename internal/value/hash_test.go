package value

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

type pair struct{ name, val string }

func fields(h interface {
	Each(func(string, []byte))
}) []pair {
	var out []pair
	h.Each(func(n string, v []byte) { out = append(out, pair{n, string(v)}) })
	return out
}

// TestHashOrderAndCharge drives a hash and a plain ordered list side by side: insertion order
// kept across updates, deletions and compactions, and the charge always the sum of the fields'.
func TestHashOrderAndCharge(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	h := NewHash()
	var model []pair
	for i := range 20000 {
		name := fmt.Sprint("f", rng.IntN(300))
		j := slices.IndexFunc(model, func(p pair) bool { return p.name == name })
		if rng.IntN(3) == 0 {
			ok, _ := h.Delete([]byte(name))
			if ok != (j >= 0) {
				t.Fatalf("step %d: delete %s: %v", i, name, ok)
			}
			if j >= 0 {
				model = slices.Delete(model, j, j+1)
			}
		} else {
			val := fmt.Sprint(i)
			created, _ := h.Set([]byte(name), []byte(val), DefaultLimits)
			if created != (j < 0) {
				t.Fatalf("step %d: set %s: created %v", i, name, created)
			}
			if j < 0 {
				model = append(model, pair{name, val})
			} else {
				model[j].val = val
			}
		}
		if i%997 == 0 || i == 19999 {
			if got := fields(h); !slices.Equal(got, model) {
				t.Fatalf("step %d: fields %v, want %v", i, got, model)
			}
			var charge int64
			for _, p := range model {
				charge += FieldCharge([]byte(p.name), []byte(p.val))
			}
			if h.Charge() != charge || h.Len() != len(model) {
				t.Fatalf("step %d: charge %d len %d, want %d %d", i, h.Charge(), h.Len(), charge, len(model))
			}
		}
	}
}

// TestHashSnapshotUnchanged: a view taken by Snapshot keeps the fields of its instant whatever
// the hash does next.
func TestHashSnapshotUnchanged(t *testing.T) {
	h := NewHash()
	for i := range 100 {
		h.Set(fmt.Append(nil, i), fmt.Append(nil, "v", i), DefaultLimits)
	}
	v := h.Snapshot()
	want := fields(v)
	enc := AppendHash(nil, v)
	for i := range 100 {
		h.Set(fmt.Append(nil, i), []byte("changed"), DefaultLimits)
		h.Delete(fmt.Append(nil, i+50))
		h.Set(fmt.Append(nil, "new", i), []byte("x"), DefaultLimits)
	}
	if got := fields(v); !slices.Equal(got, want) || !bytes.Equal(AppendHash(nil, v), enc) || v.Len() != 100 {
		t.Fatal("the snapshot's view changed with the hash")
	}
}

// TestHashClone: a clone has the hash's fields, order and charge, and each changes afterwards
// without the other seeing it.
func TestHashClone(t *testing.T) {
	h := NewHash()
	for i := range 300 {
		h.Set(fmt.Append(nil, i), fmt.Append(nil, "v", i), DefaultLimits)
	}
	for i := 0; i < 300; i += 3 {
		h.Delete(fmt.Append(nil, i))
	}
	want := fields(h)
	c := h.Clone()
	if got := fields(c); !slices.Equal(got, want) || c.Charge() != h.Charge() || c.Len() != h.Len() || c.Large() != h.Large() {
		t.Fatalf("clone: %d fields charge %d, want %d fields charge %d", c.Len(), c.Charge(), h.Len(), h.Charge())
	}
	if h.Scan(0, 10, nil, func(string, []byte) {}) != c.Scan(0, 10, nil, func(string, []byte) {}) {
		t.Error("HSCAN cursors differ between a hash and its clone")
	}
	for i := range 300 {
		h.Set(fmt.Append(nil, i), []byte("changed"), DefaultLimits)
		c.Delete(fmt.Append(nil, i+1))
		c.Set(fmt.Append(nil, "new", i), []byte("x"), DefaultLimits)
	}
	if v, _ := c.Get([]byte("2")); v != nil {
		t.Errorf("field 2 of the clone: %q, want deleted", v)
	}
	if v, _ := h.Get([]byte("2")); string(v) != "changed" {
		t.Errorf("field 2 of the hash: %q", v)
	}
	if v, _ := h.Get([]byte("new1")); v != nil {
		t.Error("the clone's new field appeared in the hash")
	}
}

// TestHashScanCursor: HSCAN of a large hash returns every field present for the whole iteration
// exactly once, while fields come and go between calls (compactions included).
func TestHashScanCursor(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	h := NewHash()
	for i := range 2000 {
		h.Set(fmt.Append(nil, "keep", i), []byte("v"), DefaultLimits)
		h.Set(fmt.Append(nil, "tmp", i), []byte("v"), DefaultLimits)
	}
	if !h.Large() {
		t.Fatal("4000 fields are not large")
	}
	seen := map[string]int{}
	cursor, calls := uint64(0), 0
	for {
		cursor = h.Scan(cursor, int64(1+rng.IntN(50)), nil, func(name string, _ []byte) { seen[name]++ })
		calls++
		for range 20 { // churn between calls
			h.Delete(fmt.Append(nil, "tmp", rng.IntN(2000)))
			h.Set(fmt.Append(nil, "late", rng.IntN(100000)), []byte("v"), DefaultLimits)
		}
		if cursor == 0 {
			break
		}
	}
	for i := range 2000 {
		if n := seen[fmt.Sprint("keep", i)]; n != 1 {
			t.Fatalf("keep%d returned %d times in %d calls", i, n, calls)
		}
	}
	for name, n := range seen {
		if n != 1 {
			t.Fatalf("%s returned %d times", name, n)
		}
	}
	// A small hash comes whole, cursor 0, as Redis answers for a listpack.
	small := NewHash()
	small.Set([]byte("a"), []byte("1"), DefaultLimits)
	small.Set([]byte("b"), []byte("2"), DefaultLimits)
	var got []string
	if c := small.Scan(12345, 1, func(n []byte) bool { return n[0] == 'b' }, func(n string, _ []byte) { got = append(got, n) }); c != 0 || !slices.Equal(got, []string{"b"}) {
		t.Fatalf("small hash: cursor %d, %v", c, got)
	}
}

func TestHashLarge(t *testing.T) {
	h := NewHash()
	lim := Limits{Entries: 3, Value: 5}
	h.Set([]byte("a"), []byte("12345"), lim)
	h.Set([]byte("b"), []byte("1"), lim)
	h.Set([]byte("c"), []byte("1"), lim)
	if h.Large() {
		t.Fatal("large within the limits")
	}
	h.Set([]byte("d"), []byte("1"), lim)
	if !h.Large() {
		t.Fatal("4 fields past 3 entries are not large")
	}
	h.Delete([]byte("d"))
	if !h.Large() {
		t.Fatal("a large hash became small again (Redis never converts back)")
	}
	h2 := NewHash()
	h2.Set([]byte("a"), []byte("123456"), lim)
	if !h2.Large() {
		t.Fatal("a value past the limit is not large")
	}
	// Decoding decides again, as Redis does when it loads a hash.
	d, err := DecodeHash(AppendHash(nil, h.Snapshot()), lim)
	if err != nil || d.Large() {
		t.Fatalf("decoded: %v large %v", err, d.Large())
	}
}

func TestRandomFields(t *testing.T) {
	h := NewHash()
	for i := range 10 {
		h.Set(fmt.Append(nil, i), nil, DefaultLimits)
	}
	for count := int64(0); count <= 12; count++ {
		seen := map[string]bool{}
		n := 0
		h.RandomFields(count, func(name string, _ []byte) { seen[name] = true; n++ })
		if want := min(count, 10); int64(n) != want || int64(len(seen)) != want {
			t.Fatalf("count %d: %d fields, %d distinct", count, n, len(seen))
		}
	}
	n := 0
	h.RandomFields(-25, func(string, []byte) { n++ })
	if n != 25 {
		t.Fatalf("count -25: %d fields", n)
	}
}

func TestParseCursor(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"+5", 5, true}, {"-1", 1<<64 - 1, true}, {"007", 7, true},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{" 5", 0, false}, {"5 ", 0, false}, {"x", 0, false}, {"-", 0, false}, {"0x10", 0, false},
	} {
		got, ok := ParseCursor([]byte(c.arg))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%q: %d %v", c.arg, got, ok)
		}
	}
}

func TestDecodeHashRefuses(t *testing.T) {
	h := NewHash()
	h.Set([]byte("a"), []byte("1"), DefaultLimits)
	h.Set([]byte("b"), []byte("2"), DefaultLimits)
	good := AppendHash(nil, h.Snapshot())
	for name, p := range map[string][]byte{
		"empty":       {},
		"cut":         good[:len(good)-1],
		"trailing":    append(bytes.Clone(good), 0),
		"duplicate":   {2, 1, 'a', 1, '1', 1, 'a', 1, '2'},
		"huge count":  {0xff, 0xff, 0xff, 0xff, 0x0f},
		"long length": {1, 0x80, 0x80, 0x80, 0x80, 0x01, 'a'},
	} {
		if _, err := DecodeHash(p, DefaultLimits); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// FuzzDecodeHash: any bytes decode or are refused, never a panic; what decodes encodes again
// to the same bytes.
func FuzzDecodeHash(f *testing.F) {
	h := NewHash()
	h.Set([]byte("size"), []byte("958505"), DefaultLimits)
	h.Set([]byte(""), nil, DefaultLimits)
	f.Add(AppendHash(nil, h.Snapshot()))
	f.Add([]byte{0})
	f.Add([]byte{2, 1, 'a', 1, '1', 1, 'a', 1, '2'})
	f.Fuzz(func(t *testing.T, p []byte) {
		d, err := DecodeHash(p, DefaultLimits)
		if err != nil {
			return
		}
		if got := AppendHash(nil, d.Snapshot()); !bytes.Equal(got, p) {
			t.Fatalf("%x decodes and encodes to %x", p, got)
		}
	})
}
