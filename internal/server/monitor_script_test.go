package server

import (
	"bufio"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

// TestMonitorShowsScripts: MONITOR shows an EVAL once, ahead of the commands its script runs,
// which it attributes to the "lua" client; an EVAL that fails (unknown SHA, bad key count) is
// shown too. The same steps run against a real redis-server when one is installed.
func TestMonitorShowsScripts(t *testing.T) {
	want := []string{
		`client "eval" "return redis.call('set','a','b')" "0"`,
		`lua "set" "a" "b"`,
		`client "evalsha" "0000000000000000000000000000000000000000" "0"`,
		`client "eval" "return 1" "notanumber"`,
		`client "ping" "end"`,
	}
	line := regexp.MustCompile(`^\+\d+\.\d{6} \[0 ([^\]]+)\] (.*)\r\n$`)
	run := func(t *testing.T, addr string) []string {
		mon := dial(t, addr)
		if v := mon.do("MONITOR"); v.Text() != "OK" {
			t.Fatalf("MONITOR: %v", v)
		}
		br := bufio.NewReader(mon.nc)
		c := dial(t, addr)
		c.do("EVAL", "return redis.call('set','a','b')", "0")
		c.do("EVALSHA", strings.Repeat("0", 40), "0")
		c.do("EVAL", "return 1", "notanumber")
		c.do("PING", "end")
		var feed []string
		for len(feed) < 20 {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("MONITOR's feed after %q: %v", feed, err)
			}
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("MONITOR line %q", l)
			}
			who := m[1]
			if who != "lua" {
				who = "client"
			}
			feed = append(feed, who+" "+strings.ToLower(m[2][:strings.IndexByte(m[2]+" ", ' ')])+m[2][strings.IndexByte(m[2]+" ", ' '):])
			if strings.HasPrefix(m[2], `"PING" "end"`) || strings.HasPrefix(m[2], `"ping" "end"`) {
				break
			}
		}
		return feed
	}
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		if got := run(t, s.addr()); !slices.Equal(got, want) {
			t.Errorf("bloomd's MONITOR feed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("redis-server", func(t *testing.T) {
		rs := redistest.New(t, nil)
		if got := run(t, rs.Addr); !slices.Equal(got, want) {
			t.Errorf("redis-server's MONITOR feed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
