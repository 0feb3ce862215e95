package aclcompat

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// ruleCases are ACL SETUSER rule lists, valid and not: Redis and bloomd must answer alike and,
// where the rules are accepted, describe the user alike in ACL GETUSER and ACL LIST.
var ruleCases = []string{
	"on >pw ~* &* +@all",
	"off",
	"on nopass",
	"on >pw1 >pw2 <pw1",
	"on >pw resetpass",
	"on #" + sha256Hex("pw"),
	"on #" + sha256Hex("pw") + " !" + sha256Hex("pw"),
	"on #0123",
	"on #" + strings.ToUpper(sha256Hex("pw")),
	"on >pw nopass",
	"+@all -@dangerous",
	"+@read -get",
	"-@all +get +set",
	"+@all -config +config|get",
	"+config|get +config|set",
	"+@nosuchcategory",
	"+nosuchcommand",
	"-nosuchcommand",
	"+config|nosuchsub",
	"+get|sub",
	"allcommands -flushall",
	"nocommands +ping",
	"~urls:* ~logs:*",
	"%R~cfg:* %W~logs:*",
	"%RW~both:*",
	"%X~bad:*",
	"%~bad:*",
	"allkeys",
	"~x resetkeys ~y",
	"~x allkeys",
	"&news:* &alerts",
	"allchannels",
	"&x resetchannels",
	"reset",
	"on >pw ~* +@all reset",
	"nosuchrule",
	"on off",
	">",
	"<nosuchpass",
	"+@all -@keyspace +del",
	"+@all -@write +set -@string",
	"+@pubsub -subscribe",
	"+@connection -ping",
	"-@all +@admin",
	"+@slow -@fast",
}

// TestACLRules sets each of ruleCases on Redis and on bloomd and compares the replies, ACL
// GETUSER and ACL LIST, and what the user may run: ACL DRYRUN of every command both servers
// have. The command rules of a description are compared by what they allow, not as text: Redis
// describes them with the categories that fit its own command table best, so a description
// names categories and single commands by how many commands each server has ("-@all +get +set"
// on Redis is "-@all +@string -strlen" on bloomd, whose @string holds GET, SET and STRLEN). On
// bloomd, the description set again as rules must give the same description.
func TestACLRules(t *testing.T) {
	redisAddr := startRedis(t)
	bloomdAddr := startBloomd(t, nil)
	admin := dialPair(t, redisAddr, bloomdAddr)
	redisCmds, bloomdCmds := commandTable(admin.redis), commandTable(admin.bloomd)
	var dryruns [][]string // ACL DRYRUN u <command>, for every command of both servers
	for name, b := range bloomdCmds {
		if _, ok := redisCmds[name]; ok && !b.container {
			dryruns = append(dryruns, append([]string{"ACL", "DRYRUN", "u"}, b.sample(name)...))
		}
	}
	slices.SortFunc(dryruns, func(a, b []string) int { return strings.Compare(a[3], b[3]) })
	if len(dryruns) < 80 {
		t.Fatalf("only %d commands in common: the comparison is too thin", len(dryruns))
	}
	t.Logf("each user's permissions compared by ACL DRYRUN of %d commands", len(dryruns))
	for _, rules := range ruleCases {
		admin.must("ACL", "DELUSER", "u")
		args := append([]string{"ACL", "SETUSER", "u"}, strings.Fields(rules)...)
		r, b := admin.redis.do(args...), admin.bloomd.do(args...)
		if r.String() != b.String() {
			t.Errorf("ACL SETUSER u %s: redis %s, bloomd %s", rules, r, b)
			continue
		}
		if r.IsError() {
			// A refused rule changes nothing.
			if r, b := admin.redis.do("ACL", "GETUSER", "u"), admin.bloomd.do("ACL", "GETUSER", "u"); r.String() != b.String() {
				t.Errorf("ACL GETUSER after refusing %q: redis %s, bloomd %s", rules, r, b)
			}
			continue
		}
		if r, b := getUser(admin.redis), getUser(admin.bloomd); r != b {
			t.Errorf("ACL GETUSER after %q:\nredis  %s\nbloomd %s", rules, r, b)
		}
		rl, bl := userLine(admin.redis), userLine(admin.bloomd)
		if r, b := nonCommandRules(rl), nonCommandRules(bl); r != b {
			t.Errorf("ACL LIST after %q:\nredis  %s\nbloomd %s", rules, rl, bl)
		}
		rr, br := admin.redis.pipeline(dryruns), admin.bloomd.pipeline(dryruns)
		for i := range dryruns {
			if rr[i].String() != br[i].String() {
				t.Errorf("after ACL SETUSER u %s: %q: redis %s, bloomd %s", rules, dryruns[i][3:], rr[i], br[i])
			}
		}
		// bloomd's description, set again, describes the same user.
		admin.bloomd.must(append([]string{"ACL", "SETUSER", "u2"}, strings.Fields(strings.TrimPrefix(bl, "user u "))...)...)
		if again := userLineOf(admin.bloomd, "u2"); strings.TrimPrefix(again, "user u2 ") != strings.TrimPrefix(bl, "user u ") {
			t.Errorf("bloomd's description of %q does not describe itself:\n%s\n%s", rules, bl, again)
		}
		admin.bloomd.must("ACL", "DELUSER", "u2")
	}
	// A failed SETUSER on an existing user leaves it as it was.
	admin.must("ACL", "SETUSER", "u", "reset", "on", ">pw", "~k", "+get")
	for _, bad := range []string{"+nosuchcommand", "%X~k", "#0123"} {
		r, b := admin.redis.do("ACL", "SETUSER", "u", "+set", bad), admin.bloomd.do("ACL", "SETUSER", "u", "+set", bad)
		if r.String() != b.String() {
			t.Errorf("ACL SETUSER u +set %s: redis %s, bloomd %s", bad, r, b)
		}
		if r, b := userLine(admin.redis), userLine(admin.bloomd); r != b || strings.Contains(b, "+set") {
			t.Errorf("after a refused SETUSER: redis %s, bloomd %s", r, b)
		}
	}
	for _, args := range [][]string{
		{"ACL", "USERS"},
		{"ACL", "DELUSER", "default"},
		{"ACL", "DELUSER", "u", "nosuchuser"},
		{"ACL", "USERS"},
		{"ACL", "GETUSER", "nosuchuser"},
		{"ACL", "WHOAMI"},
		{"ACL", "CAT", "nosuchcategory"},
		{"ACL", "GENPASS", "0"},
		{"ACL", "NOSUCHSUB"},
		{"ACL", "SETUSER", "bad name"},
		{"ACL", "DRYRUN", "default", "nosuchcommand"},
		{"ACL", "DRYRUN", "default", "GET"},
		{"ACL", "SAVE"},
		{"ACL", "LOAD"},
	} {
		if r, b := admin.redis.do(args...), admin.bloomd.do(args...); r.String() != b.String() {
			t.Errorf("%q: redis %s, bloomd %s", args, r, b)
		}
	}
	// ACL GENPASS: 64 hex digits by default, bits rounded up to whole hex digits.
	for _, bits := range []string{"", "1", "5", "128", "4096"} {
		args := []string{"ACL", "GENPASS"}
		if bits != "" {
			args = append(args, bits)
		}
		r, b := admin.redis.do(args...), admin.bloomd.do(args...)
		if len(r.Str) != len(b.Str) || r.Kind != b.Kind {
			t.Errorf("%q: redis %s, bloomd %s", args, r, b)
		}
	}
}

// userLine returns the ACL LIST line of user u.
func userLine(c *conn) string { return userLineOf(c, "u") }

func userLineOf(c *conn, name string) string {
	c.t.Helper()
	for _, e := range c.must("ACL", "LIST").Elems {
		if s := e.Text(); strings.HasPrefix(s, "user "+name+" ") {
			return s
		}
	}
	return "(none)"
}

// nonCommandRules drops the command rules from a description.
func nonCommandRules(s string) string {
	var out []string
	for _, f := range strings.Fields(s) {
		if f[0] != '+' && f[0] != '-' {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// getUser returns ACL GETUSER u without its command rules (compared by what they allow).
func getUser(c *conn) string {
	c.t.Helper()
	v := c.do("ACL", "GETUSER", "u")
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if v.Elems[i].Text() == "commands" {
			v.Elems[i+1].Str = nil
		}
	}
	return v.String()
}

// pipeline sends every command, then reads every reply.
func (c *conn) pipeline(cmds [][]string) []resp.Value {
	c.t.Helper()
	var buf []byte
	for _, cmd := range cmds {
		bs := make([][]byte, len(cmd))
		for i, a := range cmd {
			bs[i] = []byte(a)
		}
		buf = resp.AppendCommand(buf, bs...)
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	errc := make(chan error, 1)
	go func() { _, err := c.nc.Write(buf); errc <- err }()
	out := make([]resp.Value, len(cmds))
	for i := range cmds {
		v, err := c.read()
		if err != nil {
			c.t.Fatalf("%s: pipeline: %v", c.name, err)
		}
		out[i] = v
	}
	if err := <-errc; err != nil {
		c.t.Fatalf("%s: pipeline: %v", c.name, err)
	}
	return out
}

// TestCommandCategories compares, for every command and subcommand both servers have, the ACL
// categories and key-spec flags COMMAND INFO gives, and what ACL CAT lists in each category.
func TestCommandCategories(t *testing.T) {
	redisAddr := startRedis(t)
	bloomdAddr := startBloomd(t, nil)
	p := dialPair(t, redisAddr, bloomdAddr)
	redisCmds, bloomdCmds := commandTable(p.redis), commandTable(p.bloomd)
	common := 0
	for name, b := range bloomdCmds {
		r, ok := redisCmds[name]
		if !ok {
			continue
		}
		common++
		if !slices.Equal(r.categories, b.categories) {
			t.Errorf("%s: categories: redis %v, bloomd %v", name, r.categories, b.categories)
		}
		if !slices.Equal(r.keyFlags, b.keyFlags) {
			t.Errorf("%s: key-spec flags: redis %v, bloomd %v", name, r.keyFlags, b.keyFlags)
		}
	}
	if common < 40 {
		t.Errorf("only %d commands in common: the comparison is too thin", common)
	}
	t.Logf("%d commands and subcommands compared", common)

	for _, e := range p.redis.must("ACL", "CAT").Elems {
		cat := e.Text()
		inBoth := func(c *conn, other map[string]command) []string {
			var names []string
			for _, n := range c.must("ACL", "CAT", cat).Elems {
				if _, ok := other[strings.ToLower(n.Text())]; ok {
					names = append(names, strings.ToLower(n.Text()))
				}
			}
			sort.Strings(names)
			return names
		}
		r, b := inBoth(p.redis, bloomdCmds), inBoth(p.bloomd, redisCmds)
		if !slices.Equal(r, b) {
			t.Errorf("ACL CAT %s, commands of both: redis %v, bloomd %v", cat, r, b)
		}
	}
}

type command struct {
	arity      int
	container  bool // it has subcommands, and runs none itself
	categories []string
	keyFlags   []string // each key spec's flags, joined by "|"
}

// sample returns the command name (container and subcommand for "container|sub") with as many
// arguments as its arity asks.
func (c command) sample(name string) []string {
	args := strings.Split(name, "|")
	n := c.arity
	if n < 0 {
		n = -n
	}
	for len(args) < n {
		args = append(args, "x")
	}
	return args
}

// commandTable reads COMMAND INFO (every command) into a table by lower-case name, with
// subcommands as "container|sub".
func commandTable(c *conn) map[string]command {
	c.t.Helper()
	out := map[string]command{}
	var add func(v resp.Value)
	add = func(v resp.Value) {
		if len(v.Elems) < 10 {
			return
		}
		cmd := command{arity: int(v.Elems[1].Int), container: len(v.Elems[9].Elems) > 0}
		for _, e := range v.Elems[6].Elems {
			cmd.categories = append(cmd.categories, e.Text())
		}
		sort.Strings(cmd.categories)
		for _, spec := range v.Elems[8].Elems {
			for i := 0; i+1 < len(spec.Elems); i += 2 {
				if spec.Elems[i].Text() == "flags" {
					var f []string
					for _, x := range spec.Elems[i+1].Elems {
						f = append(f, x.Text())
					}
					sort.Strings(f)
					cmd.keyFlags = append(cmd.keyFlags, strings.Join(f, "|"))
				}
			}
		}
		out[strings.ToLower(v.Elems[0].Text())] = cmd
		for _, sub := range v.Elems[9].Elems {
			add(sub)
		}
	}
	for _, v := range c.must("COMMAND").Elems {
		add(v)
	}
	return out
}
