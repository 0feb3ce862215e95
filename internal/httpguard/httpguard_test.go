package httpguard

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHost(t *testing.T) {
	local := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 9121}
	wild := &net.TCPAddr{IP: net.IPv4zero, Port: 9121}
	for _, tc := range []struct {
		host  string
		local net.Addr
		extra []string
		ok    bool
	}{
		{"localhost", nil, nil, true},
		{"LocalHost:9121", nil, nil, true},
		{"localhost.:9121", nil, nil, true},
		{"127.0.0.1:9121", nil, nil, true},
		{"127.8.9.10", nil, nil, true},
		{"[::1]:9121", nil, nil, true},
		{"[::1]", nil, nil, true},
		{"[::ffff:127.0.0.1]:9121", nil, nil, true},
		{"", nil, nil, true}, // HTTP/1.0 without Host: not a browser
		{"10.1.2.3:9121", local, nil, true},
		{"10.1.2.3:9121", wild, nil, false},
		{"10.1.2.4:9121", local, nil, false},
		{"0.0.0.0:9121", wild, nil, false},
		{"evil.example", nil, nil, false},
		{"evil.example:9121", local, nil, false},
		{"localhost.evil.example", nil, nil, false},
		{"127.0.0.1.evil.example", nil, nil, false},
		{"bloomd.internal:9121", nil, []string{"bloomd.internal"}, true},
		{"BLOOMD.internal.", nil, []string{"bloomd.INTERNAL"}, true},
		{"10.9.9.9", nil, []string{"10.9.9.9"}, true},
		{"[2001:db8::1]:9121", nil, []string{"[2001:db8::1]"}, true},
		{"[2001:db8::1]:9121", nil, []string{"2001:db8::1"}, true},
		{"other.internal", nil, []string{"bloomd.internal"}, false},
		{"anything.example", nil, []string{"*"}, true},
	} {
		if got := HostAllowed(tc.host, tc.local, tc.extra); got != tc.ok {
			t.Errorf("HostAllowed(%q, %v, %q) = %v", tc.host, tc.local, tc.extra, got)
		}
	}
}

func get(t *testing.T, h http.Handler, host, remote string) (int, string) {
	t.Helper()
	r := httptest.NewRequest("GET", "/metrics", nil)
	r.Host = host
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(body)
}

func TestWrap(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	hosts := []string{}
	protected := true
	g := Guard{
		AllowedHosts: func() []string { return hosts },
		Refuse: func(remote net.Addr) bool {
			ip := remote.(*net.TCPAddr).IP
			return protected && !ip.IsLoopback()
		},
	}.Wrap(ok)
	if code, body := get(t, g, "localhost:9121", "127.0.0.1:5000"); code != 200 || body != "served" {
		t.Fatalf("loopback: %d %q", code, body)
	}
	code, body := get(t, g, "evil.example:9121", "127.0.0.1:5000")
	if code != 403 || !strings.Contains(body, `Host "evil.example:9121"`) || !strings.Contains(body, "http-allowed-hosts") {
		t.Fatalf("a rebound name: %d %q", code, body)
	}
	hosts = []string{"evil.example"} // the setting is read for every request
	if code, _ := get(t, g, "evil.example:9121", "127.0.0.1:5000"); code != 200 {
		t.Fatalf("a name the operator allowed: %d", code)
	}
	code, body = get(t, g, "localhost:9121", "203.0.113.9:5000")
	if code != 403 || !strings.Contains(body, "protected mode") {
		t.Fatalf("a remote client in protected mode: %d %q", code, body)
	}
	protected = false
	if code, _ := get(t, g, "localhost:9121", "203.0.113.9:5000"); code != 200 {
		t.Fatalf("a remote client, protected mode off: %d", code)
	}
}
