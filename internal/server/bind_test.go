package server

import (
	"context"
	"fmt"
	"net"
	"testing"
)

// TestBindIPv4AndIPv6Wildcards: --bind "0.0.0.0 ::" listens on both, as Redis does (its IPv6
// socket is IPv6-only, so the two do not collide), and "-::*" is Redis's spelling of the IPv6
// wildcard. Protected mode stays on with no password, so only loopback clients are served while
// the test binds every address.
func TestBindIPv4AndIPv6Wildcards(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	for _, bind := range [][]string{{"0.0.0.0", "::"}, {"::", "0.0.0.0"}, {"127.0.0.1", "::1"}, {"0.0.0.0", "-::*"}} {
		t.Run(fmt.Sprint(bind), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Logger = discardLogger()
			cfg.Bind = bind
			cfg.Port = freePort(t)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ParseArgs([]string{"--bind", bind[0], bind[1]}); err != nil {
				t.Fatal(err)
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			if err := s.Listen(); err != nil {
				t.Fatalf("--bind %q: %v", bind, err)
			}
			if n := len(s.Addrs()); n != 2 {
				t.Fatalf("--bind %q: %d listeners: %v", bind, n, s.Addrs())
			}
			go s.Serve()
			for _, addr := range []string{fmt.Sprintf("127.0.0.1:%d", cfg.Port), fmt.Sprintf("[::1]:%d", cfg.Port)} {
				if got := talk(t, addr, "PING"); got != "+PONG\r\n" {
					t.Errorf("--bind %q, client at %s: %q", bind, addr, got)
				}
			}
		})
	}
}
