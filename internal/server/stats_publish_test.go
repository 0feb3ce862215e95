package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commandNumbers reads INFO ALL's total_commands_processed, each command's calls
// (commandstats) and the commands that have latency percentiles (latencystats).
func commandNumbers(t *testing.T, c *rawClient) (total int64, calls map[string]int64, latency map[string]bool) {
	t.Helper()
	info := string(c.do("INFO", "ALL").Str)
	calls, latency = map[string]int64{}, map[string]bool{}
	reCalls := regexp.MustCompile(`(?m)^cmdstat_([^:]+):calls=(\d+),`)
	for _, m := range reCalls.FindAllStringSubmatch(info, -1) {
		calls[m[1]], _ = strconv.ParseInt(m[2], 10, 64)
	}
	reLat := regexp.MustCompile(`(?m)^latency_percentiles_usec_([^:]+):`)
	for _, m := range reLat.FindAllStringSubmatch(info, -1) {
		latency[m[1]] = true
	}
	reTotal := regexp.MustCompile(`(?m)^total_commands_processed:(\d+)`)
	if m := reTotal.FindStringSubmatch(info); m != nil {
		total, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return total, calls, latency
}

// A connection that runs commands and then falls quiet has them counted within a bounded time:
// its calls in commandstats, beside the latency percentiles its calls recorded as they ran, and
// in total_commands_processed. Event loops used to publish a connection's counts only with its
// next batch (or every 100 ms while it kept sending), so a quiet connection's last commands
// showed latency percentiles with no calls, for ever.
func TestStatsOfQuietConnection(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		a, b := dial(t, s.addr()), dial(t, s.addr())
		a.do("PING") // a's first batch: published at once
		a.do("BF.MADD", "f", "1", "2")
		a.do("BF.MADD", "f", "3", "4")
		a.do("BF.EXISTS", "f", "1")
		// a stays open and quiet. INFO (from b) must come to show its calls.
		var total int64
		var calls map[string]int64
		var latency map[string]bool
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			total, calls, latency = commandNumbers(t, b)
			if calls["bf.madd"] == 2 && calls["bf.exists"] == 1 {
				break
			}
		}
		if calls["ping"] != 1 || calls["bf.madd"] != 2 || calls["bf.exists"] != 1 {
			t.Fatalf("after 10 s, commandstats counts ping %d, bf.madd %d, bf.exists %d calls; want 1, 2, 1",
				calls["ping"], calls["bf.madd"], calls["bf.exists"])
		}
		for name := range latency {
			if calls[name] == 0 {
				t.Errorf("latencystats has %s, which commandstats counts no call of", name)
			}
		}
		// total_commands_processed counts every call of commandstats, and the INFO calls of b
		// (the one running is counted in the total before commandstats, as it has not ended).
		var sum int64
		for _, n := range calls {
			sum += n
		}
		if total != sum+1 {
			t.Errorf("total_commands_processed %d, commandstats' calls add up to %d (+1 for the INFO running)", total, sum)
		}
	})
}

// Commands run through Exec (which loads the data files) count in no statistic, as Redis's
// loading of its AOF: a restarted server showed the log's commands in commandstats but not in
// total_commands_processed.
func TestStatsOfLoading(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, func(c *Config) { c.AppendOnly = true })
	c := dial(t, s.addr())
	c.do("BF.ADD", "f", "x")
	c.do("CF.ADD", "g", "x")
	c.do("BF.ADD", "f") // arity: rejected, not logged
	stopDurable(t, s, false)

	s = startDurable(t, dir, func(c *Config) { c.AppendOnly = true })
	c = dial(t, s.addr())
	if v := c.do("BF.EXISTS", "f", "x"); v.Int != 1 {
		t.Fatalf("after the restart BF.EXISTS f x = %v", v)
	}
	s.Exec([]byte("BF.ADD"), []byte("h"), []byte("y"))
	s.Exec([]byte("BF.ADD"), []byte("h")) // an error reply: counted nowhere either
	total, calls, latency := commandNumbers(t, c)
	want := map[string]int64{"bf.exists": 1}
	for name, n := range calls {
		if n != want[name] {
			t.Errorf("commandstats counts %d calls of %s; want only the client's BF.EXISTS", n, name)
		}
	}
	for name := range latency {
		if name != "bf.exists" {
			t.Errorf("latencystats has %s", name)
		}
	}
	if total != 2 { // BF.EXISTS and this INFO
		t.Errorf("total_commands_processed %d, want 2", total)
	}
	if info := string(c.do("INFO", "errorstats").Str); strings.Contains(info, "errorstat_") {
		t.Errorf("errorstats counts errors of loading:\n%s", info)
	}
}
