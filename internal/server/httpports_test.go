package server

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// getHost sends GET url with the given Host header (and basic auth when user is set).
func getHost(t *testing.T, url, host, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
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

// TestMetricsPortGuard: the metrics port answers loopback Host names and its own address but
// not another name (a page that rebound its name to 127.0.0.1), unless http-allowed-hosts lists
// it; and protected mode refuses its clients not on loopback while the default user has no
// password, as it refuses the RESP port's, until a password is set or protected-mode is no.
func TestMetricsPortGuard(t *testing.T) {
	s := startServer(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ServeMetrics(ln)
	port := ln.Addr().(*net.TCPAddr).Port
	base := "http://" + ln.Addr().String()
	c := dial(t, s.addr())
	for _, path := range []string{"/metrics", "/", "/api/server", "/api/filters"} {
		for host, want := range map[string]int{
			"127.0.0.1:" + strconv.Itoa(port): 200, "localhost:" + strconv.Itoa(port): 200, "localhost": 200,
			"rebound.example:" + strconv.Itoa(port): 403, "rebound.example": 403, "192.0.2.1": 403,
		} {
			if code, body := getHost(t, base+path, host, "", ""); code != want {
				t.Errorf("GET %s, Host %s: %d, want %d\n%s", path, host, code, want, body)
			}
		}
	}
	code, body := getHost(t, base+"/metrics", "rebound.example", "", "")
	if !strings.Contains(body, "http-allowed-hosts") {
		t.Errorf("the refusal does not name http-allowed-hosts: %d %s", code, body)
	}
	if v := c.do("CONFIG", "SET", "http-allowed-hosts", "metrics.internal rebound.example"); v.IsError() {
		t.Fatal(v)
	}
	if code, _ := getHost(t, base+"/metrics", "rebound.example", "", ""); code != 200 {
		t.Errorf("a Host in http-allowed-hosts: %d", code)
	}
	if v := c.do("CONFIG", "GET", "http-allowed-hosts"); len(v.Elems) != 2 || v.Elems[1].Text() != "metrics.internal rebound.example" {
		t.Errorf("CONFIG GET http-allowed-hosts: %v", v)
	}

	// A client that is not on loopback (remoteListener reports it at 203.0.113.9).
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ServeMetrics(remoteListener{rln})
	remote := "http://" + rln.Addr().String() + "/metrics"
	rhost := rln.Addr().String()
	code, body = getHost(t, remote, rhost, "", "")
	if code != 403 || !strings.Contains(body, "protected mode") {
		t.Fatalf("a remote client, protected mode, no password: %d %s", code, body)
	}
	c.do("CONFIG", "SET", "requirepass", "pw")
	if code, _ := getHost(t, remote, rhost, "", ""); code != 401 {
		t.Errorf("a remote client without credentials once a password is set: %d", code)
	}
	if code, _ := getHost(t, remote, rhost, "default", "pw"); code != 200 {
		t.Errorf("a remote client with the password: %d", code)
	}
	c.do("AUTH", "pw")
	c.do("CONFIG", "SET", "requirepass", "", "protected-mode", "no")
	if code, _ := getHost(t, remote, rhost, "", ""); code != 200 {
		t.Errorf("a remote client, protected-mode no: %d", code)
	}
}
