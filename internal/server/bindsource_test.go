package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// bindSourceCases are bind-source-addr as a config file line and as command-line arguments, with
// whether redis-server 7.0 accepts them and the value they set. Redis checks nothing but the
// number of arguments: any string is an address to try, "" is none.
var bindSourceCases = []struct {
	line string   // a config file line
	args []string // the same on the command line
	ok   bool
	want string
}{
	{`bind-source-addr 127.0.0.5`, []string{"--bind-source-addr", "127.0.0.5"}, true, "127.0.0.5"},
	{`bind-source-addr ""`, []string{"--bind-source-addr", ""}, true, ""},
	{`bind-source-addr garbage`, []string{"--bind-source-addr", "garbage"}, true, "garbage"},
	{`bind-source-addr "a b"`, []string{"--bind-source-addr", "a b"}, true, "a b"},
	{`bind-source-addr`, []string{"--bind-source-addr"}, false, ""},
	{`bind-source-addr a b`, []string{"--bind-source-addr", "a", "b"}, false, ""},
}

// TestBindSourceAddrConfig reads bind-source-addr from config files, the command line and CONFIG
// SET, and requires what redis-server 7.0.15 does with the same input (when it is installed): a
// wrong number of arguments is an error, any one value is accepted, CONFIG GET gives it back.
func TestBindSourceAddrConfig(t *testing.T) {
	redis := exec.Command("redis-server", "--version").Run() == nil
	if !redis && os.Getenv(redistest.RequireEnv) == "1" {
		t.Fatal("redis-server is missing")
	}
	dir := t.TempDir()
	for i, tc := range bindSourceCases {
		conf := filepath.Join(dir, "c.conf")
		os.WriteFile(conf, []byte(tc.line+"\n"), 0o644)
		cfg, _, err := ParseArgs([]string{conf})
		if (err == nil) != tc.ok || err == nil && cfg.Replication.BindSourceAddr != tc.want {
			t.Errorf("config line %q: %v, bind-source-addr %q; want accepted %v with %q", tc.line, err, cfg.Replication.BindSourceAddr, tc.ok, tc.want)
		}
		cfg, _, err = ParseArgs(tc.args)
		if (err == nil) != tc.ok || err == nil && cfg.Replication.BindSourceAddr != tc.want {
			t.Errorf("command line %q: %v, bind-source-addr %q; want accepted %v with %q", tc.args, err, cfg.Replication.BindSourceAddr, tc.ok, tc.want)
		}
		if !redis {
			continue
		}
		// redis-server with port 0 exits at once: "not listen anywhere" once the settings
		// are read, "FATAL CONFIG FILE ERROR" if they were refused.
		for _, args := range [][]string{{conf, "--port", "0", "--save", ""}, append([]string{"--port", "0", "--save", ""}, tc.args...)} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			out, _ := exec.CommandContext(ctx, "redis-server", args...).CombinedOutput()
			cancel()
			refused := strings.Contains(string(out), "FATAL CONFIG FILE ERROR")
			if refused == tc.ok || !refused && !strings.Contains(string(out), "not listen anywhere") {
				t.Errorf("case %d: redis-server %q accepted %v, the table says %v:\n%s", i, args, !refused, tc.ok, out)
			}
		}
	}

	s := startServer(t, nil)
	c := dial(t, s.addr())
	var rc *redistest.Server
	if redis {
		rc = redistest.New(t, nil)
	}
	for _, v := range []string{"127.0.0.5", "garbage", "a b", ""} {
		if got := c.do("CONFIG", "SET", "bind-source-addr", v).Text(); got != "OK" {
			t.Errorf("CONFIG SET bind-source-addr %q: %s", v, got)
		}
		if got := c.do("CONFIG", "GET", "bind-source-addr"); len(got.Elems) != 2 || got.Elems[1].Text() != v {
			t.Errorf("CONFIG GET bind-source-addr after setting %q: %v", v, got)
		}
		if rc != nil {
			if got, err := rc.Do("CONFIG", "SET", "bind-source-addr", v); err != nil || got != "OK" {
				t.Errorf("redis-server: CONFIG SET bind-source-addr %q: %q %v", v, got, err)
			}
			if got, _ := rc.Do("CONFIG", "GET", "bind-source-addr"); got != "bind-source-addr\n"+v {
				t.Errorf("redis-server: CONFIG GET bind-source-addr after setting %q: %q", v, got)
			}
		}
	}
}
