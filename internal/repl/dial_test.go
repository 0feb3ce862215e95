package repl

import (
	"net"
	"testing"
	"time"
)

// TestDialFrom binds outgoing connections to a source address as Redis's best-effort binding
// does: a loopback address of this host is used; a name that does not resolve, an address this
// host does not have (192.0.2.1, TEST-NET-1) or one of the other IP family is reported and the
// connection made from the address the system picks; a refused connection is not retried.
func TestDialFrom(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			from <- host
			c.Close()
		}
	}()
	for _, tc := range []struct {
		source, want string
		bindErr      bool
	}{
		{"", "127.0.0.1", false},
		{"127.0.0.5", "127.0.0.5", false},
		{"garbage.invalid", "127.0.0.1", true},
		{"192.0.2.1", "127.0.0.1", true},
		{"::1", "127.0.0.1", true},
	} {
		nc, bindErr, err := DialFrom(ln.Addr().String(), tc.source, 5*time.Second)
		if err != nil {
			t.Errorf("source %q: %v", tc.source, err)
			continue
		}
		nc.Close()
		if got := <-from; got != tc.want || (bindErr != nil) != tc.bindErr {
			t.Errorf("source %q: connected from %s (bind error %v), want %s (bind error %v)", tc.source, got, bindErr, tc.want, tc.bindErr)
		}
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, bindErr, err := DialFrom(addr, "127.0.0.5", 5*time.Second); err == nil || bindErr != nil {
		t.Errorf("a refused connection from a good source: err %v, bind error %v", err, bindErr)
	}
}
