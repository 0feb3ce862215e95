package debugport

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestServesProfilesOnLoopback(t *testing.T) {
	s, err := Start(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		t.Fatalf("listening on %v; want a loopback address", addr)
	}
	base := "http://" + addr.String()
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/goroutine?debug=1": "goroutine profile:",
		"/debug/pprof/profile?seconds=1": "", // a gzipped protobuf
		"/debug/pprof/heap":              "",
		"/debug/pprof/cmdline":           "",
		"/debug/pprof/symbol":            "num_symbols",
		"/debug/pprof/trace?seconds=0.1": "",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: status %d, %d bytes; want 200 with %q", path, resp.StatusCode, len(body), want)
		}
	}
	if resp, err := http.Get(base + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /: status %d; want 404 (only /debug/pprof/ is served)", resp.StatusCode)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/debug/pprof/"); err == nil {
		t.Error("the port still answers after Close")
	}
}

func TestPortInUse(t *testing.T) {
	s, err := Start(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Start(s.Addr().(*net.TCPAddr).Port, nil); err == nil {
		t.Fatal("a second Start on the same port succeeded")
	}
	if _, err := Start(70000, nil); err == nil {
		t.Fatal("Start(70000, nil) succeeded")
	}
}

// TestGuard: a request whose Host is not a loopback name (a page that rebound its name to
// 127.0.0.1) is refused; loopback names, and names the operator allows, are served.
func TestGuard(t *testing.T) {
	allowed := []string{}
	s, err := Start(0, func() []string { return allowed })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	port := strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
	get := func(host string) int {
		req, _ := http.NewRequest("GET", "http://"+s.Addr().String()+"/debug/pprof/goroutine?debug=1", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200, "[::1]:" + port: 200,
		"attacker.example:" + port: 403, "attacker.example": 403, "10.0.0.1:" + port: 403,
	} {
		if got := get(host); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
	allowed = []string{"profiler.internal"}
	if got := get("profiler.internal:" + port); got != 200 {
		t.Errorf("a Host the operator allowed: %d", got)
	}
}

// TestCmdlineRedacted: /debug/pprof/cmdline shows the command line without its passwords.
func TestCmdlineRedacted(t *testing.T) {
	defer func(old func() []string) { commandLine = old }(commandLine)
	commandLine = func() []string {
		return []string{"bloomd", "--port", "6380", "--requirepass", "pw-SECRET", "--user", "app on >app-SECRET ~*"}
	}
	s, err := Start(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get("http://" + s.Addr().String() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "bloomd\x00--port\x006380\x00--requirepass\x00(redacted)\x00--user\x00app on (redacted) ~*"
	if string(body) != want {
		t.Errorf("cmdline: %q, want %q", body, want)
	}
}
