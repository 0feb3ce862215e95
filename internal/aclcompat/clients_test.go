package aclcompat

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/skipped"
	"github.com/redis/go-redis/v9"
)

// The clients' user may use its own keys and anything not @dangerous.
const (
	appUser  = "app"
	appPass  = "app-secret"
	appRules = "on >app-secret ~app:* &* +@all -@dangerous"
)

// twoServers starts Redis and bloomd, both with the clients' user, and returns their addresses.
func twoServers(t *testing.T) (redisAddr, bloomdAddr string) {
	t.Helper()
	redisAddr = startRedis(t)
	bloomdAddr = startBloomd(t, nil)
	admin := dialPair(t, redisAddr, bloomdAddr)
	admin.must(append([]string{"ACL", "SETUSER", appUser}, strings.Fields(appRules)...)...)
	return redisAddr, bloomdAddr
}

// sameOnBoth runs a client scenario against Redis and against bloomd and requires the same
// transcript; check then asserts what Redis's transcript must say, so the scenario cannot pass
// by failing alike on both.
func sameOnBoth(t *testing.T, redisAddr, bloomdAddr string, run func(addr string) string, check func(transcript string)) {
	t.Helper()
	r, b := run(redisAddr), run(bloomdAddr)
	if r != b {
		t.Errorf("transcripts differ\nredis:\n%s\nbloomd:\n%s", r, b)
	}
	check(r)
}

func mustContain(t *testing.T, transcript string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(transcript, p) {
			t.Errorf("the transcript lacks %q:\n%s", p, transcript)
		}
	}
}

const (
	wrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	nopermCmd = "NOPERM this user has no permissions to run the 'flushall' command"
	nopermKey = "NOPERM this user has no permissions to access one of the keys used as arguments"
)

// TestRedisCLIUser logs in with redis-cli --user/--pass and with -a and --user.
func TestRedisCLIUser(t *testing.T) {
	cli := needProgram(t, "redis-cli", redistest.RequireEnv, "redis-tools")
	redisAddr, bloomdAddr := twoServers(t)
	run := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		var out strings.Builder
		for _, args := range [][]string{
			{"--user", appUser, "--pass", appPass, "SET", "app:1", "v"},
			{"--user", appUser, "-a", appPass, "GET", "app:1"},
			{"--user", appUser, "--pass", appPass, "GET", "other"},
			{"--user", appUser, "--pass", appPass, "FLUSHALL"},
			{"--user", appUser, "--pass", appPass, "ACL", "WHOAMI"},
			{"--user", appUser, "--pass", "wrong", "PING"},
			{"--user", "nobody", "--pass", appPass, "PING"},
		} {
			cmd := exec.Command(cli, append([]string{"-h", host, "-p", port, "--no-auth-warning"}, args...)...)
			b, err := cmd.CombinedOutput()
			fmt.Fprintf(&out, "%s -> %s (exit %v)\n", strings.Join(args[4:], " "), strings.TrimSpace(string(b)), err != nil)
		}
		return out.String()
	}
	sameOnBoth(t, redisAddr, bloomdAddr, run, func(tr string) {
		mustContain(t, tr, "SET app:1 v -> OK", "GET app:1 -> v", nopermKey, nopermCmd, "ACL WHOAMI -> app", wrongPass)
	})
}

// TestGoRedisUser logs in with go-redis's Username, over RESP2 (AUTH) and RESP3 (HELLO 3 AUTH).
func TestGoRedisUser(t *testing.T) {
	redisAddr, bloomdAddr := twoServers(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			run := func(addr string) string {
				var out strings.Builder
				c := redis.NewClient(&redis.Options{Addr: addr, Username: appUser, Password: appPass, Protocol: proto,
					DisableIdentity: true, MaxRetries: -1, DialTimeout: 2 * time.Second})
				defer c.Close()
				fmt.Fprintf(&out, "set: %v\n", c.Set(ctx, "app:1", "v", 0).Err())
				v, err := c.Get(ctx, "app:1").Result()
				fmt.Fprintf(&out, "get: %q %v\n", v, err)
				fmt.Fprintf(&out, "get other: %v\n", c.Get(ctx, "other").Err())
				fmt.Fprintf(&out, "flushall: %v\n", c.FlushAll(ctx).Err())
				who, err := c.Do(ctx, "ACL", "WHOAMI").Text()
				fmt.Fprintf(&out, "whoami: %s %v\n", who, err)
				_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
					p.Get(ctx, "app:1")
					p.Get(ctx, "other")
					return nil
				})
				fmt.Fprintf(&out, "pipeline: %v\n", err)

				bad := redis.NewClient(&redis.Options{Addr: addr, Username: appUser, Password: "wrong", Protocol: proto,
					DisableIdentity: true, MaxRetries: -1, DialTimeout: 2 * time.Second})
				defer bad.Close()
				fmt.Fprintf(&out, "wrong password: %v\n", bad.Ping(ctx).Err())
				return out.String()
			}
			sameOnBoth(t, redisAddr, bloomdAddr, run, func(tr string) {
				mustContain(t, tr, "set: <nil>", `get: "v" <nil>`, "get other: "+nopermKey, "flushall: "+nopermCmd,
					"whoami: app <nil>", "pipeline: "+nopermKey, "wrong password: "+wrongPass)
			})
		})
	}
}

// python3 returns a Python with redis-py, or skips the test (fails it under
// BLOOM_REQUIRE_REDIS=1).
func python3(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	if os.Getenv(redistest.RequireEnv) == "1" {
		t.Fatalf("no python3 with the redis module, and %s=1 requires it (apt-get install python3-redis)", redistest.RequireEnv)
	}
	skipped.Missing(t, "python3-redis", "no python3 with the redis module (apt-get install python3-redis); skipping")
	return ""
}

// redisPyScript logs in with redis-py's username and prints what it sees: argv[1] is the port.
const redisPyScript = `
import sys, redis
port = int(sys.argv[1])
def show(what, f):
    try:
        print(what, "->", repr(f()))
    except redis.exceptions.RedisError as e:
        print(what, "->", type(e).__name__, str(e))
r = redis.Redis(host="127.0.0.1", port=port, username="app", password="app-secret")
show("set", lambda: r.set("app:1", "v"))
show("get", lambda: r.get("app:1"))
show("get other", lambda: r.get("other"))
show("flushall", lambda: r.flushall())
show("whoami", lambda: r.acl_whoami())
show("wrong password", lambda: redis.Redis(host="127.0.0.1", port=port, username="app", password="wrong").ping())
show("no such user", lambda: redis.Redis(host="127.0.0.1", port=port, username="nobody", password="x").ping())
`

// TestRedisPyUser logs in with redis-py's username.
func TestRedisPyUser(t *testing.T) {
	py := python3(t)
	redisAddr, bloomdAddr := twoServers(t)
	run := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command(py, "-c", redisPyScript, port).CombinedOutput()
		if err != nil {
			t.Errorf("redis-py against %s: %v\n%s", addr, err, out)
		}
		return string(out)
	}
	sameOnBoth(t, redisAddr, bloomdAddr, run, func(tr string) {
		mustContain(t, tr, "set -> True", "get -> b'v'", "get other -> NoPermissionError "+strings.TrimPrefix(nopermKey, "NOPERM "),
			"flushall -> NoPermissionError", "whoami -> 'app'", "wrong password -> ResponseError "+wrongPass, "no such user -> ResponseError "+wrongPass)
	})
}
