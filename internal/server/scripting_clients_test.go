package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The two scripts of the widely copied Spring example (resources/bloomFilterAdd.lua and
// bloomFilterExist.lua): the filter's name in KEYS[1], the item in KEYS[2], the result read
// as a Boolean.
const (
	springAdd    = "return redis.call('BF.ADD', KEYS[1], KEYS[2])"
	springExists = "return redis.call('BF.EXISTS', KEYS[1], KEYS[2])"
)

// scriptAuth is one way a client logs in for the script tests: nobody, requirepass, or an ACL
// user allowed only what the scripts need.
type scriptAuth struct {
	name, user, pass string
}

var scriptAuths = []scriptAuth{{"no-password", "", ""}, {"requirepass", "", "pw"}, {"acl-user", "spring", "springpw"}}

// scriptServer starts bloomd for a, and returns its address.
func scriptServer(t *testing.T, a scriptAuth) string {
	s := startServer(t, func(c *Config) {
		c.Requirepass = map[bool]string{true: "adminpw", false: a.pass}[a.user != ""]
		if a.user != "" {
			c.Users = []acl.Definition{
				{Name: "default", Rules: []string{"on", ">adminpw", "~*", "&*", "+@all"}},
				{Name: a.user, Rules: []string{"on", ">" + a.pass, "~*", "-@all", "+eval", "+evalsha", "+bf.add", "+bf.exists"}},
			}
		}
	})
	return s.addr()
}

// springGoRedis runs the Spring scripts through go-redis's Script, which sends EVALSHA and
// falls back to EVAL on NOSCRIPT, as Spring's script executor does.
func springGoRedis(t *testing.T, addr string, proto int, a scriptAuth) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Username: a.user, Password: a.pass, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	add, exists := redis.NewScript(springAdd), redis.NewScript(springExists)
	filter := fmt.Sprintf("spring:%s:%d", a.name, proto)
	for i, want := range []bool{true, false} {
		got, err := add.Run(ctx, rdb, []string{filter, "alice"}).Bool()
		if err != nil || got != want {
			t.Fatalf("add #%d: %v %v, want %v", i+1, got, err, want)
		}
	}
	for item, want := range map[string]bool{"alice": true, "mallory": false} {
		got, err := exists.Run(ctx, rdb, []string{filter, item}).Bool()
		if err != nil || got != want {
			t.Fatalf("exists %s: %v %v", item, got, err)
		}
	}
	// EVAL directly (go-redis's Eval) and EVALSHA of a loaded script.
	if got, err := rdb.Eval(ctx, springAdd, []string{filter, "bob"}).Bool(); err != nil || !got {
		t.Fatalf("EVAL: %v %v", got, err)
	}
	if a.user == "" {
		sha, err := rdb.ScriptLoad(ctx, springExists).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := rdb.EvalSha(ctx, sha, []string{filter, "bob"}).Bool(); err != nil || !got {
			t.Fatalf("EVALSHA: %v %v", got, err)
		}
	}
	if a.user != "" {
		// The user may not run SET, from a script either.
		err := rdb.Eval(ctx, "return redis.call('SET', KEYS[1], 'x')", []string{filter + ":s"}).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR The user executing the script can't run this command or subcommand script: ") {
			t.Fatalf("SET from a script as %s: %v", a.user, err)
		}
	}
}

// TestSpringScriptsGoRedis runs the Spring example's scripts from go-redis, in RESP2 and
// RESP3, without a password, with requirepass (where Spring's users saw "Unknown Redis command
// called from Lua script") and as an ACL user allowed only +eval +evalsha +bf.add
// +bf.exists; with REDISBLOOM_SO set, against redis-server with RedisBloom too.
func TestSpringScriptsGoRedis(t *testing.T) {
	for _, a := range scriptAuths {
		t.Run(a.name, func(t *testing.T) {
			forEachIOMode(t, func(t *testing.T) {
				addr := scriptServer(t, a)
				for _, proto := range []int{2, 3} {
					springGoRedis(t, addr, proto, a)
				}
			})
			if so := os.Getenv("REDISBLOOM_SO"); so != "" {
				t.Run("redisbloom", func(t *testing.T) {
					args := []string{"--loadmodule", so}
					pass := a.pass
					if a.user != "" {
						args = append(args, "--user", "spring", "on", ">springpw", "~*", "-@all", "+eval", "+evalsha", "+bf.add", "+bf.exists")
						pass = "adminpw"
					}
					rs := redistest.New(t, &redistest.Options{Password: pass, Args: args})
					for _, proto := range []int{2, 3} {
						springGoRedis(t, rs.Addr, proto, a)
					}
				})
			}
		})
	}
}

// TestSpringScriptsACLLog: a denial inside a script is logged with context "lua", as Redis
// logs it.
func TestSpringScriptsACLLog(t *testing.T) {
	addr := scriptServer(t, scriptAuths[2])
	u, admin := dial(t, addr), dial(t, addr)
	u.do("AUTH", "spring", "springpw")
	admin.do("AUTH", "adminpw")
	if v := u.do("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "k"); !strings.HasPrefix(v.Text(), "ERR The user executing the script can't run this command or subcommand") {
		t.Fatal(v)
	}
	log := admin.do("ACL", "LOG").String()
	for _, want := range []string{`"reason", "command"`, `"context", "lua"`, `"object", "set"`, `"username", "spring"`} {
		if !strings.Contains(log, want) {
			t.Errorf("ACL LOG lacks %s:\n%s", want, log)
		}
	}
}

// TestSpringScriptsRedisPy runs testdata/python/scripts.py (redis-py's register_script,
// which uses EVALSHA with EVAL as fallback), each way of logging in.
func TestSpringScriptsRedisPy(t *testing.T) {
	py := python3(t)
	for _, a := range scriptAuths {
		_, port, _ := strings.Cut(scriptServer(t, a), ":")
		args := []string{"testdata/python/scripts.py", port}
		if a.pass != "" {
			args = append(args, a.pass, a.user)
		}
		if out := run(t, nil, py, args...); out != "ok\n" {
			t.Fatalf("%s: scripts.py: %q", a.name, out)
		}
	}
}

// TestSpringScriptsNodeRedis runs testdata/node/scripts.mjs (node-redis's defineScript, which
// uses EVALSHA with EVAL as fallback), in RESP2 and RESP3, each way of logging in.
func TestSpringScriptsNodeRedis(t *testing.T) {
	node, npm := nodeAndNPM(t)
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "scripts.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "node", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npmCI(t, npm, dir)
	for _, a := range scriptAuths {
		_, port, _ := strings.Cut(scriptServer(t, a), ":")
		args := []string{filepath.Join(dir, "scripts.mjs"), port}
		if a.pass != "" {
			args = append(args, a.pass, a.user)
		}
		if out := run(t, nil, node, args...); out != "ok\n" {
			t.Fatalf("%s: scripts.mjs: %q", a.name, out)
		}
	}
}
