package aclcompat

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
)

// A gridUser is one user of the differential grid: its name, the password it logs in with ("" for
// none: the default user, which needs no AUTH) and its ACL SETUSER rules.
type gridUser struct {
	name, pass string
	rules      string
	login      bool // the user can log in, so its row of commands runs
}

func sha256Hex(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// gridUsers are the users of TestACLGrid, one per kind of rule the grid exercises.
var gridUsers = []gridUser{
	{name: "checker", pass: "checkpw", rules: "on >checkpw +@read ~urls:*", login: true},
	{name: "writer", pass: "writepw", rules: "on >writepw +@read +@write %W~logs:* %R~cfg:*", login: true},
	{name: "safe", pass: "safepw", rules: "on >safepw ~* &* +@all -@dangerous", login: true},
	{name: "cfgreader", pass: "cfgpw", rules: "on >cfgpw ~* +@all -config +config|get", login: true},
	{name: "disabled", pass: "offpw", rules: "off >offpw ~* +@all"},
	{name: "guest", pass: "anything", rules: "on nopass ~public:* +@read +ping +echo", login: true},
	{name: "noflush", pass: "nfpw", rules: "on >nfpw ~secret:* resetkeys allkeys +@all -flushall", login: true},
	{name: "news", pass: "newspw", rules: "on >newspw ~* resetchannels &news:* +@pubsub +@connection +get", login: true},
	{name: "hashed", pass: "hashpw", rules: "on #" + sha256Hex("hashpw") + " ~* +@keyspace -del +@string", login: true},
	{name: "fewcmds", pass: "fewpw", rules: "on >fewpw ~* nocommands +get +client|id +acl|whoami +multi +exec", login: true},
	{name: "subonly", pass: "subpw", rules: "on >subpw allkeys allchannels +@all -@keyspace +type -client +client|getname", login: true},
	// The default user, which new connections are before any AUTH, limited like a public reader.
	{name: "default", rules: "resetkeys ~public:* resetchannels -@all +@read +@connection", login: true},
}

// gridKeys are the keys every keyed command of the grid is tried on.
var gridKeys = []string{"urls:1", "logs:1", "cfg:1", "public:1", "secret:1", "other"}

// gridRenames are the source and destination keys RENAME is tried with: read-only source,
// write-only destination and the other way round.
var gridRenames = [][2]string{{"urls:1", "urls:2"}, {"logs:1", "logs:2"}, {"cfg:1", "logs:2"}, {"logs:1", "cfg:2"}, {"other", "public:2"}}

// keyedCommands run once per grid key; "{k}" stands for the key.
var keyedCommands = [][]string{
	{"GET", "{k}"},
	{"SET", "{k}", "v"},
	{"DEL", "{k}"},
	{"EXISTS", "{k}"},
	{"TYPE", "{k}"},
	{"EXPIRE", "{k}", "1000"},
	{"TTL", "{k}"},
	{"STRLEN", "{k}"},
	{"PTTL", "{k}"},
	{"PERSIST", "{k}"},
	{"UNLINK", "{k}"},
	{"MEMORY", "USAGE", "{k}"},
}

// globalCommands take no key (or one fixed key); they run once per user. Each changes
// nothing that another cell's permission depends on.
var globalCommands = [][]string{
	{"PING"},
	{"ECHO", "hi"},
	{"KEYS", "*"},
	{"SCAN", "0"},
	{"DBSIZE"},
	{"INFO", "server"},
	{"CONFIG", "GET", "slowlog-max-len"},
	{"CONFIG", "SET", "slowlog-max-len", "128"},
	{"CLIENT", "ID"},
	{"CLIENT", "SETNAME", "grid"},
	{"CLIENT", "GETNAME"},
	{"CLIENT", "LIST"},
	{"CLIENT", "KILL", "ID", "987654321"},
	{"PUBLISH", "news:1", "m"},
	{"PUBLISH", "other", "m"},
	{"ACL", "WHOAMI"},
	{"ACL", "LIST"},
	{"ACL", "DRYRUN", "checker", "GET", "urls:1"},
	{"ACL", "LOG"},
	{"SAVE"},
	{"FLUSHDB"},
	{"FLUSHALL"},
	{"SELECT", "0"},
	{"TIME"},
	{"LASTSAVE"},
	{"ROLE"},
	{"COMMAND", "COUNT"},
	{"SLOWLOG", "LEN"},
	{"LATENCY", "LATEST"},
	{"PUBSUB", "CHANNELS"},
	{"ACL", "CAT"},
	{"ACL", "GETUSER", "default"},
	{"CLIENT", "INFO"},
	{"HELLO"},
	{"HELLO", "2"},
	{"AUTH", "nosuchuser", "x"},
	{"DISCARD"},
}

// dryrunOnly are checked with ACL DRYRUN only: running them would end the test.
var dryrunOnly = [][]string{
	{"SHUTDOWN", "NOSAVE"},
	{"SUBSCRIBE", "news:1"},
	{"SUBSCRIBE", "other"},
}

func expand(cmd []string, k string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		out[i] = strings.ReplaceAll(a, "{k}", k)
	}
	return out
}

// gridCells returns every command of a user's row.
func gridCells() [][]string {
	var cells [][]string
	for _, k := range gridKeys {
		for _, c := range keyedCommands {
			cells = append(cells, expand(c, k))
		}
	}
	for _, r := range gridRenames {
		cells = append(cells, []string{"RENAME", r[0], r[1]})
	}
	return append(cells, globalCommands...)
}

// setUpUsers gives both servers the grid's users, plus "admin", which may do everything and
// runs the set-up, ACL DRYRUN and ACL LOG. It returns the admin connections.
func setUpUsers(t *testing.T, redisAddr, bloomdAddr string) pair {
	t.Helper()
	admin := dialPair(t, redisAddr, bloomdAddr)
	admin.must("ACL", "SETUSER", "admin", "on", ">adminpw", "~*", "&*", "+@all")
	admin.must("AUTH", "admin", "adminpw")
	for _, u := range gridUsers {
		admin.must(append([]string{"ACL", "SETUSER", u.name}, strings.Fields(u.rules)...)...)
	}
	return admin
}

// login opens a pair of connections as u.
func login(t *testing.T, redisAddr, bloomdAddr string, u gridUser) pair {
	t.Helper()
	p := dialPair(t, redisAddr, bloomdAddr)
	if u.name != "default" {
		p.must("AUTH", u.name, u.pass)
	}
	return p
}

// aclLog returns the fields of ACL LOG's entries that do not depend on time or on the
// connection: count, reason, context, object and username, newest first.
func aclLog(c *conn) []string {
	c.t.Helper()
	v := c.must("ACL", "LOG", "1000") // every entry, not the newest 10
	var out []string
	for _, e := range v.Elems {
		fields := map[string]string{}
		for i := 0; i+1 < len(e.Elems); i += 2 {
			fields[e.Elems[i].Text()] = e.Elems[i+1].Text()
		}
		out = append(out, fmt.Sprintf("count=%s reason=%s context=%s object=%s username=%s",
			fields["count"], fields["reason"], fields["context"], fields["object"], fields["username"]))
	}
	return out
}

// compareLogs requires the same ACL LOG on both servers, then clears both. It returns the
// number of entries.
func compareLogs(t *testing.T, admin pair, what string) int {
	t.Helper()
	r, b := aclLog(admin.redis), aclLog(admin.bloomd)
	if strings.Join(r, "\n") != strings.Join(b, "\n") {
		t.Errorf("ACL LOG after %s differs:\nredis:\n  %s\nbloomd:\n  %s", what, strings.Join(r, "\n  "), strings.Join(b, "\n  "))
	}
	admin.must("ACL", "LOG", "RESET")
	return len(r)
}

// seed writes the grid's keys on both servers as admin.
func seed(admin pair) {
	for _, k := range append(append([]string(nil), gridKeys...), "urls:2", "logs:2", "cfg:2", "public:2") {
		admin.must("SET", k, "v")
	}
}

// A gridRow is one user's row of the grid, in RESP2 or RESP3.
type gridRow struct {
	user  gridUser
	resp3 bool
}

func gridRows() []gridRow {
	var rows []gridRow
	for _, resp3 := range []bool{false, true} {
		for _, u := range gridUsers {
			if u.login {
				rows = append(rows, gridRow{u, resp3})
			}
		}
	}
	return rows
}

// TestACLGrid gives Redis 7.0 and bloomd the same users and sends both the same commands as
// each user, in RESP2 and in RESP3: every command must be allowed or denied alike, denials with
// the same error text;
// ACL DRYRUN must say the same for every cell; the denials must leave the same ACL LOG entries.
func TestACLGrid(t *testing.T) {
	redisAddr := startRedis(t)
	bloomdAddr := startBloomd(t, nil)
	admin := setUpUsers(t, redisAddr, bloomdAddr)
	admin.must("ACL", "LOG", "RESET")

	cells := gridCells()
	checked, denied, logged := 0, 0, 0
	deniedBy := map[string]int{} // the sum of Redis's ACL LOG counts, by reason
	for _, row := range gridRows() {
		u := row.user
		seed(admin)
		p := login(t, redisAddr, bloomdAddr, u)
		if row.resp3 {
			// In RESP3 where the user may switch to it.
			rv, rerr := p.redis.send("HELLO", "3")
			bv, berr := p.bloomd.send("HELLO", "3")
			if r, b := decision(rv, rerr), decision(bv, berr); r != b {
				t.Errorf("%s: HELLO 3: redis %s, bloomd %s", u.name, r, b)
			} else if r != "allowed" {
				continue
			}
		}
		for _, cmd := range cells {
			rv, rerr := p.redis.send(cmd...)
			bv, berr := p.bloomd.send(cmd...)
			r, b := decision(rv, rerr), decision(bv, berr)
			if r != b {
				t.Errorf("%s: %q: redis %s, bloomd %s (bloomd replied %s)", u.name, cmd, r, b, outcome(bv, berr))
			}
			if rerr != nil || berr != nil {
				t.Fatalf("%s: %q closed the connection (redis %v, bloomd %v)", u.name, cmd, rerr, berr)
			}
			checked++
			if r != "allowed" {
				denied++
			}
		}
		compareMulti(t, p, u.name)
		for _, e := range aclLog(admin.redis) {
			var count int
			var reason string
			fmt.Sscanf(e, "count=%d reason=%s", &count, &reason)
			deniedBy[reason] += count
		}
		logged += compareLogs(t, admin, "the commands of "+u.name)
	}
	if denied == 0 || denied == checked {
		t.Errorf("%d of %d cells denied: the grid does not test both outcomes", denied, checked)
	}
	if logged == 0 {
		t.Error("no ACL LOG entries were compared")
	}
	t.Logf("%d cells, %d denied by Redis and bloomd alike, %d ACL LOG entries", checked, denied, logged)
	// bloomd counts the denials in INFO as Redis 7.2 does (Redis 7.0 has no such fields): as
	// many as Redis's ACL LOG counted.
	info := admin.bloomd.must("INFO", "stats").Text()
	for reason, field := range map[string]string{"auth": "acl_access_denied_auth", "command": "acl_access_denied_cmd", "key": "acl_access_denied_key", "channel": "acl_access_denied_channel"} {
		if got, want := infoField(info, field), fmt.Sprint(deniedBy[reason]); got != want || want == "0" {
			t.Errorf("bloomd's INFO %s = %q; Redis logged %s denials for %s", field, got, want, reason)
		}
	}

	// ACL DRYRUN for every user (disabled ones too) and every cell, plus the commands the grid
	// cannot run.
	for _, u := range append(gridUsers, gridUser{name: "admin"}) {
		for _, cmd := range append(append([][]string(nil), cells...), dryrunOnly...) {
			args := append([]string{"ACL", "DRYRUN", u.name}, cmd...)
			r, b := admin.redis.do(args...), admin.bloomd.do(args...)
			if r.String() != b.String() {
				t.Errorf("%q: redis %s, bloomd %s", args, r, b)
			}
		}
	}
	if r, b := admin.redis.do("ACL", "DRYRUN", "nosuchuser", "GET", "k"), admin.bloomd.do("ACL", "DRYRUN", "nosuchuser", "GET", "k"); r.String() != b.String() {
		t.Errorf("ACL DRYRUN of a missing user: redis %s, bloomd %s", r, b)
	}
	if n := compareLogs(t, admin, "ACL DRYRUN"); n != 0 {
		t.Errorf("ACL DRYRUN left %d ACL LOG entries", n)
	}
}

// compareMulti runs a transaction with one command the user may run and others it may not:
// the queued replies and EXEC's outcome must match.
func compareMulti(t *testing.T, p pair, user string) {
	t.Helper()
	for _, cmd := range [][]string{{"MULTI"}, {"GET", "urls:1"}, {"SET", "logs:1", "v"}, {"FLUSHALL"}, {"EXEC"},
		{"MULTI"}, {"EXEC", "extra"}, {"EXEC"}} {
		rv, rerr := p.redis.send(cmd...)
		bv, berr := p.bloomd.send(cmd...)
		if r, b := multiOutcome(rv, rerr), multiOutcome(bv, berr); r != b {
			t.Errorf("%s in MULTI: %q: redis %s, bloomd %s", user, cmd, r, b)
		}
	}
}

// multiOutcome is decision, keeping the text of MULTI's and of a queued command's reply.
func multiOutcome(v resp.Value, err error) string {
	if err == nil && v.Kind == '+' {
		return string(v.Str) // OK, QUEUED
	}
	return decision(v, err)
}

// TestACLAuth compares what AUTH and HELLO answer for right and wrong passwords, missing and
// disabled users, and the one-argument AUTH of the default user, and what each attempt
// leaves in ACL LOG.
func TestACLAuth(t *testing.T) {
	redisAddr := startRedis(t)
	bloomdAddr := startBloomd(t, nil)
	admin := setUpUsers(t, redisAddr, bloomdAddr)
	admin.must("ACL", "LOG", "RESET")
	attempts := [][]string{
		{"AUTH", "checker", "checkpw"},
		{"AUTH", "checker", "wrong"},
		{"AUTH", "disabled", "offpw"},
		{"AUTH", "nosuchuser", "pw"},
		{"AUTH", "guest", "any password"},
		{"AUTH", "hashed", "hashpw"},
		{"AUTH", "hashed", sha256Hex("hashpw")},
		{"AUTH", "somepassword"},
		{"AUTH", "a", "b", "c"},
		{"HELLO", "2", "AUTH", "checker", "checkpw"},
		{"HELLO", "3", "AUTH", "checker", "wrong"},
		{"HELLO", "2", "AUTH", "disabled", "offpw"},
		{"HELLO", "2", "AUTH", "checker"},
		{"HELLO", "2", "AUTH", "checker", "checkpw", "SETNAME", "c1"},
		{"HELLO", "2", "AUTH", "checker", "wrong", "SETNAME", "c2"},
		{"HELLO", "4", "AUTH", "checker", "checkpw"},
		{"HELLO", "2", "AUTH", "guest", "whatever"},
		{"CLIENT", "GETNAME"},
		{"AUTH", "default", "anything"},
		{"ACL", "WHOAMI"},
	}
	p := dialPair(t, redisAddr, bloomdAddr)
	for _, a := range attempts {
		rv, rerr := p.redis.send(a...)
		bv, berr := p.bloomd.send(a...)
		if r, b := authOutcome(rv, rerr), authOutcome(bv, berr); r != b {
			t.Errorf("%q: redis %s, bloomd %s", a, r, b)
		}
	}
	// After failed attempts the connection is still the user it last logged in as.
	if r, b := p.redis.do("ACL", "WHOAMI"), p.bloomd.do("ACL", "WHOAMI"); r.String() != b.String() {
		t.Errorf("ACL WHOAMI after the attempts: redis %s, bloomd %s", r, b)
	}
	if n := compareLogs(t, admin, "the AUTH and HELLO attempts"); n == 0 {
		t.Error("the failed AUTH attempts left no ACL LOG entries")
	}

	// The log keeps the newest acllog-max-len entries; ACL LOG n shows the newest n.
	admin.must("CONFIG", "SET", "acllog-max-len", "2")
	for _, u := range []string{"x1", "x2", "x3"} {
		p.redis.do("AUTH", u, "pw")
		p.bloomd.do("AUTH", u, "pw")
	}
	for _, args := range [][]string{{"ACL", "LOG", "1"}, {"ACL", "LOG", "0"}, {"ACL", "LOG", "-1"}, {"ACL", "LOG", "x"}, {"CONFIG", "GET", "acllog-max-len"}} {
		r, b := admin.redis.do(args...), admin.bloomd.do(args...)
		if !r.IsError() && args[1] == "LOG" {
			r, b = resp.Value{Kind: '+', Str: []byte(fmt.Sprint(len(r.Elems)))}, resp.Value{Kind: '+', Str: []byte(fmt.Sprint(len(b.Elems)))}
		}
		if r.String() != b.String() {
			t.Errorf("%q: redis %s, bloomd %s", args, r, b)
		}
	}
	compareLogs(t, admin, "more failures than acllog-max-len")
}

// authOutcome keeps the whole text of an error and reduces a successful reply (OK, or HELLO's
// map, which names the server) to "ok".
func authOutcome(v resp.Value, err error) string {
	switch {
	case err != nil:
		return "(closed)"
	case v.IsError():
		return v.String()
	case v.Kind == '$' || v.Kind == '+' && string(v.Str) != "OK":
		return v.String() // ACL WHOAMI's name
	default:
		return "ok"
	}
}

// TestACLSubscribe checks channel permissions where a command changes the connection:
// SUBSCRIBE and PSUBSCRIBE, on connections of their own.
func TestACLSubscribe(t *testing.T) {
	redisAddr := startRedis(t)
	bloomdAddr := startBloomd(t, nil)
	setUpUsers(t, redisAddr, bloomdAddr)
	for _, u := range gridUsers {
		if !u.login {
			continue
		}
		for _, cmd := range [][]string{{"SUBSCRIBE", "news:1"}, {"SUBSCRIBE", "other"}, {"SUBSCRIBE", "news:1", "other"}, {"PSUBSCRIBE", "news:*"}, {"PSUBSCRIBE", "*"}} {
			p := login(t, redisAddr, bloomdAddr, u)
			rv, rerr := p.redis.send(cmd...)
			bv, berr := p.bloomd.send(cmd...)
			if r, b := outcome(rv, rerr), outcome(bv, berr); r != b {
				t.Errorf("%s: %q: redis %s, bloomd %s", u.name, cmd, r, b)
			}
			p.redis.nc.Close()
			p.bloomd.nc.Close()
		}
	}
}
