package guard

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collectTimeout bounds the one call a scrape may make to the filter's store (the FPP of a
// filter kept in Redis); past it the FPP is estimated from the keys added instead.
const collectTimeout = 2 * time.Second

// Collector returns a Prometheus collector of the guard's Stats, each series labelled
// guard=name. Every value is read from Stats when scraped: the collector adds nothing to the
// path of a Get or an Added. Registering two collectors with the same name in one registry
// fails (duplicate series).
//
// Counters: bloom_guard_requests_total by the filter's answer ("absent": answered ErrNotFound
// by the filter alone; "maybe": let through; "unguarded": no filter in service yet, or it
// failed), bloom_guard_cache_hits_total, bloom_guard_loads_total,
// bloom_guard_maybe_not_found_total (let through, and the loader said not found),
// bloom_guard_filter_errors_total and bloom_guard_builds_total. Gauges: bloom_guard_ready (0 or
// 1), bloom_guard_filter_fpp (Stats.FPP), bloom_guard_maybe_not_found_ratio
// (Stats.MaybeNotFoundRate), bloom_guard_filter_items (Stats.Keys),
// bloom_guard_filter_capacity (Stats.Capacity, only when known: not for an attached filter),
// bloom_guard_last_build_duration_seconds, bloom_guard_last_build_keys and
// bloom_guard_last_build_failed (1 if the last build returned an error).
//
// A scrape of a guard whose filter lives in Redis costs one round trip, bounded to two seconds.
// The collector is safe for concurrent use.
func (g *Guard[V]) Collector(name string) prometheus.Collector {
	return newCollector(name, g.Stats)
}

// collector is the non-generic part of Guard.Collector.
type collector struct {
	stats func(context.Context) Stats
	descs []*prometheus.Desc

	requests, cacheHits, loads, maybeNotFound, filterErrs, builds *prometheus.Desc
	ready, fpp, maybeRatio, items, capacity                       *prometheus.Desc
	buildDuration, buildKeys, buildFailed                         *prometheus.Desc
}

func newCollector(name string, stats func(context.Context) Stats) *collector {
	c := &collector{stats: stats}
	labels := prometheus.Labels{"guard": name}
	d := func(metric, help string, variable ...string) *prometheus.Desc {
		desc := prometheus.NewDesc("bloom_guard_"+metric, help, variable, labels)
		c.descs = append(c.descs, desc)
		return desc
	}
	c.requests = d("requests_total", "Get calls, by the filter's answer: absent (answered not found by the filter alone), maybe (let through), unguarded (no filter in service, or it failed).", "answer")
	c.cacheHits = d("cache_hits_total", "Gets answered by the cache.")
	c.loads = d("loads_total", "Calls of the loader (concurrent Gets of one key share one).")
	c.maybeNotFound = d("maybe_not_found_total", "Gets the filter let through that the loader answered not found: the false positives the database paid for.")
	c.filterErrs = d("filter_errors_total", "Failed filter calls (Test in Get, Add in Added).")
	c.builds = d("builds_total", "Completed filter builds (preload and rebuilds).")
	c.ready = d("ready", "1 if a filter is in service, 0 while every request is let through.")
	c.fpp = d("filter_fpp", "Estimated false-positive probability of the filter in service now.")
	c.maybeRatio = d("maybe_not_found_ratio", "Share of the absent keys asked for that the filter let through to the loader: the false-positive rate observed on the traffic.")
	c.items = d("filter_items", "Keys added to the filter in service by this guard: its build's and Added's since.")
	c.capacity = d("filter_capacity", "Keys the filter in service was sized for.")
	c.buildDuration = d("last_build_duration_seconds", "How long the last completed build took.")
	c.buildKeys = d("last_build_keys", "Keys the last completed build read from the source.")
	c.buildFailed = d("last_build_failed", "1 if the last build returned an error, else 0.")
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	s := c.stats(ctx)
	counter := func(d *prometheus.Desc, v uint64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(c.requests, s.Absent, "absent")
	counter(c.requests, s.Passed, "maybe")
	counter(c.requests, s.Unguarded, "unguarded")
	counter(c.cacheHits, s.CacheHits)
	counter(c.loads, s.Loads)
	counter(c.maybeNotFound, s.MaybeNotFound)
	counter(c.filterErrs, s.FilterErrs)
	counter(c.builds, s.Builds)
	gauge(c.ready, bool01(s.Ready))
	gauge(c.fpp, s.FPP)
	gauge(c.maybeRatio, s.MaybeNotFoundRate())
	gauge(c.items, float64(s.Keys))
	if s.Capacity > 0 {
		gauge(c.capacity, float64(s.Capacity))
	}
	gauge(c.buildDuration, s.BuildTime.Seconds())
	gauge(c.buildKeys, float64(s.BuildKeys))
	gauge(c.buildFailed, bool01(s.LastError != nil))
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
