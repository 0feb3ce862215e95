package redisfilter

import (
	"errors"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// TestNoFalseNegativesAndRate adds keys through AddMany, Add and AddString and checks that every
// one tests present, and that the false-positive rate over absent keys stays within an honest
// bound of the target.
func TestNoFalseNegativesAndRate(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		const n, p = 2000, 0.01
		f, err := New(ctx, c, uniqueName(t), n, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := keys("in", n)
		added, err := f.AddMany(ctx, in[:n-2])
		if err != nil {
			t.Fatal(err)
		}
		newCount := 0
		for _, a := range added {
			if a {
				newCount++
			}
		}
		// A key is reported "not new" only when all its bits were already set: a false positive
		// at the fill of the moment, far below 1% over the whole load.
		if newCount < (n-2)*98/100 {
			t.Errorf("AddMany reported %d of %d distinct keys new", newCount, n-2)
		}
		if ok, err := f.Add(ctx, in[n-2]); err != nil || !ok {
			t.Fatalf("Add(new key) = %v, %v; want true", ok, err)
		}
		if ok, err := f.AddString(ctx, string(in[n-1])); err != nil || !ok {
			t.Fatalf("AddString(new key) = %v, %v; want true", ok, err)
		}
		if ok, err := f.Add(ctx, in[0]); err != nil || ok {
			t.Fatalf("Add(existing key) = %v, %v; want false", ok, err)
		}
		got, err := f.TestMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range got {
			if !ok {
				t.Fatalf("false negative: key %q tests absent", in[i])
			}
		}
		// Guava's estimate from the set bits: within a few percent of the 2000 distinct keys.
		if est, err := f.ApproximateCount(ctx); err != nil || est < 1900 || est > 2100 {
			t.Errorf("ApproximateCount = %d, %v; want about 2000", est, err)
		}
		if ok, err := f.TestString(ctx, string(in[5])); err != nil || !ok {
			t.Fatalf("TestString(added) = %v, %v", ok, err)
		}
		out := keys("out", 20000)
		got, err = f.TestMany(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		fp := 0
		for _, ok := range got {
			if ok {
				fp++
			}
		}
		// Expected about 200 (1%); the standard deviation is about 14, so 300 is 7 sigma.
		if fp > 300 {
			t.Errorf("%d false positives in %d absent keys; want about %d", fp, len(out), int(p*float64(len(out))))
		}
		if ok, err := f.Test(ctx, []byte("never added, tested alone")); err != nil {
			t.Fatal(err)
		} else if ok {
			t.Log("a false positive on the single Test (probability 1%)")
		}
	})
}

// TestMatchesInProcessFilter proves the native layout is the core library's filter: the same keys
// give the same bits, byte for byte, for every scheme and for split filters.
func TestMatchesInProcessFilter(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		for _, tc := range []struct {
			scheme   bloom.Scheme
			partBits uint64
		}{
			{bloom.Guava64, 0}, {bloom.Guava32, 0}, {bloom.RedisBloom64, 0}, {bloom.Redisson, 0},
			{bloom.Guava64, 1024}, {bloom.Redisson, 640},
		} {
			ctx := ctxT(t)
			f, err := New(ctx, c, uniqueName(t), 1000, 0.01, &Options{Scheme: tc.scheme, PartBits: tc.partBits, ScriptKeys: 37})
			if err != nil {
				t.Fatal(err)
			}
			m, k, err := size(tc.scheme, 1000, 0.01)
			if err != nil {
				t.Fatal(err)
			}
			local, err := bloom.NewWithParams(m, k, tc.scheme)
			if err != nil {
				t.Fatal(err)
			}
			in := keys("k", 700)
			added, err := f.AddMany(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range in {
				if want := local.Add(key); added[i] != want {
					t.Fatalf("%v parts=%d: Add(%q) reported %v, in-process filter %v", tc.scheme, f.Parts(), key, added[i], want)
				}
			}
			snap, err := f.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !snap.Equal(local) {
				t.Fatalf("%v parts=%d: Redis bits differ from the in-process filter's", tc.scheme, f.Parts())
			}
			probe := keys("probe", 3000)
			got, err := f.TestMany(ctx, probe)
			if err != nil {
				t.Fatal(err)
			}
			for i, key := range probe {
				if got[i] != local.Test(key) {
					t.Fatalf("%v parts=%d: Test(%q) = %v, in-process %v", tc.scheme, f.Parts(), key, got[i], !got[i])
				}
			}
		}
	})
}

func TestNewValidates(t *testing.T) {
	ctx := ctxT(t)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: validation comes first
	defer c.Close()
	for _, tc := range []struct {
		name string
		n    uint64
		p    float64
		opt  *Options
	}{
		{"", 100, 0.01, nil},
		{"a{b}", 100, 0.01, nil},
		{"x", 100, 0, nil},
		{"x", 100, 1, nil},
		{"x", 100, 0.01, &Options{PartBits: 100}},
		{"x", 100, 0.01, &Options{PartBits: MaxPartBits * 2}},
		{"x", 100, 0.01, &Options{Scheme: 99}},
		{"x", 100, 0.01, &Options{ScriptKeys: -1}},
	} {
		if _, err := New(ctx, c, tc.name, tc.n, tc.p, tc.opt); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%q, %d, %g, %+v) err = %v; want ErrInvalid", tc.name, tc.n, tc.p, tc.opt, err)
		}
	}
	for what, op := range map[string]func() error{
		"New":          func() error { _, err := New(ctx, nil, "x", 100, 0.01, nil); return err },
		"Open":         func() error { _, err := Open(ctx, nil, "x", nil); return err },
		"NewRedisson":  func() error { _, err := NewRedisson(ctx, nil, "x", 100, 0.01, nil); return err },
		"OpenRedisson": func() error { _, err := OpenRedisson(ctx, nil, "x", nil); return err },
		"NewCounting":  func() error { _, err := NewCounting(ctx, nil, "x", 100, 0.01, nil); return err },
		"OpenCounting": func() error { _, err := OpenCounting(ctx, nil, "x", nil); return err },
		"NewScalable":  func() error { _, err := NewScalable(ctx, nil, "x", 100, 0.01, nil); return err },
		"OpenScalable": func() error { _, err := OpenScalable(ctx, nil, "x", nil); return err },
		"NewModule":    func() error { _, err := NewModule(ctx, nil, "x", 100, 0.01, nil); return err },
		"HasModule":    func() error { _, err := HasModule(ctx, nil); return err },
	} {
		if err := op(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s with a nil client: err = %v; want ErrInvalid", what, err)
		}
	}
	if _, err := NewRedisson(ctx, c, "x", 0, 0.01, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewRedisson with n=0: err = %v; want ErrInvalid", err)
	}
	if _, err := NewRedisson(ctx, c, "x", 1e9, 1e-9, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "4294967294") {
		t.Errorf("NewRedisson beyond Redisson's size limit: err = %v; want ErrInvalid naming the limit", err)
	}
}
