package redisfilter

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestModuleAbsent: plain Redis has no BF.* commands; module mode says so clearly.
func TestModuleAbsent(t *testing.T) {
	c := standalone(t)
	ctx := ctxT(t)
	ok, err := HasModule(ctx, c)
	if err != nil || ok {
		t.Fatalf("HasModule on plain redis-server = %v, %v; want false", ok, err)
	}
	if _, err := NewModule(ctx, c, uniqueName(t), 1000, 0.01, nil); !errors.Is(err, ErrNoModule) {
		t.Fatalf("NewModule on plain redis-server: err = %v; want ErrNoModule", err)
	}
	for _, tc := range []struct {
		capacity uint64
		p        float64
		opt      *ModuleOptions
	}{
		{0, 0.01, nil}, {100, 0, nil}, {100, 1, nil}, {100, 0.01, &ModuleOptions{NonScaling: true, Expansion: 4}},
		{100, 0.01, &ModuleOptions{BatchKeys: -1}},
	} {
		if _, err := NewModule(ctx, c, "x", tc.capacity, tc.p, tc.opt); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewModule(%d, %g, %+v): err = %v; want ErrInvalid", tc.capacity, tc.p, tc.opt, err)
		}
	}
}

// TestModuleBloomd drives module mode against bloomd: creation, answers, one command per call,
// the parameter check, recreation with this handle's parameters, and a full non-scaling filter.
func TestModuleBloomd(t *testing.T) {
	c := bloomdClient(t)
	ctx := ctxT(t)
	if ok, err := HasModule(ctx, c); err != nil || !ok {
		t.Fatalf("HasModule on bloomd = %v, %v; want true", ok, err)
	}
	name := uniqueName(t)
	f, err := NewModule(ctx, c, name, 1000, 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := keys("in", 3000) // grows the chain twice
	hook := &counter{}
	c.AddHook(hook)
	added, err := f.AddMany(ctx, in[:2999])
	if err != nil {
		t.Fatal(err)
	}
	if s, p, piped, names := hook.get(); s != 0 || p != 1 || piped != 3 {
		t.Errorf("AddMany of 2999 keys sent %d commands and %d pipelines of %d (%v); want one pipeline of 3 BF.INSERT", s, p, piped, names)
	}
	if n := strings.Count(formatBools(added), "1"); n < 2950 {
		t.Errorf("only %d of 2999 distinct keys reported new", n)
	}
	hook.reset()
	if ok, err := f.Add(ctx, in[2999]); err != nil || !ok {
		t.Fatalf("Add(new) = %v, %v", ok, err)
	}
	if ok, err := f.Test(ctx, in[2999]); err != nil || !ok {
		t.Fatalf("Test(added) = %v, %v", ok, err)
	}
	if s, p, _, names := hook.get(); s != 2 || p != 0 {
		t.Errorf("Add and Test sent %v; want one command each", names)
	}
	got, err := f.TestMany(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(formatBools(got), "0") {
		t.Fatal("false negatives through BF.MEXISTS")
	}
	out, err := f.TestMany(ctx, keys("out", 10000))
	if err != nil {
		t.Fatal(err)
	}
	if fp := strings.Count(formatBools(out), "1"); fp > 150 {
		t.Errorf("%d false positives in 10000 absent keys at p = 1%%", fp)
	}
	if n, err := f.Count(ctx); err != nil || n < 2950 || n > 3000 {
		t.Errorf("Count = %d, %v", n, err)
	}
	if _, err := NewModule(ctx, c, name, 1000, 0.01, nil); err != nil {
		t.Fatalf("NewModule of the existing filter with the same parameters: %v", err)
	}
	if _, err := NewModule(ctx, c, name, 500, 0.01, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "capacity") {
		t.Fatalf("NewModule with another capacity: err = %v", err)
	}
	if _, err := NewModule(ctx, c, name, 1000, 0.01, &ModuleOptions{Expansion: 4}); !errors.Is(err, ErrConfigMismatch) {
		t.Fatalf("NewModule with another expansion: err = %v", err)
	}

	// Deleted, then added to again: recreated with this handle's capacity, not the default 100.
	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Add(ctx, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, "BF.INFO", name, "CAPACITY").Result(); err != nil || !strings.Contains(strings.ReplaceAll(formatAny(v), " ", ""), "1000") {
		t.Fatalf("BF.INFO CAPACITY after recreation = %v, %v; want 1000", v, err)
	}

	full, err := NewModule(ctx, c, uniqueName(t), 10, 0.01, &ModuleOptions{NonScaling: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.AddMany(ctx, keys("full", 50)); !errors.Is(err, ErrFull) {
		t.Fatalf("AddMany beyond a non-scaling capacity: err = %v; want ErrFull", err)
	}
	if _, err := NewModule(ctx, c, full.Name(), 10, 0.01, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "scaling") {
		t.Fatalf("a scaling handle on a non-scaling filter: err = %v", err)
	}
	if err := c.Set(ctx, "plain", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewModule(ctx, c, "plain", 10, 0.01, nil); !errors.Is(err, ErrWrongType) {
		t.Fatalf("NewModule over a string key: err = %v; want ErrWrongType", err)
	}
}

func formatAny(v any) string {
	switch x := v.(type) {
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, formatAny(e))
		}
		return strings.Join(parts, " ")
	case map[any]any:
		var parts []string
		for k, e := range x {
			parts = append(parts, formatAny(k)+" "+formatAny(e))
		}
		return strings.Join(parts, " ")
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	}
	return ""
}
