package server

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/skipped"
)

// ignoredNames returns the names of cfg's ignored settings.
func ignoredNames(cfg Config) []string {
	var names []string
	for _, w := range cfg.ignored {
		names = append(names, w.name)
	}
	return names
}

// TestRedisConfSample loads a small redis.conf: the settings bloomd implements take effect
// (include included), the Redis-only ones are accepted with one warning each.
func TestRedisConfSample(t *testing.T) {
	cfg, _, err := ParseArgs([]string{"testdata/redisconf/redis.conf"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 6390 || strings.Join(cfg.Bind, " ") != "127.0.0.1 -::1" || !cfg.ProtectedMode || !cfg.AppendOnly ||
		cfg.AppendFsync.String() != "always" || cfg.DBFilename != "dump.rdb" || cfg.MaxClients != 500 || !cfg.RDBCompression {
		t.Fatalf("settings: %+v", cfg)
	}
	if got, _ := cfg.Get("save"); got != "3600 1 300 100" {
		t.Fatalf("save %q", got)
	}
	// daemonize no and maxmemory-policy noeviction are bloomd's own values; tcp-keepalive and
	// pidfile are settings of bloomd.
	want := []string{"tcp-backlog", "databases", "hash-max-listpack-entries", "lazyfree-lazy-eviction"}
	if got := ignoredNames(cfg); !slices.Equal(got, want) {
		t.Fatalf("ignored settings %q, want %q", got, want)
	}
	if cfg.ignored[0].where != "testdata/redisconf/redis.conf line 6" {
		t.Fatalf("ignored %+v does not name the file and the line", cfg.ignored[0])
	}
	if cfg.TCPKeepAlive != 300 || cfg.PidFile != "/run/redis/redis-server.pid" {
		t.Fatalf("tcp-keepalive %d, pidfile %q", cfg.TCPKeepAlive, cfg.PidFile)
	}
}

// TestRedisConfErrors: an unknown name is still an error naming the line; a Redis-only setting
// given as a flag is ignored with a warning too; a mistyped flag gets a suggestion.
func TestRedisConfErrors(t *testing.T) {
	conf := t.TempDir() + "/redis.conf"
	os.WriteFile(conf, []byte("port 7001\ndaemonize yes\nnosuch-setting 1\n"), 0o644)
	if _, _, err := ParseArgs([]string{conf}); err == nil || !strings.Contains(err.Error(), `line 3: unknown setting "nosuch-setting"`) {
		t.Fatalf("unknown setting: %v", err)
	}
	os.WriteFile(conf, []byte("include "+conf+"\n"), 0o644)
	if _, _, err := ParseArgs([]string{conf}); err == nil || !strings.Contains(err.Error(), "include") {
		t.Fatalf("a file that includes itself: %v", err)
	}
	cfg, _, err := ParseArgs([]string{"--daemonize", "yes", "--port", "7002"})
	if err != nil || cfg.Port != 7002 || !slices.Equal(ignoredNames(cfg), []string{"daemonize"}) {
		t.Fatalf("--daemonize yes: %v %v", err, cfg.ignored)
	}
	if cfg, _, err := ParseArgs([]string{"--daemonize", "no"}); err != nil || len(cfg.ignored) != 0 {
		t.Fatalf("--daemonize no (what bloomd does): %v %v", err, cfg.ignored)
	}
	if c, _, err := ParseArgs([]string{"--user", "alice on >pw ~* +@all", "--user", "bob", "on", "nopass"}); err != nil || len(c.Users) != 2 ||
		c.Users[0].Name != "alice" || strings.Join(c.Users[0].Rules, " ") != "on >pw ~* +@all" || strings.Join(c.Users[1].Rules, " ") != "on nopass" {
		t.Errorf("--user: %+v %v", c.Users, err)
	}
	if _, _, err := ParseArgs([]string{"--prot", "1"}); err == nil || err.Error() != "server: unknown setting --prot; did you mean --port? (bloomd --help lists every setting)" {
		t.Fatalf("--prot: %v", err)
	}
}

// TestDebianRedisConf loads the redis.conf that Debian's redis-server package installs, as it is.
func TestDebianRedisConf(t *testing.T) {
	const path = "/etc/redis/redis.conf"
	if _, err := os.Stat(path); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s is missing, and %s=1 requires it (apt-get install redis-server)", path, requireEnv)
		}
		skipped.Missing(t, path, path+" is missing (apt-get install redis-server); skipping")
	}
	cfg, _, err := ParseArgs([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 6379 || cfg.Dir != "/var/lib/redis" || !cfg.ProtectedMode || cfg.AppendOnly {
		t.Fatalf("settings from %s: port %d dir %s protected-mode %v appendonly %v", path, cfg.Port, cfg.Dir, cfg.ProtectedMode, cfg.AppendOnly)
	}
	names := ignoredNames(cfg)
	for _, want := range []string{"daemonize", "databases"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s ignored without a warning (warnings for %q)", want, names)
		}
	}
	// Settings bloomd implements take effect; those whose value is what bloomd does anyway
	// (repl-diskless-sync yes, aof-use-rdb-preamble yes, ...) load without a warning.
	for _, name := range []string{"replica-read-only", "replica-serve-stale-data", "replica-priority", "slowlog-log-slower-than",
		"slowlog-max-len", "latency-monitor-threshold", "tcp-keepalive", "repl-diskless-sync", "repl-diskless-load",
		"repl-disable-tcp-nodelay", "aof-use-rdb-preamble", "aof-load-truncated", "rdbchecksum", "always-show-logo", "pidfile"} {
		if slices.Contains(names, name) {
			t.Errorf("%s: a warning, but bloomd does what %s says", name, path)
		}
	}
	groups := cfg.ignoredByReason()
	for _, g := range groups {
		t.Logf("%s: %s", g[1], g[0])
	}
	if len(groups) >= len(names) || len(groups) > 30 {
		t.Errorf("%d warnings for %d settings: one per reason", len(groups), len(names))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("two warnings for %s", n)
		}
		seen[n] = true
	}
}
