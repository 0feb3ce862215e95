package server

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// redactionSteps are the commands whose secrets Redis 7.0 redacts, each sent on a connection of
// its own (so every one is timed for the slow log). A step that starts with "@pw" runs after
// "AUTH rpass" on its connection.
var redactionSteps = [][]string{
	{"ACL", "SETUSER", "u", "on", ">upass", "+@all", "~*", "&*"},
	{"AUTH", "u", "upass"},
	{"AUTH", "upass"},
	{"AUTH", "u", "wrongpass"},
	{"HELLO", "3", "AUTH", "u", "upass"},
	{"HELLO", "3", "AUTH", "u", "wrongpass"},
	{"HELLO", "3", "SETNAME", "x", "AUTH", "u", "upass"},
	{"CONFIG", "SET", "masterauth", "mapass"},
	{"CONFIG", "SET", "masteruser", "muser", "maxmemory", "0"},
	{"CONFIG", "SET", "requirepass", "rpass"},
	{"@pw", "CONFIG", "SET", "requirepass", ""},
	{"ACL", "SETUSER", "v", "on", ">vpass", "bogus"},
}

// redactionFeed and redactionSlowlog are what redis-server 7.0.15 shows for redactionSteps, as
// recorded from it (MONITOR lines without time and client; SLOWLOG GET -1 entries, newest
// first, as "client-name|args"). The test requires them of bloomd, and of redis-server when it
// is installed.
var redactionFeed = []string{
	`"AUTH" "(redacted)" "(redacted)"`,
	`"AUTH" "(redacted)"`,
	`"AUTH" "(redacted)" "(redacted)"`,
	`"HELLO" "3" "AUTH" "(redacted)" "(redacted)"`,
	`"HELLO" "3" "AUTH" "(redacted)" "(redacted)"`,
	`"HELLO" "3" "SETNAME" "x" "AUTH" "(redacted)" "(redacted)"`,
	`"AUTH" "(redacted)"`,
	`"PING" "end"`,
}

var redactionSlowlog = []string{
	`|"PING" "end"`,
	`|"ACL" "SETUSER" "(redacted)" "(redacted)" "(redacted)" "(redacted)"`,
	`|"CONFIG" "SET" "requirepass" "(redacted)"`,
	`|"AUTH" "(redacted)"`,
	`|"CONFIG" "SET" "requirepass" "(redacted)"`,
	`|"CONFIG" "SET" "masteruser" "(redacted)" "maxmemory" "0"`,
	`|"CONFIG" "SET" "masterauth" "(redacted)"`,
	`x|"HELLO" "3" "SETNAME" "x" "AUTH" "(redacted)" "(redacted)"`,
	`|"HELLO" "3" "AUTH" "(redacted)" "(redacted)"`,
	`|"HELLO" "3" "AUTH" "(redacted)" "(redacted)"`,
	`|"AUTH" "(redacted)" "(redacted)"`,
	`|"AUTH" "(redacted)"`,
	`|"AUTH" "(redacted)" "(redacted)"`,
	`|"ACL" "SETUSER" "(redacted)" "(redacted)" "(redacted)" "(redacted)" "(redacted)" "(redacted)"`,
	`|"SLOWLOG" "RESET"`,
}

// monitorLine matches one line of MONITOR's feed: time, database and client, then the arguments.
var monitorLine = regexp.MustCompile(`^\+\d+\.\d{6} \[0 [^\]]+\] (.*)\r\n$`)

// runRedactionSteps runs steps against the server at addr and returns MONITOR's feed (the
// arguments of each line) and SLOWLOG GET -1 (client name and arguments of each entry).
func runRedactionSteps(t *testing.T, addr string, steps [][]string) (feed, slow []string) {
	t.Helper()
	mc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	fmt.Fprint(mc, "MONITOR\r\n")
	br := bufio.NewReader(mc)
	mc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := br.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	admin := dial(t, addr)
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"CONFIG", "SET", "slowlog-max-len", "1000"}, {"SLOWLOG", "RESET"}} {
		if v := admin.do(cmd...); v.IsError() {
			t.Fatalf("%q: %v", cmd, v)
		}
	}
	for _, step := range steps {
		c := dial(t, addr)
		if step[0] == "@pw" {
			if v := c.do("AUTH", "rpass"); v.IsError() {
				t.Fatalf("AUTH rpass: %v", v)
			}
			step = step[1:]
		}
		c.do(step...)
		c.nc.Close()
	}
	end := dial(t, addr)
	end.do("PING", "end")
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading MONITOR's feed after %q: %v", feed, err)
		}
		m := monitorLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("MONITOR line %q", line)
		}
		feed = append(feed, m[1])
		if m[1] == `"PING" "end"` {
			break
		}
	}
	v := end.do("SLOWLOG", "GET", "-1")
	for _, e := range v.Elems {
		var args []string
		for _, a := range e.Elems[3].Elems {
			args = append(args, fmt.Sprintf("%q", a.Str))
		}
		slow = append(slow, string(e.Elems[5].Str)+"|"+strings.Join(args, " "))
	}
	return feed, slow
}

// TestRedactionMatchesRedis: the commands Redis 7.0 redacts show "(redacted)" for their secrets
// in MONITOR's feed and in SLOWLOG GET, and admin commands (CONFIG SET, ACL SETUSER) stay out of
// MONITOR, exactly as redis-server 7.0.15 shows them; the same steps run against a real
// redis-server when one is installed.
func TestRedactionMatchesRedis(t *testing.T) { forEachIOMode(t, testRedactionMatchesRedis) }

func testRedactionMatchesRedis(t *testing.T) {
	check := func(who string, feed, slow []string) {
		t.Helper()
		if !slices.Equal(feed, redactionFeed) {
			t.Errorf("%s: MONITOR's feed\n%s\nwant\n%s", who, strings.Join(feed, "\n"), strings.Join(redactionFeed, "\n"))
		}
		if !slices.Equal(slow, redactionSlowlog) {
			t.Errorf("%s: SLOWLOG GET -1\n%s\nwant\n%s", who, strings.Join(slow, "\n"), strings.Join(redactionSlowlog, "\n"))
		}
		for _, secret := range []string{"upass", "wrongpass", "mapass", "muser", "rpass", "vpass"} {
			if strings.Contains(strings.Join(feed, "\n")+strings.Join(slow, "\n"), secret) {
				t.Errorf("%s shows %q", who, secret)
			}
		}
	}
	s := startServer(t, func(c *Config) { c.Dir = t.TempDir() })
	feed, slow := runRedactionSteps(t, s.addr(), redactionSteps)
	check("bloomd", feed, slow)

	rs := redistest.New(t, nil)
	feed, slow = runRedactionSteps(t, rs.Addr, redactionSteps)
	check("redis-server", feed, slow)
}

// TestRedactionBeyondRedis: malformed commands whose secrets redis-server 7.0 shows in clear
// (it redacts only once a command has parsed up to them) are redacted by bloomd too.
func TestRedactionBeyondRedis(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Dir = t.TempDir() })
	steps := [][]string{
		{"AUTH", "a", "s1", "s2"},
		{"HELLO", "4", "AUTH", "u", "s3"},
		{"HELLO", "3", "FOO", "AUTH", "u", "s4"},
		{"HELLO", "3", "AUTH", "s5"},
		{"CONFIG", "SET", "requirepass", "s6", "masterauth"},
	}
	feed, slow := runRedactionSteps(t, s.addr(), steps)
	all := strings.Join(feed, "\n") + "\n" + strings.Join(slow, "\n")
	for _, secret := range []string{"s1", "s2", "s3", "s4", "s5", "s6"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q shown:\n%s", secret, all)
		}
	}
	if !strings.Contains(all, `"AUTH" "(redacted)" "(redacted)" "(redacted)"`) || !strings.Contains(all, `"HELLO" "3" "FOO" "AUTH" "(redacted)" "(redacted)"`) {
		t.Errorf("the malformed commands are not shown redacted:\n%s", all)
	}
}
