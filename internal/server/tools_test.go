package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/skipped"
)

// Tests that run the tools Redis operators use (prometheus-redis-exporter, redis-cli's
// monitoring modes) against bloomd.

// needExporter returns the path of Debian's prometheus-redis-exporter, or skips the test (fails
// it under BLOOM_REQUIRE_EXPORTER=1).
func needExporter(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus-redis-exporter")
	if err != nil {
		if os.Getenv("BLOOM_REQUIRE_EXPORTER") == "1" {
			t.Fatal("prometheus-redis-exporter is not installed, and BLOOM_REQUIRE_EXPORTER=1 requires it (apt-get install prometheus-redis-exporter)")
		}
		skipped.Missing(t, "prometheus-redis-exporter", "prometheus-redis-exporter is not installed; skipping (set BLOOM_REQUIRE_EXPORTER=1 to make this a failure)")
	}
	return p
}

// scrapeValue returns the value of the sample whose name and labels are series ("name" or
// `name{a="b"}`), or fails the test.
func scrapeValue(t *testing.T, scrape, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("the scrape has no %s", series)
	return 0
}

func TestPrometheusRedisExporter(t *testing.T) {
	bin := needExporter(t)
	for _, pass := range []string{"", "exporter-pass"} {
		t.Run(fmt.Sprintf("password=%v", pass != ""), func(t *testing.T) {
			s := startServer(t, func(c *Config) { c.Requirepass = pass })
			c := dial(t, s.addr())
			if pass != "" {
				c.do("AUTH", pass)
			}
			for i := range 7 {
				c.do("BF.ADD", "f"+strconv.Itoa(i%3), strconv.Itoa(i))
			}
			c.do("BF.EXISTS", "f0", "0")
			c.do("SET", "s", "v", "EX", "1000")
			c.do("BF.ADD", "s", "x") // a failed call
			used := statField(string(c.do("INFO", "memory").Str), "used_memory")

			port := freePort(t)
			args := []string{"-redis.addr", "redis://" + s.addr(), "-web.listen-address", "127.0.0.1:" + strconv.Itoa(port)}
			if pass != "" {
				args = append(args, "-redis.password", pass)
			}
			cmd := exec.Command(bin, args...)
			logs := &redistest.Buffer{}
			cmd.Stdout, cmd.Stderr = logs, logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			var scrape string
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					scrape = string(b)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the exporter never answered: %v\n%s", err, logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if v := scrapeValue(t, scrape, "redis_up"); v != 1 {
				t.Fatalf("redis_up = %v; exporter log:\n%s", v, logs.String())
			}
			if v := scrapeValue(t, scrape, `redis_exporter_last_scrape_error{err=""}`); v != 0 {
				t.Errorf("the exporter reports a scrape error:\n%s", scrape)
			}
			// Our connection and the exporter's.
			if v := scrapeValue(t, scrape, "redis_connected_clients"); v != 2 {
				t.Errorf("redis_connected_clients = %v, want 2", v)
			}
			if v := scrapeValue(t, scrape, `redis_commands_total{cmd="bf.add"}`); v != 8 {
				t.Errorf(`redis_commands_total{cmd="bf.add"} = %v, want 8`, v)
			}
			if v := scrapeValue(t, scrape, `redis_commands_failed_calls_total{cmd="bf.add"}`); v != 1 {
				t.Errorf(`redis_commands_failed_calls_total{cmd="bf.add"} = %v, want 1`, v)
			}
			if v := scrapeValue(t, scrape, `redis_commands_duration_seconds_total{cmd="bf.add"}`); v <= 0 || v > 1 {
				t.Errorf(`redis_commands_duration_seconds_total{cmd="bf.add"} = %v`, v)
			}
			// The exporter's own INFO requests and their replies count too: at least ours did.
			if in, out := scrapeValue(t, scrape, "redis_net_input_bytes_total"), scrapeValue(t, scrape, "redis_net_output_bytes_total"); in < 100 || out < 100 {
				t.Errorf("redis_net_input_bytes_total = %v, redis_net_output_bytes_total = %v", in, out)
			}
			if v := scrapeValue(t, scrape, "redis_memory_used_bytes"); strconv.FormatFloat(v, 'f', -1, 64) != used {
				t.Errorf("redis_memory_used_bytes = %v, INFO said %s", v, used)
			}
			if v := scrapeValue(t, scrape, `redis_db_keys{db="db0"}`); v != 4 {
				t.Errorf(`redis_db_keys{db="db0"} = %v, want 4`, v)
			}
			if v := scrapeValue(t, scrape, `redis_db_keys_expiring{db="db0"}`); v != 1 {
				t.Errorf(`redis_db_keys_expiring{db="db0"} = %v, want 1`, v)
			}
			p50 := scrapeValue(t, scrape, `redis_latency_percentiles_usec{cmd="bf.add",quantile="50"}`)
			p99 := scrapeValue(t, scrape, `redis_latency_percentiles_usec{cmd="bf.add",quantile="99"}`)
			if p50 <= 0 || p99 < p50 {
				t.Errorf("bf.add latency percentiles: p50 %v, p99 %v", p50, p99)
			}
			if v := scrapeValue(t, scrape, `redis_latency_percentiles_usec_count{cmd="bf.add"}`); v != 8 {
				t.Errorf("bf.add latency count = %v, want 8", v)
			}
			scrapeValue(t, scrape, "redis_slowlog_length")
			scrapeValue(t, scrape, `redis_errors_total{err="WRONGTYPE"}`)
			if strings.Contains(logs.String(), "level=error") {
				t.Errorf("the exporter logged errors:\n%s", logs.String())
			}
		})
	}
}

func TestRedisCliMonitoringModes(t *testing.T) {
	cli := needProgram(t, "redis-cli")
	s := startServer(t, nil)
	host, port, _ := net.SplitHostPort(s.addr())
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "big", "0.001", "100000")
	c.do("BF.ADD", "small", "x")
	c.do("SET", "str", "hello world")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	big := run("--bigkeys")
	if !strings.Contains(big, `Biggest string found '"str"' has 11 bytes`) || !strings.Contains(big, "Sampled 3 keys") || strings.Contains(big, "Warning") {
		t.Errorf("--bigkeys:\n%s", big)
	}
	mem := run("--memkeys")
	if !regexp.MustCompile(`Biggest MBbloom-- found '"big"' has \d{6} bytes`).MatchString(mem) {
		t.Errorf("--memkeys:\n%s", mem)
	}
	// --latency --raw samples for a second and prints min, max, avg and the sample count.
	lat := strings.Fields(run("--latency", "--raw"))
	if len(lat) != 4 {
		t.Fatalf("--latency --raw: %q", lat)
	}
	if n, _ := strconv.Atoi(lat[3]); n < 5 {
		t.Errorf("--latency took %d samples", n)
	}

	// redis-cli MONITOR prints OK, then each command as the feed gives it.
	mon := exec.Command(stdbufOrNot(), append(stdbufArgs(), cli, "-h", host, "-p", port, "MONITOR")...)
	monOut, err := mon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { mon.Process.Kill(); mon.Wait() }()
	killMon := time.AfterFunc(10*time.Second, func() { mon.Process.Kill() })
	defer killMon.Stop()
	msc := bufio.NewScanner(monOut)
	if !msc.Scan() || msc.Text() != "OK" {
		t.Fatalf("redis-cli MONITOR: %q", msc.Text())
	}
	c.do("BF.EXISTS", "small", "x")
	if !msc.Scan() || !regexp.MustCompile(`^\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "BF\.EXISTS" "small" "x"$`).MatchString(msc.Text()) {
		t.Errorf("redis-cli MONITOR line: %q", msc.Text())
	}

	// --stat prints a row every interval until stopped.
	cmd := exec.Command(stdbufOrNot(), append(stdbufArgs(), cli, "-h", host, "-p", port, "--stat", "-i", "0.1")...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	row := regexp.MustCompile(`^(\d+)\s+\S+\s+(\d+)\s+0\s+\d+`)
	rows := 0
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	for sc.Scan() && rows < 3 {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			rows++
			if m[1] != "3" || m[2] != "3" {
				t.Errorf("--stat row %q: want 3 keys and 3 clients", sc.Text())
			}
		}
	}
	if rows < 3 {
		t.Errorf("--stat printed %d rows", rows)
	}
}

// stdbufOrNot returns stdbuf, which makes redis-cli's output line-buffered into a pipe, or "env"
// when it is missing (the rows then come when the buffer fills).
func stdbufOrNot() string {
	if p, err := exec.LookPath("stdbuf"); err == nil {
		return p
	}
	return "env"
}

func stdbufArgs() []string {
	if stdbufOrNot() == "env" {
		return nil
	}
	return []string{"-oL"}
}
