package server

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statField returns the value of name in an INFO reply, or "".
func statField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

func TestCommandStats(t *testing.T) { forEachIOMode(t, testCommandStats) }

func testCommandStats(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	for i := range 5 {
		c.do("BF.ADD", "f", strconv.Itoa(i))
	}
	c.do("BF.EXISTS", "f", "1")
	c.do("SET", "s", "v")
	c.do("BF.ADD", "s", "x") // WRONGTYPE: a failed call
	c.do("BF.ADD")           // wrong arity: rejected before it runs
	c.do("NOSUCH", "a")      // unknown: counted in errorstats only
	c.do("CLIENT", "NOSUCH") // unknown subcommand: rejected

	info := string(c.do("INFO", "commandstats").Str)
	re := regexp.MustCompile(`cmdstat_bf\.add:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+),rejected_calls=(\d+),failed_calls=(\d+)`)
	m := re.FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO commandstats lacks bf.add:\n%s", info)
	}
	if m[1] != "6" || m[4] != "1" || m[5] != "1" {
		t.Errorf("bf.add: calls=%s rejected=%s failed=%s, want 6, 1, 1", m[1], m[4], m[5])
	}
	if !strings.Contains(info, "cmdstat_bf.exists:calls=1,") || !strings.Contains(info, "cmdstat_set:calls=1,") ||
		!strings.Contains(info, "cmdstat_client:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0") {
		t.Errorf("INFO commandstats:\n%s", info)
	}
	errs := string(c.do("INFO", "errorstats").Str)
	if !strings.Contains(errs, "errorstat_WRONGTYPE:count=1\r\n") || !strings.Contains(errs, "errorstat_ERR:count=3\r\n") {
		t.Errorf("INFO errorstats:\n%s", errs)
	}
	stats := string(c.do("INFO", "stats").Str)
	if statField(stats, "total_error_replies") != "4" || statField(stats, "total_rejected_calls") != "3" {
		t.Errorf("INFO stats: total_error_replies=%s total_rejected_calls=%s", statField(stats, "total_error_replies"), statField(stats, "total_rejected_calls"))
	}
	lat := string(c.do("INFO", "latencystats").Str)
	if !regexp.MustCompile(`latency_percentiles_usec_bf\.add:p50=[\d.]+,p99=[\d.]+,p99\.9=[\d.]+\r\n`).MatchString(lat) {
		t.Errorf("INFO latencystats:\n%s", lat)
	}
	// INFO with no argument leaves commandstats and latencystats out, as Redis does; ALL has them.
	if def := string(c.do("INFO").Str); strings.Contains(def, "cmdstat_") || !strings.Contains(def, "# Errorstats") || !strings.Contains(def, "# CPU") {
		t.Errorf("INFO (default) sections wrong:\n%s", def)
	}
	if all := string(c.do("INFO", "ALL").Str); !strings.Contains(all, "cmdstat_bf.add") || !strings.Contains(all, "latency_percentiles_usec_") {
		t.Error("INFO ALL lacks commandstats or latencystats")
	}

	if v := c.do("CONFIG", "RESETSTAT"); string(v.Str) != "OK" {
		t.Fatalf("CONFIG RESETSTAT: %v", v)
	}
	if info := string(c.do("INFO", "commandstats").Str); strings.Contains(info, "bf.add") {
		t.Errorf("after CONFIG RESETSTAT:\n%s", info)
	}
	if errs := string(c.do("INFO", "errorstats").Str); strings.Contains(errs, "errorstat_") {
		t.Errorf("errorstats after CONFIG RESETSTAT:\n%s", errs)
	}
}

func TestSlowlog(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	if v := c.do("SLOWLOG", "LEN"); v.Int != 0 {
		t.Fatalf("SLOWLOG LEN on a fresh server: %v", v)
	}
	c.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	c.do("CONFIG", "SET", "slowlog-max-len", "3")
	c.do("CLIENT", "SETNAME", "tester")
	long := strings.Repeat("x", 200)
	args := []string{"BF.MADD", "f", long}
	for i := range 40 {
		args = append(args, strconv.Itoa(i))
	}
	c.do(args...)
	c.do("BF.EXISTS", "f", "1")
	if v := c.do("SLOWLOG", "LEN"); v.Int != 3 {
		t.Errorf("SLOWLOG LEN = %d, want the max-len 3", v.Int)
	}
	// The log holds BF.MADD, BF.EXISTS and the SLOWLOG LEN above (logged too, as in Redis).
	got := c.do("SLOWLOG", "GET", "3")
	if len(got.Elems) != 3 || string(got.Elems[0].Elems[3].Elems[0].Str) != "SLOWLOG" {
		t.Fatalf("SLOWLOG GET 3: %v", got)
	}
	newest, older := got.Elems[1], got.Elems[2]
	if len(newest.Elems) != 6 || newest.Elems[0].Int != older.Elems[0].Int+1 ||
		string(newest.Elems[3].Elems[0].Str) != "BF.EXISTS" || string(newest.Elems[5].Str) != "tester" ||
		!strings.HasPrefix(string(newest.Elems[4].Str), "127.0.0.1:") {
		t.Errorf("BF.EXISTS entry: %v", newest)
	}
	madd := older.Elems[3].Elems
	if len(madd) != 32 || string(madd[2].Str) != long[:128]+"... (72 more bytes)" || string(madd[31].Str) != "... (12 more arguments)" {
		t.Errorf("BF.MADD entry's arguments: %d, %q, %q", len(madd), madd[2].Str, madd[len(madd)-1].Str)
	}
	if v := c.do("SLOWLOG", "GET", "-2"); !v.IsError() {
		t.Errorf("SLOWLOG GET -2: %v", v)
	}
	c.do("SLOWLOG", "RESET")
	if v := c.do("SLOWLOG", "LEN"); v.Int > 1 { // the RESET itself may be logged
		t.Errorf("SLOWLOG LEN after RESET = %d", v.Int)
	}
	c.do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	c.do("SLOWLOG", "RESET")
	c.do("PING")
	if v := c.do("SLOWLOG", "LEN"); v.Int != 0 {
		t.Errorf("slow log off, SLOWLOG LEN = %d", v.Int)
	}
}

// TestExporterCommands sends what prometheus-redis-exporter sends on each scrape, with and without
// a password: none of it may fail.
func TestExporterCommands(t *testing.T) {
	for _, pass := range []string{"", "sekret"} {
		s := startServer(t, func(c *Config) { c.Requirepass = pass })
		c := dial(t, s.addr())
		var cmds [][]string
		if pass != "" {
			cmds = append(cmds, []string{"AUTH", pass})
		}
		cmds = append(cmds, []string{"CLIENT", "SETNAME", "redis_exporter"}, []string{"CONFIG", "GET", "*"},
			[]string{"INFO", "ALL"}, []string{"LATENCY", "LATEST"}, []string{"SLOWLOG", "LEN"}, []string{"SLOWLOG", "GET", "1"},
			[]string{"LATENCY", "HISTOGRAM"}[:0])
		for _, cmd := range cmds {
			if len(cmd) == 0 {
				continue
			}
			if v := c.do(cmd...); v.IsError() {
				t.Errorf("password %q: %v: %v", pass, cmd, v)
			}
		}
		cfg := c.do("CONFIG", "GET", "*")
		if len(cfg.Elems) < 40 || len(cfg.Elems)%2 != 0 {
			t.Errorf("CONFIG GET *: %d elements", len(cfg.Elems))
		}
	}
}

func TestLatencyAndMemoryCommands(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	if v := c.do("LATENCY", "LATEST"); v.IsError() || len(v.Elems) != 0 {
		t.Errorf("LATENCY LATEST with the monitor off: %v", v)
	}
	// Record a spike directly: no command is reliably slower than a millisecond.
	s.mstats.Latency.SetThreshold(1)
	s.mstats.Latency.Add("command", int64(5*time.Millisecond))
	v := c.do("LATENCY", "LATEST")
	if len(v.Elems) != 1 || string(v.Elems[0].Elems[0].Str) != "command" || v.Elems[0].Elems[2].Int != 5 || v.Elems[0].Elems[3].Int != 5 {
		t.Errorf("LATENCY LATEST: %v", v)
	}
	if v := c.do("LATENCY", "HISTORY", "command"); len(v.Elems) != 1 || v.Elems[0].Elems[1].Int != 5 {
		t.Errorf("LATENCY HISTORY command: %v", v)
	}
	if v := c.do("LATENCY", "RESET"); v.Int != 1 {
		t.Errorf("LATENCY RESET: %v", v)
	}
	c.do("BF.ADD", "f", "x")
	ms := c.do("MEMORY", "STATS")
	found := map[string]bool{}
	for i := 0; i+1 < len(ms.Elems); i += 2 {
		found[string(ms.Elems[i].Str)] = true
		if string(ms.Elems[i].Str) == "keys.count" && ms.Elems[i+1].Int != 1 {
			t.Errorf("MEMORY STATS keys.count = %v", ms.Elems[i+1])
		}
	}
	for _, k := range []string{"peak.allocated", "total.allocated", "dataset.bytes", "keys.count", "fragmentation"} {
		if !found[k] {
			t.Errorf("MEMORY STATS lacks %s: %v", k, ms)
		}
	}
	if v := c.do("CLIENT", "NO-EVICT", "on"); string(v.Str) != "OK" {
		t.Errorf("CLIENT NO-EVICT on: %v", v)
	}
	c.do("CLIENT", "NO-TOUCH", "on")
	if v := string(c.do("CLIENT", "INFO").Str); !strings.Contains(v, " flags=eT ") {
		t.Errorf("CLIENT INFO after NO-EVICT and NO-TOUCH: %s", v)
	}
	if v := c.do("CLIENT", "NO-EVICT", "maybe"); !v.IsError() {
		t.Errorf("CLIENT NO-EVICT maybe: %v", v)
	}
	for _, cmd := range [][]string{{"INFO", "cpu"}, {"INFO", "clients"}} {
		if v := c.do(cmd...); v.IsError() || len(v.Str) < 20 {
			t.Errorf("%v: %v", cmd, v)
		}
	}
}

func TestMonitor(t *testing.T) { forEachIOMode(t, testMonitor) }

func testMonitor(t *testing.T) {
	s := startServer(t, nil)
	mc, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	fmt.Fprint(mc, "MONITOR\r\n")
	br := bufio.NewReader(mc)
	mc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := br.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	c := dial(t, s.addr())
	c.do("BF.ADD", "f", "a \"quoted\"\n\x01")
	c.do("PING")
	re := regexp.MustCompile(`^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] (.*)\r\n$`)
	for _, want := range []string{`"BF.ADD" "f" "a \"quoted\"\n\x01"`, `"PING"`} {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the feed: %v", err)
		}
		m := re.FindStringSubmatch(line)
		if m == nil || m[1] != want {
			t.Errorf("feed line %q, want args %s", line, want)
		}
	}
	if v := string(c.do("CLIENT", "LIST").Str); !strings.Contains(v, "flags=O") {
		t.Errorf("CLIENT LIST shows no monitor: %s", v)
	}
	mc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.monitors.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.monitors.Load(); n != 0 {
		t.Errorf("monitors after the monitor left: %d", n)
	}
}
