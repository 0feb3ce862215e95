package aclcompat

import (
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/server"
)

// TestACLConnectionEffects changes users that have open connections, on Redis and on bloomd
// alike, and compares what the connections see next: a deleted user's connections are closed;
// a user switched off, given a new password, or reset; a user whose commands, keys or channels
// change sees the change on its next command, including inside a transaction queued before the
// change and a subscription made before it.
//
// bloomd serves connections on event loops or with a goroutine each (io-threads -1); closing
// another connection differs between the two, so both are tried.
func TestACLConnectionEffects(t *testing.T) {
	for _, mode := range []struct {
		name  string
		loops int
	}{{"event loops", 0}, {"goroutines", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			testACLConnectionEffects(t, func(c *server.Config) { c.EventLoops = mode.loops })
		})
	}
}

func testACLConnectionEffects(t *testing.T, mod func(*server.Config)) {
	redisAddr := startRedis(t)
	bloomdAddr := startBloomd(t, mod)
	admin := dialPair(t, redisAddr, bloomdAddr)
	admin.must("ACL", "SETUSER", "admin", "on", ">adminpw", "~*", "&*", "+@all")
	admin.must("AUTH", "admin", "adminpw")
	admin.must("ACL", "LOG", "RESET")

	steps := []struct {
		name   string
		rules  string   // the user's rules at login
		change []string // what admin runs while the user's connection is open
		next   [][]string
	}{
		{"deleted", "on >pw ~* +@all", []string{"ACL", "DELUSER", "u"}, [][]string{{"PING"}}},
		{"switched off", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "off"}, [][]string{{"GET", "k"}, {"PING"}}},
		{"new password", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "resetpass", ">other"}, [][]string{{"GET", "k"}}},
		{"reset", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "reset"}, [][]string{{"GET", "k"}, {"PING"}}},
		{"command taken away", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "-get"}, [][]string{{"GET", "k"}, {"SET", "k", "v"}}},
		{"command given", "on >pw ~* -@all +ping", []string{"ACL", "SETUSER", "u", "+get"}, [][]string{{"GET", "k"}, {"SET", "k", "v"}}},
		{"keys narrowed", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "resetkeys", "~other:*"}, [][]string{{"GET", "k"}, {"GET", "other:1"}}},
		{"keys made read-only", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "resetkeys", "%R~*"}, [][]string{{"GET", "k"}, {"SET", "k", "v"}}},
		{"channels taken away", "on >pw ~* &* +@all", []string{"ACL", "SETUSER", "u", "resetchannels"}, [][]string{{"PUBLISH", "ch", "m"}}},
		{"made passwordless", "on >pw ~* +@all", []string{"ACL", "SETUSER", "u", "on", "nopass"}, [][]string{{"GET", "k"}}},
	}
	for _, s := range steps {
		admin.must("ACL", "DELUSER", "u")
		admin.must(append([]string{"ACL", "SETUSER", "u"}, strings.Fields(s.rules)...)...)
		p := dialPair(t, redisAddr, bloomdAddr)
		p.must("AUTH", "u", "pw")
		admin.must(s.change...)
		for _, cmd := range s.next {
			rv, rerr := p.redis.send(cmd...)
			bv, berr := p.bloomd.send(cmd...)
			r, b := outcome(rv, rerr), outcome(bv, berr)
			if r != b {
				t.Errorf("%s: then %q: redis %s, bloomd %s", s.name, cmd, r, b)
			}
			t.Logf("%s, then %q: %s", s.name, cmd, r)
			if rerr != nil || berr != nil {
				break
			}
		}
	}

	// A transaction queued before the user loses a command: EXEC checks again.
	admin.must("ACL", "SETUSER", "u", "reset", "on", ">pw", "~*", "+@all")
	p := dialPair(t, redisAddr, bloomdAddr)
	p.must("AUTH", "u", "pw")
	p.must("MULTI")
	p.must("SET", "k", "v")
	p.must("GET", "k")
	admin.must("ACL", "SETUSER", "u", "-get")
	rv, rerr := p.redis.send("EXEC")
	bv, berr := p.bloomd.send("EXEC")
	if r, b := outcome(rv, rerr), outcome(bv, berr); r != b {
		t.Errorf("EXEC after the user lost GET: redis %s, bloomd %s", r, b)
	}

	// A subscriber whose channel permission is taken away.
	admin.must("ACL", "SETUSER", "u", "reset", "on", ">pw", "~*", "&news", "+@all")
	sub := dialPair(t, redisAddr, bloomdAddr)
	sub.must("AUTH", "u", "pw")
	sub.must("SUBSCRIBE", "news")
	admin.must("ACL", "SETUSER", "u", "resetchannels")
	admin.must("PUBLISH", "news", "after")
	for _, c := range []*conn{sub.redis, sub.bloomd} {
		c.nc.SetReadDeadline(time.Now().Add(time.Second))
	}
	rv, rerr = readWithin(sub.redis)
	bv, berr = readWithin(sub.bloomd)
	if r, b := outcome(rv, rerr), outcome(bv, berr); r != b {
		t.Errorf("a subscriber after its channel was taken away: redis %s, bloomd %s", r, b)
	}

	// Every connection of a deleted user is closed, not only the newest one.
	admin.must("ACL", "SETUSER", "u", "reset", "on", ">pw", "~*", "+@all")
	var conns []pair
	for range 3 {
		c := dialPair(t, redisAddr, bloomdAddr)
		c.must("AUTH", "u", "pw")
		conns = append(conns, c)
	}
	admin.must("ACL", "DELUSER", "u")
	for i, c := range conns {
		rv, rerr := c.redis.send("PING")
		bv, berr := c.bloomd.send("PING")
		if r, b := outcome(rv, rerr), outcome(bv, berr); r != b {
			t.Errorf("connection %d of a deleted user: redis %s, bloomd %s", i, r, b)
		}
	}
	// The admin's own connection is untouched by all this.
	admin.must("PING")
	if n := compareLogs(t, admin, "the changes of users with open connections"); n == 0 {
		t.Error("the denials left no ACL LOG entries")
	}
}

// readWithin reads one message within the deadline already set; a timeout is reported as
// "(nothing)".
func readWithin(c *conn) (resp.Value, error) {
	v, err := c.rd.ReadReply()
	if err != nil {
		if isClosed(err) {
			return v, errClosed
		}
		return resp.Value{Kind: '+', Str: []byte("(nothing)")}, nil
	}
	return v, nil
}
