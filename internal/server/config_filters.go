package server

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bloomd/bloom/internal/filterconf"
	"github.com/bloomd/bloom/redisbloom"
)

// The settings of filters made on the fly (internal/filterconf): Redis 8's eight, with its
// names, ranges and CONFIG SET messages, and bloomd's two size limits. All may be changed with
// CONFIG SET; a change applies to filters created afterwards, never to existing ones (but
// cf-max-expansions, which Redis 8 checks at every insertion, and the size limits, which are
// checked whenever a filter grows).
func init() {
	for _, p := range filterconf.Params {
		params = append(params, param{p.Name, true,
			func(c *Config) string { return p.Get(c.filterSettings()) },
			func(c *Config, v string) error {
				s := *c.filterSettings()
				if err := p.Set(&s, v); err != nil {
					return err
				}
				c.Filters = &s // a copy: Configs copied before share the old one
				return nil
			}})
	}
	params = append(params,
		limitParam("bf-max-filter-bytes", func(s *filterconf.Settings) *int64 { return &s.BFMaxBytes }),
		limitParam("cf-max-filter-bytes", func(s *filterconf.Settings) *int64 { return &s.CFMaxBytes }))
}

// limitParam is a size limit: a memory amount as maxmemory takes it ("64mb"), 0 for none.
func limitParam(name string, field func(s *filterconf.Settings) *int64) param {
	return param{name, true,
		func(c *Config) string { return strconv.FormatInt(*field(c.filterSettings()), 10) },
		func(c *Config, v string) error {
			n, err := parseMemory(v)
			if err != nil {
				return err
			}
			s := *c.filterSettings()
			*field(&s) = n
			c.Filters = &s
			return nil
		}}
}

// filterSettings returns c's filter settings, the defaults if it has none. The caller must
// not change them.
func (c *Config) filterSettings() *filterconf.Settings {
	if c.Filters == nil {
		d := filterconf.Default()
		return &d
	}
	return c.Filters
}

// loadModuleArgs reads the arguments of a config file's "loadmodule path args..." line when
// path is RedisBloom (its file name starts with "redisbloom" or "rebloom"): bloomd answers
// BF.* and CF.* itself, and takes RedisBloom's module arguments ERROR_RATE, INITIAL_SIZE and
// CF_MAX_EXPANSIONS, as Redis 8 does, as the settings they stand for; any other argument is
// refused. It reports false for another module, which the caller ignores with a warning.
func loadModuleArgs(value string, c *Config) (bool, error) {
	words := strings.Fields(value)
	if len(words) == 0 {
		return false, nil
	}
	base := strings.ToLower(filepath.Base(words[0]))
	if !strings.HasPrefix(base, "redisbloom") && !strings.HasPrefix(base, "rebloom") {
		return false, nil
	}
	args := words[1:]
	if len(args)%2 != 0 {
		return true, errors.New("loadmodule: RedisBloom's arguments come in pairs (ERROR_RATE 0.001)")
	}
	for i := 0; i < len(args); i += 2 {
		name, ok := filterconf.LegacyNames[strings.ToUpper(args[i])]
		if !ok {
			return true, errors.New("loadmodule: bloomd takes only RedisBloom's ERROR_RATE, INITIAL_SIZE and CF_MAX_EXPANSIONS, not " + strconv.Quote(args[i]))
		}
		if err := c.Set(name, args[i+1]); err != nil {
			return true, unwrapPrefix(err)
		}
	}
	return true, nil
}

// limitsApply reports whether the size limits and cf-max-expansions are checked now: not while
// the data files load and not on a replica, which hold what their source accepted and must
// hold all of it.
func (s *Server) limitsApply() bool {
	return !s.ks.loading.Load() && !s.dataLoading.Load() && !s.repl.IsReplica()
}

// builtinDefaults holds RedisBloom's built-in parameters, which newFilterSettings gives to
// records written before the settings existed.
var builtinDefaults = filterconf.Default()

// newFilterSettings returns the settings that fill in the parameters a command leaves open.
// Those are the settings in force, but for records of the append-only log and of a primary's
// stream: a record that leaves a parameter open was written by a bloomd without these settings
// (every record written now names them all; see bfCreateArgs and cfParams.reserveArgs), so it
// is replayed with RedisBloom's built-in values, which that bloomd used.
func (c *Conn) newFilterSettings() *filterconf.Settings {
	if c == c.srv.applier || c.srv.ks.loading.Load() || c.srv.dataLoading.Load() {
		return &builtinDefaults
	}
	return c.srv.filters.Load()
}

// bfDefaults returns the options of a Bloom filter made without explicit ones. With
// bf-expansion-factor 0 it is non-scaling and records expansion 2, as RedisBloom 2.6 records
// for a non-scaling filter made without EXPANSION.
func (c *Conn) bfDefaults() insertOpts {
	f := c.newFilterSettings()
	o := insertOpts{capacity: f.BFInitialSize, errorRate: f.BFErrorRate, expansion: f.BFExpansion}
	if o.expansion == 0 {
		o.nonScaling, o.expansion = true, redisbloom.DefaultExpansion
	}
	return o
}

// bfCreateArgs returns the command that makes the filter opts describe and adds items to it,
// with every parameter spelled out, so that replaying it (from the append-only log, on a
// replica) makes the same filter whatever that server's defaults.
func bfCreateArgs(key []byte, opts *insertOpts, items [][]byte) [][]byte {
	argv := [][]byte{[]byte("BF.INSERT"), key,
		[]byte("CAPACITY"), strconv.AppendInt(nil, opts.capacity, 10),
		[]byte("ERROR"), []byte(filterconf.FormatRate(opts.errorRate)),
		[]byte("EXPANSION"), strconv.AppendInt(nil, opts.expansion, 10)}
	if opts.nonScaling {
		argv = append(argv, []byte("NONSCALING"))
	}
	argv = append(argv, []byte("ITEMS"))
	return append(argv, items...)
}

// checkSize returns the size limit's refusal of a filter that would hold size bytes (grow:
// an existing filter growing), counted in INFO, or nil.
func (s *Server) checkSize(cuckoo bool, size int64, grow bool) error {
	if !s.limitsApply() {
		return nil
	}
	f := s.filters.Load()
	check := f.CheckBloom
	if cuckoo {
		check = f.CheckCuckoo
	}
	err := check(size, grow)
	if err != nil {
		s.filters.Refused(err)
	}
	return err
}

// appendBloomInfo appends INFO's bloom section: the settings of new filters, the size limits,
// and how many filters the limits refused.
func (s *Server) appendBloomInfo(b []byte) []byte {
	f := s.filters.Load()
	b = append(b, "# Bloom\r\n"...)
	b = field(b, "bf_error_rate", filterconf.FormatRate(f.BFErrorRate))
	b = field(b, "bf_initial_size", f.BFInitialSize)
	b = field(b, "bf_expansion_factor", f.BFExpansion)
	b = field(b, "bf_max_filter_bytes", f.BFMaxBytes)
	b = field(b, "bf_max_filter_bytes_human", humanBytes(f.BFMaxBytes))
	b = field(b, "cf_initial_size", f.CFInitialSize)
	b = field(b, "cf_bucket_size", f.CFBucketSize)
	b = field(b, "cf_max_iterations", f.CFMaxIterations)
	b = field(b, "cf_expansion_factor", f.CFExpansion)
	b = field(b, "cf_max_expansions", f.CFMaxExpansions)
	b = field(b, "cf_max_filter_bytes", f.CFMaxBytes)
	b = field(b, "cf_max_filter_bytes_human", humanBytes(f.CFMaxBytes))
	bf, cf := s.filters.RefusedCounts()
	b = field(b, "bf_max_filter_bytes_refusals", bf)
	b = field(b, "cf_max_filter_bytes_refusals", cf)
	return b
}
