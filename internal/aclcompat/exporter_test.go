package aclcompat

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/servertest"
)

// exporterRules let prometheus-redis-exporter (as Debian packages it) do everything it does in
// a scrape of a standalone server and nothing else: INFO, CONFIG GET, SLOWLOG, LATENCY LATEST,
// and naming its connection. The test shows the list is enough on Redis and on bloomd: neither
// logs a denial during the scrape.
const exporterRules = "on >exporter-pass -@all +info +config|get +client|setname +slowlog|get +slowlog|len +latency|latest"

// scrape runs the exporter against addr as user "exporter" and returns one scrape of its
// /metrics and its log.
func scrape(t *testing.T, bin, addr string) (string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--redis.addr", "redis://"+addr, "--redis.user", "exporter", "--redis.password", "exporter-pass",
		"--web.listen-address", web)
	logs := &redistest.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + web + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return string(b), logs.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter never answered: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sample returns the value of the first sample of a scrape whose line starts with series.
func sample(scrape, series string) (float64, bool) {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestExporterUser scrapes Redis and bloomd with prometheus-redis-exporter logged in as a user
// limited to exporterRules: both scrapes succeed without a denial; then bloomd's
// acl_access_denied_* counters, raised by a failed AUTH and denied commands, keys and
// channels, are the same in INFO and in bloomd's own /metrics.
func TestExporterUser(t *testing.T) {
	bin := needProgram(t, "prometheus-redis-exporter", "BLOOM_REQUIRE_EXPORTER", "prometheus-redis-exporter")
	redisAddr := startRedis(t)
	srv, bloomdAddr := servertest.Start(t, nil)
	admin := dialPair(t, redisAddr, bloomdAddr)
	admin.must(append([]string{"ACL", "SETUSER", "exporter"}, strings.Fields(exporterRules)...)...)
	admin.must("ACL", "LOG", "RESET")
	for _, s := range []struct {
		name, addr string
		c          *conn
	}{{"redis", redisAddr, admin.redis}, {"bloomd", bloomdAddr, admin.bloomd}} {
		out, logs := scrape(t, bin, s.addr)
		if v, ok := sample(out, "redis_up"); !ok || v != 1 {
			t.Errorf("%s: redis_up = %v (%v); exporter log:\n%s", s.name, v, ok, logs)
		}
		if v, ok := sample(out, `redis_exporter_last_scrape_error{err=""}`); !ok || v != 0 {
			t.Errorf("%s: the exporter reports a scrape error (%v %v); log:\n%s", s.name, v, ok, logs)
		}
		if _, ok := sample(out, "redis_connected_clients"); !ok {
			t.Errorf("%s: the scrape has no redis_connected_clients:\n%s", s.name, out)
		}
		if strings.Contains(logs, "level=error") {
			t.Errorf("%s: the exporter logged errors:\n%s", s.name, logs)
		}
		if entries := aclLog(s.c); len(entries) != 0 {
			t.Errorf("%s: the exporter's scrape was denied:\n%s", s.name, strings.Join(entries, "\n"))
		}
	}

	// Denials of every kind on bloomd, counted in INFO and in its /metrics.
	c := dial(t, "bloomd", bloomdAddr)
	c.do("AUTH", "exporter", "wrong")
	c.do("AUTH", "nobody", "wrong")
	c.must("AUTH", "exporter", "exporter-pass")
	c.do("GET", "k")
	admin.bloomd.must("ACL", "SETUSER", "limited", "on", ">pw", "~a:*", "resetchannels", "&news", "+@all")
	c.must("AUTH", "limited", "pw")
	c.do("GET", "b:1")
	c.do("PUBLISH", "other", "m")
	want := map[string]string{"auth": "2", "cmd": "1", "key": "1", "channel": "1"}
	info := admin.bloomd.must("INFO", "stats").Text()
	for reason, n := range want {
		if got := infoField(info, "acl_access_denied_"+reason); got != n {
			t.Errorf("INFO acl_access_denied_%s = %q, want %s", reason, got, n)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.ServeMetrics(ln)
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for reason, n := range want {
		got, line := deniedSample(string(body), reason)
		if got != n {
			t.Errorf("bloomd's /metrics: acl_access_denied for %s is %q (%q), want %s", reason, got, line, n)
		}
		t.Logf("bloomd's /metrics: %s", line)
	}
}

func infoField(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			return v
		}
	}
	return ""
}

// deniedSample finds the sample of bloomd's /metrics that counts ACL denials for reason,
// whether the reason is in the series name (..._acl_access_denied_auth...) or in a label
// (reason="auth"), and returns its value as INFO would print it, and the line.
func deniedSample(scrape, reason string) (string, string) {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, "#") || !strings.Contains(line, "acl_access_denied") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if strings.Contains(name, "acl_access_denied_"+reason) || strings.Contains(name, `"`+reason+`"`) {
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return "", line
			}
			return strconv.FormatFloat(f, 'f', -1, 64), line
		}
	}
	return "", ""
}
