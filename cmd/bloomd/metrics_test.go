package main

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestBloomdMetricsPort runs the binary with --metrics-port: /metrics and the page answer on
// metrics-bind, with basic auth when requirepass is set, and a port in use stops the start
// naming the setting.
func TestBloomdMetricsPort(t *testing.T) {
	bin := build(t)
	mport := freePort(t)
	d := start(t, bin, t.TempDir(), "--metrics-port", fmt.Sprint(mport), "--metrics-filter-pattern", "k*")
	nc := func(cmd string) string {
		t.Helper()
		line, err := roundTrip(d.addr, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	if line := nc("BF.ADD k1 x"); line != ":1\r\n" {
		t.Fatalf("BF.ADD: %q", line)
	}
	if line := nc("CONFIG SET requirepass pw"); line != "+OK\r\n" {
		t.Fatalf("CONFIG SET requirepass: %q", line)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", mport)
	get := func(path string, auth bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth {
			req.SetBasicAuth("default", "pw")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/metrics", false); code != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials: %d", code)
	}
	code, body := get("/metrics", true)
	if code != 200 || !strings.Contains(body, "bloomd_uptime_seconds ") || !strings.Contains(body, "process_cpu_seconds_total ") ||
		!strings.Contains(body, "bloomd_aof_enabled 1") || !strings.Contains(body, `bloomd_filter_items{filter="k1"} 1`) {
		t.Errorf("/metrics: %d\n%.2000s", code, body)
	}
	if code, body := get("/", true); code != 200 || !strings.Contains(body, "<title>bloomd</title>") {
		t.Errorf("/: %d %.200s", code, body)
	}
	d.stop(t)
	if !strings.Contains(d.stderr.String(), "serving /metrics and the page") {
		t.Errorf("the log does not say where the page is:\n%s", d.stderr)
	}

	// The metrics port taken: bloomd refuses to start, naming metrics-port.
	busy := start(t, bin, t.TempDir(), "--metrics-port", fmt.Sprint(mport))
	out, err := exec.Command(bin, "--port", fmt.Sprint(freePort(t)), "--dir", t.TempDir(), "--metrics-port", fmt.Sprint(mport)).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "metrics-port") {
		t.Errorf("second bloomd on metrics port %d: %v\n%s", mport, err, out)
	}
	busy.stop(t)
}
