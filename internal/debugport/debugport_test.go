package debugport

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestServesProfilesOnLoopback(t *testing.T) {
	s, err := Start(0)
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
	s, err := Start(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Start(s.Addr().(*net.TCPAddr).Port); err == nil {
		t.Fatal("a second Start on the same port succeeded")
	}
	if _, err := Start(70000); err == nil {
		t.Fatal("Start(70000) succeeded")
	}
}
