package guard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bloomd/bloom/guard"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// gathered returns every series reg gathers, as "name{label=value,...}" -> value, checking that
// each carries the guard's name.
func gathered(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			key, guardLabel := mf.GetName(), ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "guard" {
					guardLabel = l.GetValue()
					continue
				}
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			if guardLabel != name {
				t.Errorf("%s: guard label %q; want %q", key, guardLabel, name)
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			default:
				t.Errorf("%s: neither a counter nor a gauge", key)
			}
		}
	}
	return got
}

// fromStats is what the collector should export for s.
func fromStats(s guard.Stats) map[string]float64 {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	want := map[string]float64{
		"bloom_guard_requests_total{answer=absent}":    float64(s.Absent),
		"bloom_guard_requests_total{answer=maybe}":     float64(s.Passed),
		"bloom_guard_requests_total{answer=unguarded}": float64(s.Unguarded),
		"bloom_guard_cache_hits_total":                 float64(s.CacheHits),
		"bloom_guard_loads_total":                      float64(s.Loads),
		"bloom_guard_maybe_not_found_total":            float64(s.MaybeNotFound),
		"bloom_guard_filter_errors_total":              float64(s.FilterErrs),
		"bloom_guard_builds_total":                     float64(s.Builds),
		"bloom_guard_ready":                            b(s.Ready),
		"bloom_guard_filter_fpp":                       s.FPP,
		"bloom_guard_maybe_not_found_ratio":            s.MaybeNotFoundRate(),
		"bloom_guard_filter_items":                     float64(s.Keys),
		"bloom_guard_last_build_duration_seconds":      s.BuildTime.Seconds(),
		"bloom_guard_last_build_keys":                  float64(s.BuildKeys),
		"bloom_guard_last_build_failed":                b(s.LastError != nil),
	}
	if s.Capacity > 0 {
		want["bloom_guard_filter_capacity"] = float64(s.Capacity)
	}
	return want
}

// checkMetrics: what reg gathers is exactly what g's Stats say.
func checkMetrics(t *testing.T, reg *prometheus.Registry, g *guard.Guard[string], name, when string) map[string]float64 {
	t.Helper()
	got := gathered(t, reg, name)
	want := fromStats(g.Stats(context.Background()))
	for k, w := range want {
		if v, ok := got[k]; !ok {
			t.Errorf("%s: %s missing", when, k)
		} else if v != w {
			t.Errorf("%s: %s = %v; Stats say %v", when, k, v, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected series %s", when, k)
		}
	}
	return got
}

// TestCollector drives a guard over SQLite through Get, Added and Rebuild and checks that a
// registry's scrape matches Stats at each step, and that the figures follow the traffic.
func TestCollector(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 1000)
	var queries countingInt
	g, err := guard.New(guard.Config[string]{
		Store: guard.Local(nil), Source: db.source(), Load: db.loader(&queries),
		Cache: &mapCache{m: map[string]string{}}, FPP: 0.01, Logger: quietLogger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	const name = "users"
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.Collector(name))
	if err := reg.Register(g.Collector(name)); err == nil {
		t.Error("a second collector with the same name registered without error")
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	ctx := context.Background()
	if _, err := g.Get(ctx, "user-1"); err != nil { // before the preload: let through
		t.Fatal(err)
	}
	got := checkMetrics(t, reg, g, name, "before the preload")
	if got["bloom_guard_ready"] != 0 || got["bloom_guard_requests_total{answer=unguarded}"] != 1 {
		t.Errorf("before the preload: ready %v, unguarded %v; want 0, 1", got["bloom_guard_ready"], got["bloom_guard_requests_total{answer=unguarded}"])
	}

	if err := g.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 50 { // loaded, then from the cache
		for range 2 {
			if _, err := g.Get(ctx, fmt.Sprintf("user-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const absent = 2000
	for i := range absent {
		if _, err := g.Get(ctx, fmt.Sprintf("absent-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("Get(absent-%d): %v", i, err)
		}
	}
	got = checkMetrics(t, reg, g, name, "after the preload")
	if got["bloom_guard_ready"] != 1 || got["bloom_guard_builds_total"] != 1 || got["bloom_guard_last_build_keys"] != 1000 {
		t.Errorf("after the preload: ready %v, builds %v, build keys %v; want 1, 1, 1000",
			got["bloom_guard_ready"], got["bloom_guard_builds_total"], got["bloom_guard_last_build_keys"])
	}
	if n := got["bloom_guard_loads_total"]; n != float64(queries.get()) {
		t.Errorf("loads_total %v; the loader ran %d times", n, queries.get())
	}
	if hits := got["bloom_guard_cache_hits_total"]; hits < 49 { // user-1 was cached before the preload
		t.Errorf("cache_hits_total %v for 50 keys asked twice", hits)
	}
	if sum := got["bloom_guard_requests_total{answer=absent}"] + got["bloom_guard_maybe_not_found_total"]; sum != absent {
		t.Errorf("absent + maybe_not_found = %v; %d absent ids were asked for", sum, absent)
	}
	if r := got["bloom_guard_maybe_not_found_ratio"]; r > 0.03 { // sized for 1%
		t.Errorf("maybe_not_found_ratio %v for a filter sized for 1%%", r)
	}

	for i := range 20 {
		id := fmt.Sprintf("new-%d", i)
		if err := g.Added(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := db.insert(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	before := checkMetrics(t, reg, g, name, "after Added")["bloom_guard_filter_items"]
	if err := g.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	got = checkMetrics(t, reg, g, name, "after the rebuild")
	// Items count adds: the build's 1020 plus the recent Added keys it replays (InsertWindow).
	if got["bloom_guard_builds_total"] != 2 || got["bloom_guard_last_build_keys"] != 1020 || got["bloom_guard_filter_items"] < 1020 {
		t.Errorf("after the rebuild: builds %v, build keys %v, items %v; want 2, 1020, at least 1020",
			got["bloom_guard_builds_total"], got["bloom_guard_last_build_keys"], got["bloom_guard_filter_items"])
	}
	if before != 1020 {
		t.Errorf("filter_items %v after 1000 preloaded and 20 added", before)
	}
	if got["bloom_guard_last_build_duration_seconds"] <= 0 || got["bloom_guard_filter_fpp"] <= 0 || got["bloom_guard_filter_fpp"] > 0.01 {
		t.Errorf("after the rebuild: build duration %v s, fpp %v", got["bloom_guard_last_build_duration_seconds"], got["bloom_guard_filter_fpp"])
	}
}
