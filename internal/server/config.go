package server

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/bloomd/bloom/internal/acl"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/bloomd/bloom/internal/cluster"
	"github.com/bloomd/bloom/internal/filterconf"
	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/pubsub"

	"github.com/bloomd/bloom/internal/memlimit"
	"github.com/bloomd/bloom/internal/outbuf"
	"github.com/bloomd/bloom/internal/repl"
)

// Config holds bloomd's settings. Their names and value syntax are redis.conf's, and they can be
// given as flags (--port 6380), in a config file (port 6380), and (the mutable ones) changed at
// run time with CONFIG SET. The zero Config is not valid; start from DefaultConfig.
type Config struct {
	Bind        []string // addresses to listen on; default 127.0.0.1 (loopback only)
	Port        int      // TCP port; 0 disables plain TCP
	Requirepass string   // password of the default user; "" means none
	// Users are the config file's "user NAME RULES..." lines (Redis's ACL rules; see
	// internal/acl), applied at start. They cannot be combined with ACLFile.
	Users []acl.Definition `json:"-"`
	// ACLFile (aclfile), if set, is the file of users read at start and by ACL LOAD, written
	// by ACL SAVE.
	ACLFile string
	// ACLLogMaxLen (acllog-max-len) is the most entries ACL LOG keeps.
	ACLLogMaxLen    int
	ProtectedMode   bool   // without a password, serve only loopback clients (package protected)
	MaxClients      int    // most connections at once
	MaxMemory       int64  // bytes of filters and keys; 0 means the machine's memory
	Timeout         int    // seconds a client may stay idle; 0 means forever
	TCPKeepAlive    int    // tcp-keepalive: seconds idle before keepalive probes; 0 sends none
	Dir             string // working directory for data files
	TLSPort         int    // TLS port; 0 disables TLS
	TLSCertFile     string
	TLSKeyFile      string
	TLS             TLSSettings
	LogLevel        string // debug, verbose, notice, warning or nothing
	LogFile         string // "" means standard error
	ProtoMaxBulkLen int64  // longest bulk string a request may carry
	// ClientOutputBufferLimit (client-output-buffer-limit) bounds the output a client leaves
	// unread, per class of client (internal/outbuf; applied in outbuf.go and internal/repl).
	ClientOutputBufferLimit outbuf.Limits

	// NotifyKeyspaceEvents (notify-keyspace-events) are the classes of keyspace events
	// published (notify.go); none by default.
	NotifyKeyspaceEvents pubsub.Classes

	// Durability (internal/persist; see persistence.go), with redis.conf's names and meanings.
	AppendOnly            bool               // appendonly: log every write
	AppendFsync           persist.Fsync      // appendfsync: always, everysec or no
	DBFilename            string             // dbfilename: the snapshot's file name in Dir
	AppendFilename        string             // appendfilename: the logs' base name in Dir
	Save                  []persist.SaveRule // save: snapshot rules; none for no snapshots by rule
	AutoAOFRewritePercent int                // auto-aof-rewrite-percentage; 0 turns automatic rewrites off
	AutoAOFRewriteMinSize int64              // auto-aof-rewrite-min-size, bytes
	ShutdownOnSigint      string             // shutdown-on-sigint: default, or save|nosave now force
	ShutdownOnSigterm     string             // shutdown-on-sigterm (config_shutdown.go)
	Supervised            string             // supervised: no, auto, systemd or upstart (supervise.go)
	PidFile               string             // pidfile: where the pid is written; "" for none
	// Redis's RDB files (persist.IsRDBName: a dbfilename ending in .rdb makes the snapshots
	// RDB files; DUMP's payloads are RDB values): rdbcompression, rdbchecksum, and
	// rdb-skip-unknown-types, which skips the keys of types bloomd does not hold when an RDB
	// file loads instead of refusing the file.
	RDBCompression      bool
	RDBChecksum         bool
	RDBSkipUnknownTypes bool

	// Monitoring (config_stats.go): the slow log, the latency monitor and the metrics endpoint.
	SlowlogLogSlowerThan    int64  // slowlog-log-slower-than, µs; negative turns the slow log off
	BusyReplyThreshold      int64  // busy-reply-threshold (lua-time-limit), ms; 0 for never
	SlowlogMaxLen           int    // slowlog-max-len
	LatencyMonitorThreshold int64  // latency-monitor-threshold, ms; 0 turns the monitor off
	MetricsPort             int    // metrics-port: HTTP port of /metrics and the page; 0 is off
	MetricsBind             string // metrics-bind: the address it listens on
	MetricsFilterPattern    string // metrics-filter-pattern: glob of filters with their own series
	MetricsMaxFilters       int    // metrics-max-filters: the most filters with their own series
	// HTTPAllowedHosts (http-allowed-hosts) are the Host names the metrics and debug ports
	// answer besides loopback ones and their own address; "*" allows any (internal/httpguard).
	HTTPAllowedHosts []string
	// Replication (internal/repl; see replication.go), with redis.conf's names.
	ReplicaOf   string      // replicaof: "host port" of the primary; "" for a primary
	Replication repl.Config // masterauth, replica-read-only, repl-backlog-size, ...
	// ReplDisklessLoad (repl-diskless-load) is how a replica loads a full sync: "on-empty-db"
	// (the default) straight from the link when it holds no key, otherwise, like "disabled"
	// (Redis's default), into a file first (see replHost.Load).
	ReplDisklessLoad string
	// Cluster holds the cluster-* settings (internal/cluster; see cluster.go).
	Cluster cluster.Config

	// Filters, if not nil, are the parameters of filters made without explicit ones and the
	// per-filter size limits (bf-error-rate, ..., cf-max-filter-bytes; see config_filters.go).
	// nil means filterconf.Default().
	Filters *filterconf.Settings

	// Journal, if not nil, records every write command (see Journal).
	Journal Journal `json:"-"`
	// MemoryProbe, if not nil, is where the memory limits are read instead of this process's
	// own files (tests point it at a fake tree).
	MemoryProbe *memlimit.Probe `json:"-"`
	// Logger, if not nil, is used instead of one made from LogLevel and LogFile.
	Logger *slog.Logger `json:"-"`
	// EventLoops (io-threads) is the number of event loops that serve plain TCP connections
	// on Linux: 0 means one per core but one (GOMAXPROCS-1, at least 1), -1 means none (a
	// goroutine per connection, as TLS connections and other systems always have).
	EventLoops int

	// DebugPort (debug-port), if not 0, is a port on 127.0.0.1 where bloomd serves Go's
	// profiles (net/http/pprof; see internal/debugport).
	DebugPort int

	// ignored holds the redis.conf settings that mean nothing to bloomd and were accepted
	// (see redisOnly); Run logs them, one line per reason.
	ignored []ignoredSetting
}

// An ignoredSetting is a setting of Redis that bloomd accepted without acting on it.
type ignoredSetting struct {
	where string // "FILE line N" or "command line"
	name  string
	why   string
}

// DefaultConfig returns the settings bloomd starts with.
func DefaultConfig() Config {
	pd := persist.DefaultConfig(".")
	return Config{
		Bind:            []string{"127.0.0.1"},
		Port:            6379,
		ProtectedMode:   true,
		MaxClients:      10000,
		Dir:             ".",
		LogLevel:        "notice",
		ProtoMaxBulkLen: 512 << 20,
		TCPKeepAlive:    300,

		ClientOutputBufferLimit: outbuf.Default(),

		AppendOnly:            pd.AppendOnly,
		AppendFsync:           pd.AppendFsync,
		DBFilename:            pd.DBFilename,
		AppendFilename:        pd.AppendFilename,
		Save:                  pd.Save,
		AutoAOFRewritePercent: pd.AutoRewritePercentage,
		AutoAOFRewriteMinSize: pd.AutoRewriteMinSize,
		RDBCompression:        true,
		RDBChecksum:           true,

		SlowlogLogSlowerThan: 10000,
		BusyReplyThreshold:   5000,
		SlowlogMaxLen:        128,
		ACLLogMaxLen:         128,
		MetricsBind:          "127.0.0.1",
		MetricsMaxFilters:    1000,
		Replication:          repl.DefaultConfig(),
		ReplDisklessLoad:     "on-empty-db",
		Cluster:              cluster.DefaultConfig(),
	}
}

// A param is one setting as CONFIG GET/SET and config files name it.
type param struct {
	name    string
	mutable bool // may be changed by CONFIG SET
	get     func(c *Config) string
	set     func(c *Config, v string) error
}

var params = []param{
	{"bind", false, func(c *Config) string { return strings.Join(c.Bind, " ") }, func(c *Config, v string) error {
		f := strings.Fields(v)
		if len(f) == 0 {
			return errors.New("bind needs at least one address")
		}
		for _, a := range f {
			if h := strings.TrimPrefix(a, "-"); net.ParseIP(h) == nil && h != "*" && h != "::*" && h != "localhost" {
				return fmt.Errorf("bind address %q is not an IP address", a)
			}
		}
		c.Bind = f
		return nil
	}},
	{"port", false, func(c *Config) string { return strconv.Itoa(c.Port) }, intParam(func(c *Config) *int { return &c.Port }, 0, 65535)},
	{"requirepass", true, func(c *Config) string { return c.Requirepass }, func(c *Config, v string) error { c.Requirepass = v; return nil }},
	{"aclfile", false, func(c *Config) string { return c.ACLFile }, func(c *Config, v string) error { c.ACLFile = v; return nil }},
	{"acllog-max-len", true, func(c *Config) string { return strconv.Itoa(c.ACLLogMaxLen) }, intParam(func(c *Config) *int { return &c.ACLLogMaxLen }, 0, math.MaxInt32)},
	{"protected-mode", true, func(c *Config) string { return yesNo(c.ProtectedMode) }, yesNoParam(func(c *Config) *bool { return &c.ProtectedMode })},
	{"maxclients", true, func(c *Config) string { return strconv.Itoa(c.MaxClients) }, intParam(func(c *Config) *int { return &c.MaxClients }, 1, math.MaxInt32)},
	{"maxmemory", true, func(c *Config) string { return strconv.FormatInt(c.MaxMemory, 10) }, func(c *Config, v string) error {
		n, err := parseMemory(v)
		if err != nil {
			return err
		}
		c.MaxMemory = n
		return nil
	}},
	{"timeout", true, func(c *Config) string { return strconv.Itoa(c.Timeout) }, intParam(func(c *Config) *int { return &c.Timeout }, 0, math.MaxInt32)},
	{"dir", false, func(c *Config) string { return c.Dir }, func(c *Config, v string) error {
		// A directory that does not exist yet is created at start (see Server.openStore).
		if fi, err := os.Stat(v); err == nil && !fi.IsDir() {
			return fmt.Errorf("%q is a file, not a directory", v)
		}
		if v == "" {
			return errors.New("needs a directory")
		}
		c.Dir = v
		return nil
	}},
	{"tls-port", false, func(c *Config) string { return strconv.Itoa(c.TLSPort) }, intParam(func(c *Config) *int { return &c.TLSPort }, 0, 65535)},
	{"tls-cert-file", false, func(c *Config) string { return c.TLSCertFile }, func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
	{"tls-key-file", false, func(c *Config) string { return c.TLSKeyFile }, func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	{"loglevel", true, func(c *Config) string { return c.LogLevel }, func(c *Config, v string) error {
		v = strings.ToLower(v)
		if _, ok := logLevels[v]; !ok {
			return fmt.Errorf("loglevel must be one of debug, verbose, notice, warning, nothing")
		}
		c.LogLevel = v
		return nil
	}},
	{"logfile", false, func(c *Config) string { return c.LogFile }, func(c *Config, v string) error { c.LogFile = v; return nil }},
	{"proto-max-bulk-len", true, func(c *Config) string { return strconv.FormatInt(c.ProtoMaxBulkLen, 10) }, func(c *Config, v string) error {
		n, err := parseMemory(v)
		if err != nil || n < 1<<20 || n > 1<<31-1 {
			return errors.New("proto-max-bulk-len must be between 1mb and 2gb")
		}
		c.ProtoMaxBulkLen = n
		return nil
	}},
	{"notify-keyspace-events", true, func(c *Config) string { return c.NotifyKeyspaceEvents.String() }, func(c *Config, v string) error {
		cl, ok := pubsub.ParseClasses(v)
		if !ok {
			//lint:ignore ST1005 Redis 7.0's wording, which CONFIG SET's error repeats
			return errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
		}
		c.NotifyKeyspaceEvents = cl
		return nil
	}},
	{"debug-port", false, func(c *Config) string { return strconv.Itoa(c.DebugPort) }, intParam(func(c *Config) *int { return &c.DebugPort }, 0, 65535)},
	{"io-threads", false, func(c *Config) string { return strconv.Itoa(c.EventLoops) }, intParam(func(c *Config) *int { return &c.EventLoops }, -1, 128)},
	// Durability. appendonly and the file names are fixed once the files are open; the
	// others apply to the store at once (see Server.applyPersist).
	{"appendonly", false, func(c *Config) string { return yesNo(c.AppendOnly) }, yesNoParam(func(c *Config) *bool { return &c.AppendOnly })},
	{"appendfsync", true, func(c *Config) string { return c.AppendFsync.String() }, func(c *Config, v string) error {
		f, err := persist.ParseFsync(strings.ToLower(v))
		if err != nil {
			return errors.New("argument must be one of always, everysec, no")
		}
		c.AppendFsync = f
		return nil
	}},
	{"dbfilename", false, func(c *Config) string { return c.DBFilename }, fileNameParam(func(c *Config) *string { return &c.DBFilename })},
	{"appendfilename", false, func(c *Config) string { return c.AppendFilename }, fileNameParam(func(c *Config) *string { return &c.AppendFilename })},
	{"save", true, func(c *Config) string { return persist.FormatSave(c.Save) }, func(c *Config, v string) error {
		rules, err := persist.ParseSave(v)
		if err != nil {
			return errors.New("save takes pairs of seconds and changes, e.g. \"3600 1 300 100\", or \"\" for none")
		}
		c.Save = rules
		return nil
	}},
	{"auto-aof-rewrite-percentage", true, func(c *Config) string { return strconv.Itoa(c.AutoAOFRewritePercent) }, intParam(func(c *Config) *int { return &c.AutoAOFRewritePercent }, 0, math.MaxInt32)},
	{"auto-aof-rewrite-min-size", true, func(c *Config) string { return strconv.FormatInt(c.AutoAOFRewriteMinSize, 10) }, func(c *Config, v string) error {
		n, err := parseMemory(v)
		if err != nil {
			return err
		}
		c.AutoAOFRewriteMinSize = n
		return nil
	}},
	{"rdbcompression", true, func(c *Config) string { return yesNo(c.RDBCompression) }, yesNoParam(func(c *Config) *bool { return &c.RDBCompression })},
	{"rdbchecksum", true, func(c *Config) string { return yesNo(c.RDBChecksum) }, yesNoParam(func(c *Config) *bool { return &c.RDBChecksum })},
	{"rdb-skip-unknown-types", true, func(c *Config) string { return yesNo(c.RDBSkipUnknownTypes) }, yesNoParam(func(c *Config) *bool { return &c.RDBSkipUnknownTypes })},
	// Fixed values that tools read.
	{"databases", false, func(*Config) string { return "1" }, fixedParam("1")},
	{"maxmemory-policy", false, func(*Config) string { return "noeviction" }, fixedParam("noeviction")},
}

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "verbose": slog.LevelDebug, "notice": slog.LevelInfo,
	"warning": slog.LevelWarn, "nothing": slog.LevelError + 100,
}

func intParam(field func(c *Config) *int, lo, hi int) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("argument must be an integer between %d and %d", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func yesNoParam(field func(c *Config) *bool) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "yes":
			*field(c) = true
		case "no":
			*field(c) = false
		default:
			return errors.New("argument must be 'yes' or 'no'")
		}
		return nil
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fileNameParam sets a file name that lives in dir: a plain name, no directory.
func fileNameParam(field func(c *Config) *string) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\") {
			return errors.New("must be a plain file name (the directory is set by dir)")
		}
		*field(c) = v
		return nil
	}
}

func fixedParam(want string) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		if v != want {
			return fmt.Errorf("bloomd supports only %q here", want)
		}
		return nil
	}
}

func findParam(name string) *param {
	name = canonical(name)
	for i := range params {
		if params[i].name == name {
			return &params[i]
		}
	}
	return nil
}

// Set sets the named setting from its redis.conf form ("100mb", "127.0.0.1 ::1").
func (c *Config) Set(name, value string) error {
	p := findParam(name)
	if p == nil {
		return fmt.Errorf("server: unknown setting %q", name)
	}
	if err := p.set(c, value); err != nil {
		return fmt.Errorf("server: %s: %w", p.name, err)
	}
	return nil
}

// Get returns the named setting in its redis.conf form.
func (c *Config) Get(name string) (string, bool) {
	p := findParam(name)
	if p == nil {
		return "", false
	}
	return p.get(c), true
}

// Validate reports settings that cannot work together.
func (c *Config) Validate() error {
	switch {
	case c.Port == 0 && c.TLSPort == 0:
		return errors.New("server: nothing to listen on: port and tls-port are both 0")
	case c.TLSPort != 0 && (c.TLSCertFile == "" || c.TLSKeyFile == ""):
		return errors.New("server: tls-port needs tls-cert-file and tls-key-file")
	case len(c.Bind) == 0:
		return errors.New("server: bind needs at least one address")
	case c.MaxClients < 1:
		return errors.New("server: maxclients must be at least 1")
	case c.MaxMemory < 0 || c.Timeout < 0:
		return errors.New("server: maxmemory and timeout must not be negative")
	case c.ProtoMaxBulkLen < 1<<20:
		return errors.New("server: proto-max-bulk-len must be at least 1mb")
	case len(c.Users) > 0 && c.ACLFile != "":
		//lint:ignore ST1005 Redis 7.0's wording, which clients match
		return errors.New("server: Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
	}
	if _, ok := logLevels[c.LogLevel]; !ok {
		return fmt.Errorf("server: unknown loglevel %q", c.LogLevel)
	}
	if c.Filters != nil {
		if err := c.Filters.Validate(); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return c.validateCluster()
}

// parseMemory parses a redis.conf memory amount: digits with an optional unit, k/m/g for powers
// of 1000 and kb/mb/gb for powers of 1024, any case.
func parseMemory(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mul {
		return 0, errors.New("argument must be a memory value")
	}
	return n * mul, nil
}

// ParseConfig reads settings in redis.conf syntax from r into c: one setting per line, its name
// then its values separated by blanks, values optionally "double" or 'single' quoted; '#' starts
// a comment line; "include path" reads another file in place. Settings of Redis that mean
// nothing to bloomd are accepted, each with a warning in the start-up log; an unknown name is an
// error. name is the file name errors report.
func ParseConfig(r io.Reader, name string, c *Config) error {
	return parseConfig(r, name, c, 0)
}

func parseConfig(r io.Reader, name string, c *Config, depth int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	sawSave := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		words, ok := splitConfigLine(line)
		if !ok {
			return fmt.Errorf("server: %s line %d: unbalanced quotes", name, n)
		}
		if len(words) < 2 && (len(words) == 0 || findParam(words[0]) == nil) {
			return fmt.Errorf("server: %s line %d: %q is not a setting and a value", name, n, line)
		}
		value := strings.Join(words[1:], " ")
		key := strings.ToLower(words[0])
		if oneArgument[key] && len(words) != 2 {
			return fmt.Errorf("server: %s line %d: %s: wrong number of arguments (one value; \"\" for none)", name, n, key)
		}
		if key == "include" {
			if err := includeConfig(value, c, depth); err != nil {
				return fmt.Errorf("server: %s line %d: %w", name, n, unwrapPrefix(err))
			}
			continue
		}
		if key == "loadmodule" { // RedisBloom's arguments set bloomd's filter settings
			if ok, err := loadModuleArgs(value, c); ok {
				if err != nil {
					return fmt.Errorf("server: %s line %d: %w", name, n, err)
				}
				continue
			}
		}
		if why, ok := isRefused(key); ok {
			return fmt.Errorf("server: %s line %d: %s: %s", name, n, key, why)
		}
		if why, ok := isRedisOnly(key); ok && !validSetting(key, value) {
			c.ignore(fmt.Sprintf("%s line %d", name, n), key, why)
			continue
		}
		if key == "user" {
			// A user line keeps its words as they are: rules, not one value.
			c.Users = append(c.Users, acl.Definition{Name: words[1], Rules: words[2:]})
			continue
		}
		if key == "save" {
			// As in redis.conf, save lines add up: "save 3600 1" then "save 300 100". The first
			// replaces the default; an empty one clears the rules.
			if sawSave && value != "" && len(c.Save) > 0 {
				value = persist.FormatSave(c.Save) + " " + value
			}
			sawSave = true
		}
		if err := c.Set(words[0], value); err != nil {
			return fmt.Errorf("server: %s line %d: %w", name, n, unwrapPrefix(err))
		}
	}
	return sc.Err()
}

// ignore records a Redis-only setting that was accepted, once per name (redis.conf may repeat
// a setting, as client-output-buffer-limit for each class of client).
func (c *Config) ignore(where, name, why string) {
	for _, w := range c.ignored {
		if w.name == name {
			return
		}
	}
	c.ignored = append(c.ignored, ignoredSetting{where: where, name: name, why: why})
}

// ignoredByReason groups the ignored settings by reason, in the order the reasons first
// appear: each element is a reason and the names it covers.
func (c *Config) ignoredByReason() [][2]string {
	var out [][2]string
	at := map[string]int{}
	for _, w := range c.ignored {
		i, ok := at[w.why]
		if !ok {
			i = len(out)
			at[w.why] = i
			out = append(out, [2]string{w.why, ""})
		}
		out[i][1] = strings.TrimPrefix(out[i][1]+" "+w.name, " ")
	}
	return out
}

// validSetting reports whether name is a setting of bloomd and value a value it takes.
func validSetting(name, value string) bool {
	p := findParam(name)
	if p == nil {
		return false
	}
	c := DefaultConfig()
	return p.set(&c, value) == nil
}

// includeConfig reads the config file path into c, as redis.conf's include does.
func includeConfig(path string, c *Config, depth int) error {
	if depth >= 10 {
		return errors.New("include: more than 10 levels deep (does a file include itself?)")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("include: %w", err)
	}
	defer f.Close()
	return parseConfig(f, path, c, depth+1)
}

// unwrapPrefix drops a leading "server: " from an error's text, for nesting in another.
func unwrapPrefix(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "server: "))
}

// splitConfigLine splits a config line as Redis does, with the inline-command quoting rules.
func splitConfigLine(line string) ([]string, bool) {
	var words []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			return words, true
		}
		var w strings.Builder
		switch q := line[0]; q {
		case '"', '\'':
			i := 1
			for ; i < len(line) && line[i] != q; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
					switch c := line[i]; {
					case q == '\'' && c != '\'':
						w.WriteByte('\\')
						w.WriteByte(c)
					case c == 'n':
						w.WriteByte('\n')
					case c == 't':
						w.WriteByte('\t')
					default:
						w.WriteByte(c)
					}
					continue
				}
				w.WriteByte(line[i])
			}
			if i == len(line) || i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
				return nil, false
			}
			line = line[i+1:]
		default:
			i := strings.IndexAny(line, " \t")
			if i < 0 {
				i = len(line)
			}
			w.WriteString(line[:i])
			line = line[i:]
		}
		words = append(words, w.String())
	}
}

// ParseArgs reads bloomd's command line, in redis-server's form: an optional config file, then
// settings as --name value (or --name=value); a setting with several values (--bind a b) takes
// every argument up to the next "--". Command-line settings override the file's.
// It returns the config file's name ("" if none).
func ParseArgs(args []string) (Config, string, error) {
	c := DefaultConfig()
	file := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
		f, err := os.Open(file)
		if err != nil {
			return c, file, fmt.Errorf("server: %w", err)
		}
		err = ParseConfig(f, file, &c)
		f.Close()
		if err != nil {
			return c, file, err
		}
	}
	for len(args) > 0 {
		a := args[0]
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			return c, file, fmt.Errorf("server: unexpected argument %q (settings are given as --name value)", a)
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		args = args[1:]
		if !hasValue {
			var vals []string
			for len(args) > 0 && !strings.HasPrefix(args[0], "--") {
				vals, args = append(vals, args[0]), args[1:]
			}
			if len(vals) == 0 {
				return c, file, fmt.Errorf("server: --%s needs a value", name)
			}
			if oneArgument[strings.ToLower(name)] && len(vals) != 1 {
				return c, file, fmt.Errorf("server: --%s: wrong number of arguments (one value; \"\" for none)", name)
			}
			value = strings.Join(vals, " ")
		}
		if strings.EqualFold(name, "loadmodule") { // RedisBloom's arguments, as in a config file
			if ok, err := loadModuleArgs(value, &c); ok {
				if err != nil {
					return c, file, fmt.Errorf("server: --loadmodule: %w", err)
				}
				continue
			}
		}
		if strings.EqualFold(name, "user") {
			// --user "NAME RULES..." (one argument) or --user NAME RULES..., as redis-server takes it.
			words := strings.Fields(value)
			if len(words) == 0 {
				return c, file, errors.New("server: --user needs a user name")
			}
			c.Users = append(c.Users, acl.Definition{Name: words[0], Rules: words[1:]})
			continue
		}
		if why, ok := isRefused(name); ok {
			return c, file, fmt.Errorf("server: --%s: %s", name, why)
		}
		if why, ok := isRedisOnly(name); ok && !validSetting(name, value) {
			c.ignore("command line", strings.ToLower(name), why)
			continue
		}
		if findParam(name) == nil {
			return c, file, fmt.Errorf("server: unknown setting --%s%s (bloomd --help lists every setting)", name, suggest(name))
		}
		if err := c.Set(name, value); err != nil {
			return c, file, err
		}
	}
	return c, file, c.Validate()
}

// suggest returns ", did you mean --x?" for the setting closest to a mistyped name, or "".
func suggest(name string) string {
	best, bestD := "", 3 // at most two edits away
	for _, p := range params {
		if d := editDistance(strings.ToLower(name), p.name); d < bestD {
			best, bestD = p.name, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean --" + best + "?"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
