package aclcompat

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/server"
)

// aclFileCases are contents of an ACL file, valid and not, that ACL LOAD reads. A NUL byte in a
// line is left out on purpose: Redis reads the line only up to it ("user bad\x00name on" makes
// a user "bad"), bloomd refuses the file.
var aclFileCases = []string{
	"user default on nopass ~* &* +@all\nuser app on >pw ~app:* +@read\n",
	"user app on >pw ~app:* +@read -get\nuser ops on #" + sha256Hex("ops") + " ~* &* +@all -@dangerous +config|get\n",
	"user app on >pw\r\nuser other off\r\n",
	"\nuser app on >pw\n\n   \nuser b on nopass\n",
	"user a on +nosuchcommand\n",
	"user a on >pw\nusr b on\n",
	"user a on\nuser a off\n",
	"user a on #123\n",
	"user a on ~x %Z~y\n",
	"user default on nopass ~* &* +@all -flushall\nuser admin on >pw +@all ~*\n",
	"user a on >pw\nuser b on >pw +@nosuchcategory\nuser c on >pw\n",
	"# a comment\nuser a on >pw\n",
	"user\n",
	"",
}

// TestACLFile writes the same ACL file for Redis and bloomd and compares what ACL LOAD answers
// (the file's path aside), the users it leaves, and what each may do; ACL SAVE then ACL LOAD
// keeps the users as they were. A refused file changes nothing.
func TestACLFile(t *testing.T) {
	rdir, bdir := t.TempDir(), t.TempDir()
	rfile, bfile := filepath.Join(rdir, "users.acl"), filepath.Join(bdir, "users.acl")
	// The tests's connections are the default user's, which every case leaves able to run ACL.
	const start = "user default on nopass ~* &* +@all\n"
	for _, f := range []string{rfile, bfile} {
		if err := os.WriteFile(f, []byte(start), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	redisAddr := startRedis(t, "--aclfile", rfile)
	bloomdAddr := startBloomd(t, func(c *server.Config) { c.ACLFile = bfile })
	admin := dialPair(t, redisAddr, bloomdAddr)
	probes := [][]string{{"GET", "app:1"}, {"GET", "other"}, {"SET", "app:1", "v"}, {"CONFIG", "GET", "port"}, {"CONFIG", "SET", "port", "1"}, {"FLUSHALL"}}

	for _, content := range aclFileCases {
		before := [2]string{usersState(admin.redis, probes), usersState(admin.bloomd, probes)}
		for _, f := range []string{rfile, bfile} {
			if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := strings.ReplaceAll(admin.redis.do("ACL", "LOAD").String(), rfile, "<file>")
		b := strings.ReplaceAll(admin.bloomd.do("ACL", "LOAD").String(), bfile, "<file>")
		if r != b {
			t.Errorf("ACL LOAD of %q: redis %s, bloomd %s", content, r, b)
		}
		after := [2]string{usersState(admin.redis, probes), usersState(admin.bloomd, probes)}
		if after[0] != after[1] {
			t.Errorf("users after ACL LOAD of %q:\nredis:\n%s\nbloomd:\n%s", content, after[0], after[1])
		}
		if strings.HasPrefix(r, "(error)") && (after[0] != before[0] || after[1] != before[1]) {
			t.Errorf("a refused ACL LOAD of %q changed the users", content)
		}
		// The loaded users survive ACL SAVE and ACL LOAD.
		for i, c := range []*conn{admin.redis, admin.bloomd} {
			if v, err := c.send("ACL", "SAVE"); err != nil || v.IsError() {
				t.Errorf("%s: ACL SAVE after loading %q: %v %v", c.name, content, v, err)
				continue
			}
			if v, err := c.send("ACL", "LOAD"); err != nil || v.IsError() {
				saved, _ := os.ReadFile([]string{rfile, bfile}[i])
				t.Errorf("%s: ACL LOAD of its own ACL SAVE: %v %v\n%s", c.name, v, err, saved)
				continue
			}
			if again := usersState(c, probes); again != after[i] {
				t.Errorf("%s: ACL SAVE and LOAD changed the users loaded from %q:\n%s\n%s", c.name, content, after[i], again)
			}
		}
		// Back to a file with the admin, for the next case.
		for _, f := range []string{rfile, bfile} {
			if err := os.WriteFile(f, []byte(start), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		admin.must("ACL", "LOAD")
	}

	// What a connection logged in as a user sees after ACL LOAD: the same file again, then one
	// that changes the user, then one without it.
	for _, content := range []string{
		"user app on >pw ~* +@all\n",
		"user app on >pw ~other:* +@all\n",
		"user default on nopass ~* &* +@all\n",
	} {
		for _, f := range []string{rfile, bfile} {
			os.WriteFile(f, []byte("user app on >pw ~* +@all\n"), 0o600)
		}
		admin.must("ACL", "LOAD")
		p := dialPair(t, redisAddr, bloomdAddr)
		p.must("AUTH", "app", "pw")
		for _, f := range []string{rfile, bfile} {
			os.WriteFile(f, []byte(content), 0o600)
		}
		admin.must("ACL", "LOAD")
		rv, rerr := p.redis.send("GET", "app:1")
		bv, berr := p.bloomd.send("GET", "app:1")
		if r, b := outcome(rv, rerr), outcome(bv, berr); r != b {
			t.Errorf("a connection of app after ACL LOAD of %q: redis %s, bloomd %s", content, r, b)
		}
	}
}

// usersState describes a server's users: their names, their ACL LIST lines without the command
// rules (which name categories by how many commands each server has), and ACL DRYRUN of each
// probe for each user.
func usersState(c *conn, probes [][]string) string {
	c.t.Helper()
	var out []string
	for _, e := range c.must("ACL", "LIST").Elems {
		out = append(out, nonCommandRules(e.Text()))
	}
	var names []string
	for _, e := range c.must("ACL", "USERS").Elems {
		names = append(names, e.Text())
	}
	slices.Sort(names)
	for _, n := range names {
		for _, p := range probes {
			out = append(out, n+" "+strings.Join(p, " ")+": "+c.must(append([]string{"ACL", "DRYRUN", n}, p...)...).Text())
		}
	}
	return strings.Join(out, "\n")
}
