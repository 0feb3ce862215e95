package filterconf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/bloomd/bloom/internal/resp"
)

// Settings are the parameters of filters made without explicit ones, and the size limits.
// The zero Settings is not valid; start from Default.
type Settings struct {
	// Bloom filters (BF.*).
	BFErrorRate   float64 // bf-error-rate: error rate, in (0, 1); above 0.25 it is stored as 0.25
	BFInitialSize int64   // bf-initial-size: capacity of the first sub-filter, [1, 2^30]
	BFExpansion   int64   // bf-expansion-factor: growth factor, [0, 32768]; 0 makes non-scaling filters
	BFMaxBytes    int64   // bf-max-filter-bytes: most bytes one Bloom filter may hold; 0 for no limit

	// Cuckoo filters (CF.*).
	CFInitialSize   int64 // cf-initial-size: capacity, [2·cf-bucket-size, 2^30]
	CFBucketSize    int64 // cf-bucket-size: fingerprints per bucket, [1, min(255, cf-initial-size/2)]
	CFMaxIterations int64 // cf-max-iterations: kicks before growing, [1, 65535]
	CFExpansion     int64 // cf-expansion-factor: growth factor, [0, 32768]; 0 makes non-scaling filters
	CFMaxExpansions int64 // cf-max-expansions: sub-filters past which inserts fail, [1, 65536]
	CFMaxBytes      int64 // cf-max-filter-bytes: most bytes one cuckoo filter may hold; 0 for no limit
}

// Redis 8's ranges and RedisBloom's defaults (RedisBloom v8.0.0, src/config.c and src/config.h).
const (
	DefaultBFErrorRate     = 0.01
	DefaultBFInitialSize   = 100
	DefaultBFExpansion     = 2
	DefaultCFInitialSize   = 1024
	DefaultCFBucketSize    = 2
	DefaultCFMaxIterations = 20
	DefaultCFExpansion     = 1
	DefaultCFMaxExpansions = 32

	// BFErrorRateCap is the largest error rate Redis 8 keeps: a larger one in range is lowered
	// to it (BF_ERROR_RATE_CAP).
	BFErrorRateCap = 0.25

	MaxInitialSize   = 1 << 30
	MaxExpansion     = 32768
	MaxBucketSize    = 255
	MaxIterations    = 65535
	MaxMaxExpansions = 65536
)

// Default returns the settings bloomd starts with: RedisBloom's built-in values, and no size
// limits.
func Default() Settings {
	return Settings{
		BFErrorRate: DefaultBFErrorRate, BFInitialSize: DefaultBFInitialSize, BFExpansion: DefaultBFExpansion,
		CFInitialSize: DefaultCFInitialSize, CFBucketSize: DefaultCFBucketSize, CFMaxIterations: DefaultCFMaxIterations,
		CFExpansion: DefaultCFExpansion, CFMaxExpansions: DefaultCFMaxExpansions,
	}
}

// A Param is one of Redis 8's settings, as CONFIG GET and CONFIG SET name it.
type Param struct {
	Name string
	Get  func(s *Settings) string
	// Set parses value and stores it in s, or returns an error in Redis 8's words that
	// changes nothing.
	Set func(s *Settings, value string) error
}

// Params lists Redis 8's eight settings of the probabilistic types, in Redis 8's order. The
// size limits are not here: their values are memory amounts, which the server parses.
var Params = []Param{
	{"bf-error-rate", func(s *Settings) string { return formatFloat(s.BFErrorRate) }, setErrorRate},
	{"bf-initial-size", getInt(func(s *Settings) *int64 { return &s.BFInitialSize }),
		setInt("bf-initial-size", func(s *Settings) *int64 { return &s.BFInitialSize }, fixed(1), fixed(MaxInitialSize))},
	{"bf-expansion-factor", getInt(func(s *Settings) *int64 { return &s.BFExpansion }),
		setInt("bf-expansion-factor", func(s *Settings) *int64 { return &s.BFExpansion }, fixed(0), fixed(MaxExpansion))},
	{"cf-bucket-size", getInt(func(s *Settings) *int64 { return &s.CFBucketSize }),
		setInt("cf-bucket-size", func(s *Settings) *int64 { return &s.CFBucketSize }, fixed(1),
			func(s *Settings) int64 { return min(s.CFInitialSize/2, MaxBucketSize) })},
	{"cf-initial-size", getInt(func(s *Settings) *int64 { return &s.CFInitialSize }),
		setInt("cf-initial-size", func(s *Settings) *int64 { return &s.CFInitialSize },
			func(s *Settings) int64 { return 2 * s.CFBucketSize }, fixed(MaxInitialSize))},
	{"cf-max-iterations", getInt(func(s *Settings) *int64 { return &s.CFMaxIterations }),
		setInt("cf-max-iterations", func(s *Settings) *int64 { return &s.CFMaxIterations }, fixed(1), fixed(MaxIterations))},
	{"cf-expansion-factor", getInt(func(s *Settings) *int64 { return &s.CFExpansion }),
		setInt("cf-expansion-factor", func(s *Settings) *int64 { return &s.CFExpansion }, fixed(0), fixed(MaxExpansion))},
	{"cf-max-expansions", getInt(func(s *Settings) *int64 { return &s.CFMaxExpansions }),
		setInt("cf-max-expansions", func(s *Settings) *int64 { return &s.CFMaxExpansions }, fixed(1), fixed(MaxMaxExpansions))},
}

// Validate reports the first setting of s out of its range, in Redis 8's words, or a negative
// size limit. Settings made by Default and Set are valid.
func (s *Settings) Validate() error {
	for _, p := range Params {
		t := *s
		if err := p.Set(&t, p.Get(s)); err != nil {
			return err
		}
		if t != *s {
			//lint:ignore ST1005 Redis 8's wording, which clients match
			return fmt.Errorf("Value for `%s` must be in the range (0.000000, %f]", p.Name, BFErrorRateCap)
		}
	}
	if s.BFMaxBytes < 0 || s.CFMaxBytes < 0 {
		return errors.New("bf-max-filter-bytes and cf-max-filter-bytes must not be negative")
	}
	return nil
}

// LegacyNames maps RedisBloom's module arguments (loadmodule redisbloom.so ERROR_RATE 0.001),
// which Redis 8 still accepts, to the settings they set.
var LegacyNames = map[string]string{
	"ERROR_RATE":        "bf-error-rate",
	"INITIAL_SIZE":      "bf-initial-size",
	"CF_MAX_EXPANSIONS": "cf-max-expansions",
}

// Find returns the named setting (any case), or nil.
func Find(name string) *Param {
	for i := range Params {
		if strings.EqualFold(Params[i].Name, name) {
			return &Params[i]
		}
	}
	return nil
}

func fixed(v int64) func(*Settings) int64 { return func(*Settings) int64 { return v } }

func getInt(field func(s *Settings) *int64) func(s *Settings) string {
	return func(s *Settings) string { return strconv.FormatInt(*field(s), 10) }
}

// setInt parses an integer as RedisModule_StringToLongLong does and checks it against bounds
// that may depend on the other settings (cf-bucket-size and cf-initial-size bound each other,
// as in Redis 8). The messages are RedisBloom v8.0.0's (src/config.c, setIntegerValue).
func setInt(name string, field func(s *Settings) *int64, lo, hi func(s *Settings) int64) func(s *Settings, v string) error {
	return func(s *Settings, v string) error {
		n, ok := resp.ParseInt([]byte(v))
		if !ok {
			//lint:ignore ST1005 Redis 8's wording, which clients match
			return fmt.Errorf("Invalid value for `%s`", name)
		}
		if l, h := lo(s), hi(s); n < l || n > h {
			//lint:ignore ST1005 Redis 8's wording, which clients match
			return fmt.Errorf("Value for `%s` must be in the range [%d, %d]", name, l, h)
		}
		*field(s) = n
		return nil
	}
}

// setErrorRate parses bf-error-rate as RedisBloom v8.0.0 does (src/config.c, setFloatValue):
// a number strictly between 0 and 1, lowered to BFErrorRateCap when above it.
func setErrorRate(s *Settings, v string) error {
	const name = "bf-error-rate"
	f, ok := parseDouble(v)
	if !ok {
		//lint:ignore ST1005 Redis 8's wording, which clients match
		return fmt.Errorf("Invalid value for `%s`", name)
	}
	if !(f > 0 && f < 1) {
		//lint:ignore ST1005 Redis 8's wording, which clients match
		return fmt.Errorf("Value for `%s` must be in the range (%f, %f)", name, 0.0, 1.0)
	}
	s.BFErrorRate = min(f, BFErrorRateCap)
	return nil
}

// parseDouble parses a number as RedisModule_StringToDouble does: the whole string, no
// surrounding space, no NaN. Infinities parse (and are then out of every range).
func parseDouble(v string) (float64, bool) {
	if v == "" || strings.TrimSpace(v) != v || strings.ContainsRune(v, '_') {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && strings.Trim(mantissa(v), "0.") != "" {
		return 0, false // underflow, which strtod reports as ERANGE
	}
	return f, true
}

// mantissa returns the digits of a number before its exponent, without sign or hex prefix.
func mantissa(v string) string {
	v = strings.TrimLeft(v, "+-")
	if len(v) > 1 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X') {
		v, _, _ = strings.Cut(v[2:], "p")
		v, _, _ = strings.Cut(v, "P")
		return v
	}
	if i := strings.IndexAny(v, "eE"); i >= 0 {
		v = v[:i]
	}
	return v
}

// formatFloat formats an error rate so that parsing it gives the same float64.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// FormatRate formats an error rate for a command argument (a journal record), exactly.
func FormatRate(f float64) string { return formatFloat(f) }

// A SizeError is a filter refused because it would hold more bytes than its limit.
type SizeError struct {
	Setting string // bf-max-filter-bytes or cf-max-filter-bytes
	Grow    bool   // refused growth of an existing filter, not a new filter
	Size    int64  // bytes the filter would hold
	Limit   int64  // the limit
}

// Error returns the error reply: valkey-bloom's words for the same refusal ("ERR operation
// exceeds bloom object memory limit"), then the sizes.
func (e *SizeError) Error() string {
	kind, verb := "bloom", "be created with"
	if e.Setting == "cf-max-filter-bytes" {
		kind = "cuckoo"
	}
	if e.Grow {
		verb = "grow to"
	}
	return fmt.Sprintf("ERR operation exceeds %s object memory limit: the filter would %s %d bytes, %s is %d",
		kind, verb, e.Size, e.Setting, e.Limit)
}

// CheckBloom returns a *SizeError if a Bloom filter holding size bytes would pass
// bf-max-filter-bytes; grow says whether the filter exists and is growing.
func (s *Settings) CheckBloom(size int64, grow bool) error {
	return check("bf-max-filter-bytes", s.BFMaxBytes, size, grow)
}

// CheckCuckoo is CheckBloom for cuckoo filters and cf-max-filter-bytes.
func (s *Settings) CheckCuckoo(size int64, grow bool) error {
	return check("cf-max-filter-bytes", s.CFMaxBytes, size, grow)
}

func check(setting string, limit, size int64, grow bool) error {
	if limit > 0 && size > limit {
		return &SizeError{Setting: setting, Grow: grow, Size: size, Limit: limit}
	}
	return nil
}

// Live holds the settings in force, for many goroutines at once: commands read them with
// Load, CONFIG SET replaces them with Store. It also counts the refusals of the size limits.
// The zero Live holds Default.
type Live struct {
	p                    atomic.Pointer[Settings]
	bfRefused, cfRefused atomic.Int64
}

// Load returns the settings in force. The caller must not change them.
func (l *Live) Load() *Settings {
	if s := l.p.Load(); s != nil {
		return s
	}
	d := Default()
	l.p.CompareAndSwap(nil, &d)
	return l.p.Load()
}

// Store makes a copy of s the settings in force.
func (l *Live) Store(s Settings) { l.p.Store(&s) }

// Refused counts a refusal by err's limit if err is a *SizeError, and reports whether it was.
func (l *Live) Refused(err error) (*SizeError, bool) {
	se, ok := errors.AsType[*SizeError](err)
	if !ok {
		return nil, false
	}
	if se.Setting == "cf-max-filter-bytes" {
		l.cfRefused.Add(1)
	} else {
		l.bfRefused.Add(1)
	}
	return se, true
}

// RefusedCounts returns how many Bloom and cuckoo filters the size limits refused to create
// or grow.
func (l *Live) RefusedCounts() (bloom, cuckoo int64) { return l.bfRefused.Load(), l.cfRefused.Load() }
