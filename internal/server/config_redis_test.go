package server

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readNames returns the names in a testdata file, one per line.
func readNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n := strings.TrimSpace(sc.Text()); n != "" {
			names = append(names, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestRedis70SettingsKnown walks every setting Redis 7.0.15 has (CONFIG GET * of the real
// server, aliases included, and the directives of its redis.conf; testdata/redis70/README.md
// says how they were recorded): bloomd implements each, or knows it as an alias, as a setting
// it accepts with a warning, or as one it refuses with a reason. None is an unknown name.
func TestRedis70SettingsKnown(t *testing.T) {
	names := readNames(t, "testdata/redis70/config-get.txt")
	if len(names) < 190 {
		t.Fatalf("testdata/redis70/config-get.txt has %d names; Redis 7.0.15 has 192", len(names))
	}
	names = append(names, readNames(t, "testdata/redis70/directives.txt")...)
	directives := map[string]bool{"include": true, "user": true} // read by parseConfig itself
	for _, n := range names {
		_, only := isRedisOnly(n)
		_, refused := isRefused(n)
		if findParam(n) == nil && !only && !refused && !directives[n] {
			t.Errorf("Redis 7.0 setting %q is unknown to bloomd: a redis.conf with it does not load", n)
		}
	}
}

// TestRedisSettingsConsistent checks the tables of config_redis.go against each other: a
// setting bloomd implements is not also ignored (an invalid value would then be ignored with a
// false reason instead of refused), unless it takes one value only; every fixed value has a
// reason and is what CONFIG GET answers; every alias names a setting; no name is registered
// twice; no reason denies what bloomd has.
func TestRedisSettingsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range params {
		if seen[p.name] {
			t.Errorf("setting %s registered twice", p.name)
		}
		seen[p.name] = true
	}
	def := DefaultConfig()
	for name, why := range redisOnly {
		if strings.Contains(why, "no replication") || strings.Contains(why, "no slow log") || strings.Contains(why, "no latency monitor") {
			t.Errorf("%s: %q: bloomd has that", name, why)
		}
		p := findParam(name)
		if p == nil {
			continue
		}
		// An implemented setting listed here must take exactly one value.
		accepted := []string{}
		for _, v := range []string{p.get(&def), "yes", "no", "0", "1", "2", "10", "16", "100", "disabled", "swapdb", "allkeys-lru", "allchannels", "resetchannels"} {
			c := DefaultConfig()
			if p.set(&c, v) == nil && !slices.Contains(accepted, strings.ToLower(v)) {
				accepted = append(accepted, strings.ToLower(v))
			}
		}
		if len(accepted) != 1 {
			t.Errorf("%s is a setting of bloomd taking %q, and also listed as meaning nothing to bloomd (%q)", name, accepted, why)
		}
	}
	for name, v := range redisFixed {
		if _, ok := redisOnly[name]; !ok {
			t.Errorf("fixed setting %s has no reason in redisOnly", name)
		}
		if got, ok := def.Get(name); !ok || got != v {
			t.Errorf("CONFIG GET %s = %q, %v; want %q", name, got, ok, v)
		}
	}
	for alias, name := range redisAliases {
		_, only := redisOnly[name]
		if findParam(name) == nil && !only {
			t.Errorf("alias %s of %s, which bloomd does not know", alias, name)
		}
	}
}

// TestRedisFixedValues: a Redis setting whose value says what bloomd does loads in silence;
// another value loads with the warning; CONFIG SET refuses it with the reason.
func TestRedisFixedValues(t *testing.T) {
	c := DefaultConfig()
	conf := "repl-diskless-sync yes\naof-load-truncated yes\naof-use-rdb-preamble yes\nrepl-disable-tcp-nodelay no\n"
	if err := ParseConfig(strings.NewReader(conf), "r.conf", &c); err != nil || len(c.ignored) != 0 {
		t.Fatalf("bloomd's own values: %v, ignored %v", err, c.ignored)
	}
	c = DefaultConfig()
	conf = "repl-diskless-sync no\naof-load-truncated no\n"
	if err := ParseConfig(strings.NewReader(conf), "r.conf", &c); err != nil {
		t.Fatal(err)
	}
	if got := ignoredNames(c); !slices.Equal(got, []string{"repl-diskless-sync", "aof-load-truncated"}) {
		t.Fatalf("ignored %q", got)
	}
	if got, _ := c.Get("aof-load-truncated"); got != "yes" {
		t.Fatalf("CONFIG GET aof-load-truncated = %q after an ignored no", got)
	}
	err := c.Set("repl-diskless-sync", "no")
	if err == nil || !strings.Contains(err.Error(), "straight to the replica's connection") {
		t.Fatalf("CONFIG SET repl-diskless-sync no: %v", err)
	}
	if err := c.Set("repl-diskless-sync", "YES"); err != nil {
		t.Fatalf("CONFIG SET repl-diskless-sync YES: %v", err)
	}
}

// TestRedisRefusedSettings: the settings that would make bloomd look like something it is not
// stop the start with their reason, in a file and on the command line; their harmless values
// load.
func TestRedisRefusedSettings(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"rename-command FLUSHALL \"\"", "line 1: rename-command: bloomd cannot rename or hide commands; deny them to users with ACL rules"},
		{"tls-replication yes", "line 1: tls-replication: bloomd's replica connects to its primary without TLS"},
		{"tls-key-file-pass secret", "line 1: tls-key-file-pass: bloomd cannot read an encrypted private key"},
		{"sentinel monitor mymaster 127.0.0.1 6379 2", "line 1: sentinel: bloomd is not Redis Sentinel"},
		{"tls-protocols \"TLSv1.1 TLSv1.2\"", "line 1: tls-protocols: bloomd offers TLS 1.2 and 1.3 only, not TLSv1.1"},
		{"shutdown-on-sigterm save nosave", "line 1: shutdown-on-sigterm: shutdown options SAVE and NOSAVE can't be used simultaneously"},
	} {
		c := DefaultConfig()
		err := ParseConfig(strings.NewReader(tc.line+"\n"), "r.conf", &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.line, err, tc.want)
		}
	}
	if _, _, err := ParseArgs([]string{"--rename-command", "CONFIG", "x"}); err == nil || !strings.Contains(err.Error(), "--rename-command: bloomd cannot rename") {
		t.Errorf("--rename-command: %v", err)
	}
	c := DefaultConfig()
	conf := "cluster-enabled no\ntls-replication no\ntls-key-file-pass \"\"\ntls-protocols \"TLSv1.2 TLSv1.3\"\nshutdown-on-sigint nosave now\n"
	if err := ParseConfig(strings.NewReader(conf), "r.conf", &c); err != nil || len(c.ignored) != 0 {
		t.Fatalf("harmless values: %v, ignored %v", err, c.ignored)
	}
	if got, _ := c.Get("shutdown-on-sigint"); got != "nosave now" {
		t.Fatalf("shutdown-on-sigint %q", got)
	}
}

// TestRedisAliases: Redis's older names (slaveof, slave-*, min-slaves-*) set bloomd's settings,
// in a file, on the command line and with CONFIG GET.
func TestRedisAliases(t *testing.T) {
	c := DefaultConfig()
	conf := "slaveof 127.0.0.1 6400\nslave-read-only no\nslave-priority 7\nmin-slaves-to-write 2\nslave-lazy-flush yes\n"
	if err := ParseConfig(strings.NewReader(conf), "r.conf", &c); err != nil {
		t.Fatal(err)
	}
	if c.ReplicaOf != "127.0.0.1 6400" || c.Replication.ReplicaReadOnly || c.Replication.ReplicaPriority != 7 || c.Replication.MinReplicasToWrite != 2 {
		t.Fatalf("aliases not applied: %q %+v", c.ReplicaOf, c.Replication)
	}
	if got := ignoredNames(c); !slices.Equal(got, []string{"slave-lazy-flush"}) {
		t.Fatalf("ignored %q", got)
	}
	if v, ok := c.Get("SLAVE-PRIORITY"); !ok || v != "7" {
		t.Fatalf("CONFIG GET slave-priority = %q %v", v, ok)
	}
	cfg, _, err := ParseArgs([]string{"--slave-serve-stale-data", "no"})
	if err != nil || cfg.Replication.ServeStaleData {
		t.Fatalf("--slave-serve-stale-data no: %v %+v", err, cfg.Replication)
	}
}

// TestIgnoredGrouped: the warnings are one per reason, naming every setting it covers, in the
// order of the file.
func TestIgnoredGrouped(t *testing.T) {
	c := DefaultConfig()
	conf := "lazyfree-lazy-eviction no\ntcp-backlog 511\nreplica-lazy-flush no\nlazyfree-lazy-expire no\nlazyfree-lazy-eviction yes\n"
	if err := ParseConfig(strings.NewReader(conf), "r.conf", &c); err != nil {
		t.Fatal(err)
	}
	got := c.ignoredByReason()
	want := [][2]string{
		{redisOnly["lazyfree-lazy-eviction"], "lazyfree-lazy-eviction replica-lazy-flush lazyfree-lazy-expire"},
		{redisOnly["tcp-backlog"], "tcp-backlog"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("groups %q, want %q", got, want)
	}
}

// TestConfigRewriteKeepsRedisSettings: CONFIG REWRITE leaves a Redis setting that bloomd ignored
// as the file has it (the file stays right for Redis), and writes aliases under their names.
func TestConfigRewriteKeepsRedisSettings(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	path := filepath.Join(dir, "bloomd.conf")
	orig := "databases 16\nrepl-diskless-sync-delay 5\nrepl-diskless-sync yes\nslave-priority 5\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	s.configFile = path
	c := dial(t, s.addr())
	if v := c.do("CONFIG", "SET", "replica-priority", "9"); v.Text() != "OK" {
		t.Fatal(v)
	}
	if v := c.do("CONFIG", "REWRITE"); v.Text() != "OK" {
		t.Fatalf("CONFIG REWRITE: %v", v)
	}
	got, _ := os.ReadFile(path)
	want := "databases 16\nrepl-diskless-sync-delay 5\nrepl-diskless-sync yes\nreplica-priority 9\n# Generated by CONFIG REWRITE\ndir " + dir + "\n"
	if string(got) != want {
		t.Errorf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
	if v := c.do("CONFIG", "GET", "slave-pri*"); len(v.Elems) != 2 || v.Elems[0].Text() != "slave-priority" || v.Elems[1].Text() != "9" {
		t.Errorf("CONFIG GET slave-pri*: %v", v)
	}
}
