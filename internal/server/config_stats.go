package server

import (
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
)

// The monitoring settings, with redis.conf's names where Redis has them.
func init() {
	params = append(params,
		param{"slowlog-log-slower-than", true, func(c *Config) string { return strconv.FormatInt(c.SlowlogLogSlowerThan, 10) }, int64Param(func(c *Config) *int64 { return &c.SlowlogLogSlowerThan }, -1, math.MaxInt64/1000)},
		param{"slowlog-max-len", true, func(c *Config) string { return strconv.Itoa(c.SlowlogMaxLen) }, intParam(func(c *Config) *int { return &c.SlowlogMaxLen }, 0, math.MaxInt32)},
		param{"latency-monitor-threshold", true, func(c *Config) string { return strconv.FormatInt(c.LatencyMonitorThreshold, 10) }, int64Param(func(c *Config) *int64 { return &c.LatencyMonitorThreshold }, 0, math.MaxInt64/1000000)},
		param{"latency-tracking", false, func(*Config) string { return "yes" }, fixedParam("yes")},
		param{"latency-tracking-info-percentiles", false, func(*Config) string { return "50 99 99.9" }, fixedParam("50 99 99.9")},
		param{"metrics-port", false, func(c *Config) string { return strconv.Itoa(c.MetricsPort) }, intParam(func(c *Config) *int { return &c.MetricsPort }, 0, 65535)},
		param{"metrics-bind", false, func(c *Config) string { return c.MetricsBind }, func(c *Config, v string) error {
			if net.ParseIP(v) == nil && v != "localhost" {
				return errors.New("metrics-bind must be an IP address")
			}
			c.MetricsBind = v
			return nil
		}},
		param{"metrics-filter-pattern", true, func(c *Config) string { return c.MetricsFilterPattern }, func(c *Config, v string) error { c.MetricsFilterPattern = v; return nil }},
		param{"http-allowed-hosts", true, func(c *Config) string { return strings.Join(c.HTTPAllowedHosts, " ") }, func(c *Config, v string) error {
			c.HTTPAllowedHosts = strings.Fields(v)
			return nil
		}},
		param{"metrics-max-filters", true, func(c *Config) string { return strconv.Itoa(c.MetricsMaxFilters) }, intParam(func(c *Config) *int { return &c.MetricsMaxFilters }, 0, 1<<20)},
	)
}

func int64Param(field func(c *Config) *int64, lo, hi int64) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return errors.New("argument must be an integer between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10))
		}
		*field(c) = n
		return nil
	}
}
