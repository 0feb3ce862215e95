package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/persist"
)

// serveMetricsFree serves s's metrics port on a free loopback port and returns its base URL.
func serveMetricsFree(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ServeMetrics(ln)
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsEndpoint(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.MetricsFilterPattern = "f*"
		c.MetricsMaxFilters = 2
	})
	base := serveMetricsFree(t, s)
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "f1", "0.01", "100")
	c.do("BF.RESERVE", "f2", "0.01", "1000", "NONSCALING")
	c.do("BF.RESERVE", "f3", "0.01", "500")
	c.do("BF.RESERVE", "g1", "0.01", "100000")
	args := []string{"BF.MADD", "f2"}
	for i := range 1000 {
		args = append(args, strconv.Itoa(i))
	}
	c.do(args...)
	c.do("BF.ADD", "f1", "x")
	c.do("BF.ADD", "g1") // rejected: arity

	code, body := get(t, base+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	for _, want := range []string{
		"bloomd_keys 4\n", "bloomd_filters_matched 3\n", "bloomd_filters_selected 2\n",
		`bloomd_commands_total{cmd="bf.reserve"} 4` + "\n",
		`bloomd_commands_rejected_total{cmd="bf.add"} 1` + "\n",
		`bloomd_command_duration_seconds_count{cmd="bf.madd"} 1` + "\n",
		`bloomd_filter_capacity{filter="f2"} 1000` + "\n",
		`bloomd_filter_subfilters{filter="f3"} 1` + "\n", `bloomd_filter_target_fpp{filter="f2"} 0.01` + "\n",
		`bloomd_filter_target_fpp{filter="f3"} 0.01` + "\n",
		"go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_cpu_seconds_total ", "process_resident_memory_bytes ",
		"bloomd_memory_used_bytes ", "bloomd_connected_clients 1\n", "bloomd_aof_enabled 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	// The largest two of f1, f2, f3 (by memory) get series; f1 (the smallest) and g1 (not
	// matching) do not.
	if strings.Contains(body, `filter="f1"`) || strings.Contains(body, `filter="g1"`) {
		t.Error("/metrics has series for a filter outside the selection")
	}
	// A filter at its capacity is near its target rate: the estimate from counts, not bits.
	var fpp, items float64
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, `bloomd_filter_fpp{filter="f2"} `); ok {
			fpp, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(line, `bloomd_filter_items{filter="f2"} `); ok {
			items, _ = strconv.ParseFloat(v, 64)
		}
	}
	// BF.MADD counts the items it found new: a few of the 1000 test present already.
	if items < 970 || items > 1000 {
		t.Errorf("f2: %v items, want about 1000", items)
	}
	if fpp < 0.005 || fpp > 0.02 {
		t.Errorf("f2 at capacity: estimated FPP %v, want near 0.01", fpp)
	}

	// Read-only: other methods are refused.
	resp, err := http.Post(base+"/api/server", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/server: %d", resp.StatusCode)
	}
	for _, path := range []string{"/", "/app.js", "/api/server", "/api/history", "/api/filters?q=f", "/api/filter.svg?name=f3", "/api/calc?n=1000&p=0.01", "/api/calc.svg?n=1000&p=0.01"} {
		if code, body := get(t, base+path, "", ""); code != 200 || len(body) < 2 {
			t.Errorf("GET %s: %d %q", path, code, body)
		}
	}
	for _, path := range []string{"/api/filter.svg?name=nosuch", "/api/calc?n=0&p=0.01", "/api/calc?n=10&p=2", "/api/calc.svg?n=x"} {
		if code, _ := get(t, base+path, "", ""); code/100 != 4 {
			t.Errorf("GET %s: %d, want a 4xx", path, code)
		}
	}
}

func TestMetricsBasicAuth(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Requirepass = "s3cret" })
	base := serveMetricsFree(t, s)
	for _, tc := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"default", "wrong", 401}, {"admin", "s3cret", 401}, {"default", "s3cret", 200}} {
		for _, path := range []string{"/metrics", "/", "/api/filters"} {
			if code, _ := get(t, base+path, tc.user, tc.pass); code != tc.want {
				t.Errorf("GET %s as %q/%q: %d, want %d", path, tc.user, tc.pass, code, tc.want)
			}
		}
	}
	// CONFIG SET requirepass applies at once.
	c := dial(t, s.addr())
	c.do("AUTH", "s3cret")
	c.do("CONFIG", "SET", "requirepass", "")
	if code, _ := get(t, base+"/metrics", "", ""); code != 200 {
		t.Errorf("GET /metrics with the password removed: %d", code)
	}
}

// TestMetricsReplication checks the replication series: the primary's offset and its replica's
// acknowledged offset and lag.
func TestMetricsReplication(t *testing.T) {
	ps, p := startReplServer(t)
	_, r := startReplServer(t)
	base := serveMetricsFree(t, ps)
	p.do("BF.ADD", "f", "x")
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatalf("REPLICAOF: %v", v)
	}
	waitSynced(t, p, r)
	p.do("BF.ADD", "f", "y")
	if v := p.do("WAIT", "1", "5000"); v.Int != 1 {
		t.Fatalf("WAIT 1 5000 = %v", v)
	}
	info := ps.Info()
	if len(info.Replicas) != 1 || info.Replicas[0].Offset <= 0 || info.Replication["master_repl_offset"] <= 0 {
		t.Fatalf("Info: replicas %+v, replication %v", info.Replicas, info.Replication)
	}
	_, body := get(t, base+"/metrics", "", "")
	for _, want := range []string{"bloomd_connected_replicas 1\n", "bloomd_repl_offset ",
		`bloomd_replica_offset{replica="` + info.Replicas[0].Addr + `"} `, `bloomd_replica_lag_seconds{replica="`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}

// Each acknowledged write with appendfsync always was fsynced on a real file; every fsync lands
// in bloomd_aof_fsync_duration_seconds, as many as bloomd_aof_fsyncs_total counts.
func TestMetricsFsyncHistogram(t *testing.T) {
	s := startDurable(t, t.TempDir(), func(c *Config) {
		c.AppendOnly = true
		c.AppendFsync = persist.FsyncAlways
	})
	base := serveMetricsFree(t, s)
	c := dial(t, s.addr())
	for i := range 3 {
		c.do("BF.ADD", "f", strconv.Itoa(i))
	}
	_, body := get(t, base+"/metrics", "", "")
	value := func(name string) float64 {
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		t.Fatalf("/metrics lacks %s:\n%s", name, body)
		return 0
	}
	count, fsyncs := value("bloomd_aof_fsync_duration_seconds_count"), value("bloomd_aof_fsyncs_total")
	if count < 3 || count != fsyncs {
		t.Errorf("%v fsyncs timed, %v counted; want the same, at least 3", count, fsyncs)
	}
	if sum := value("bloomd_aof_fsync_duration_seconds_sum"); !(sum > 0) || sum > 60 {
		t.Errorf("fsyncs took %v s in all", sum)
	}
	if inf := value(`bloomd_aof_fsync_duration_seconds_bucket{le="+Inf"}`); inf != count {
		t.Errorf("+Inf bucket %v, count %v", inf, count)
	}
	// INFO persistence has the percentiles; an fsync takes more than nothing.
	info := string(c.do("INFO", "persistence").Str)
	var p50, p99 float64
	if i := strings.Index(info, "aof_fsync_latency_usec:"); i < 0 {
		t.Errorf("INFO persistence lacks aof_fsync_latency_usec:\n%s", info)
	} else if _, err := fmt.Sscanf(info[i:], "aof_fsync_latency_usec:p50=%g,p99=%g", &p50, &p99); err != nil || p50 <= 0 || p99 < p50 {
		t.Errorf("aof_fsync_latency_usec: p50 %v p99 %v (%v)", p50, p99, err)
	}
}
