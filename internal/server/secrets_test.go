package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/redistest"
)

// TestNoPasswordAnywhere sets, uses and mistypes passwords every way a client can, then reads
// everything bloomd shows about its clients and itself (ACL LOG, CLIENT LIST, CLIENT INFO, INFO
// everything, SLOWLOG GET, MONITOR's feed, and the log at debug level from the start-up lines
// on): no password appears.
func TestNoPasswordAnywhere(t *testing.T) {
	var logs redistest.Buffer
	s := startServer(t, func(c *Config) {
		c.Dir = t.TempDir()
		c.Requirepass = "rp-SECRET1"
		c.Replication.MasterAuth = "ma-SECRET2"
		c.Users = []acl.Definition{{Name: "alice", Rules: []string{"on", ">al-SECRET3", "~*", "&*", "+@all"}}}
		c.SlowlogLogSlowerThan = 0
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	s.logStart("") // what Run logs at start
	s.logMemoryLimit()
	admin := dial(t, s.addr())
	admin.do("AUTH", "rp-SECRET1")
	mon := dial(t, s.addr())
	mon.do("AUTH", "rp-SECRET1")
	mon.send([]byte("MONITOR"))
	mon.read()
	steps := [][]string{
		{"AUTH", "wrong-SECRET4"},
		{"AUTH", "alice", "wrong-SECRET5"},
		{"HELLO", "3", "AUTH", "alice", "wrong-SECRET6"},
		{"HELLO", "2", "AUTH", "alice", "al-SECRET3", "SETNAME", "app"},
		{"AUTH", "alice", "al-SECRET3", "extra-SECRET7"},
		{"AUTH", "nobody", "wrong-SECRET8"},
	}
	for _, st := range steps {
		c := dial(t, s.addr())
		c.do(st...)
	}
	for _, cmd := range [][]string{
		{"ACL", "SETUSER", "bob", "on", ">bob-SECRET9", "<bob-SECRET10", "~*"}, // refused: no such password
		{"ACL", "SETUSER", "bob", "on", ">bob-SECRET11", "#notahash-SECRET12"},
		{"ACL", "SETUSER", "carol", "on", ">carol-SECRET13", "+get"},
		{"CONFIG", "SET", "masterauth", "ma-SECRET14"},
		{"CONFIG", "SET", "masteruser", "mu-SECRET15"},
		{"CONFIG", "SET", "requirepass", "rp-SECRET16", "maxmemory", "nonsense"},
		{"CONFIG", "SET", "requirepass"},
	} {
		admin.do(cmd...)
	}
	carol := dial(t, s.addr())
	carol.do("AUTH", "carol", "carol-SECRET13")
	carol.do("SET", "k", "v") // denied: in ACL LOG
	admin.do("PING", "end")

	var seen []string
	for {
		_, v := mon.read()
		seen = append(seen, string(v.Str))
		if strings.Contains(string(v.Str), `"PING" "end"`) {
			break
		}
	}
	for _, cmd := range [][]string{
		{"ACL", "LOG", "100"}, {"CLIENT", "LIST"}, {"CLIENT", "INFO"}, {"INFO", "EVERYTHING"}, {"SLOWLOG", "GET", "-1"},
		{"ACL", "LIST"}, {"ACL", "GETUSER", "alice"}, {"MEMORY", "STATS"}, {"LATENCY", "LATEST"},
	} {
		v := admin.do(cmd...)
		if v.IsError() {
			t.Fatalf("%q: %v", cmd, v)
		}
		seen = append(seen, v.String())
	}
	seen = append(seen, logs.String())
	all := strings.Join(seen, "\n")
	if !strings.Contains(all, "(redacted)") || !strings.Contains(all, "reason") {
		t.Fatalf("the feed, ACL LOG or slow log is missing:\n%s", all)
	}
	for _, line := range strings.Split(all, "\n") {
		if strings.Contains(line, "SECRET") {
			t.Errorf("a password is shown: %s", line)
		}
	}
}

// TestNoPasswordInStartupErrors: a config file's or command line's user line, or an aclfile,
// refused for a bad password rule is reported without the password, which Redis prints in clear.
func TestNoPasswordInStartupErrors(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bloomd.conf")
	os.WriteFile(conf, []byte("user alice on >conf-SECRET1 #conf-SECRET2\n"), 0o600)
	aclfile := filepath.Join(dir, "users.acl")
	os.WriteFile(aclfile, []byte("user alice on >file-SECRET3 !file-SECRET4\n"), 0o600)
	for _, args := range [][]string{
		{"--user", "alice on >arg-SECRET5 <arg-SECRET6"},
		{"--user", "alice", "on", ">arg-SECRET7", "#arg-SECRET8"},
		{conf},
		{"--aclfile", aclfile},
		{"--user", "alice on (>arg-SECRET9"},
	} {
		cfg, _, err := ParseArgs(append(args, "--dir", dir))
		if err == nil {
			cfg.Logger = discardLogger()
			var s *Server
			s, err = New(cfg)
			if err == nil {
				s.Shutdown(t.Context())
			}
		}
		if err == nil {
			t.Fatalf("%q accepted", args)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%q: %v", args, err)
		}
	}
}
