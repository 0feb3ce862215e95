package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/protected"
)

// remoteListener accepts real loopback connections but reports each peer at a documentation
// address (TEST-NET-3), as a client on another machine: the tests may listen on loopback only.
type remoteListener struct{ net.Listener }

func (l remoteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c}, nil
}

type remoteConn struct{ net.Conn }

func (remoteConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(203, 0, 113, 9), Port: 40000}
}

// serveRemote makes s serve a listener whose clients look remote, and returns its address.
func serveRemote(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := remoteListener{ln}
	if err := s.addListener(rl); err != nil {
		t.Fatal(err)
	}
	go s.acceptLoop(rl)
	return ln.Addr().String()
}

// talk sends inline commands on one connection and returns what the server wrote until it
// closed the connection or went quiet.
func talk(t *testing.T, addr string, cmds ...string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(nc)
	var out strings.Builder
	for _, c := range cmds {
		if _, err := io.WriteString(nc, c+"\r\n"); err != nil {
			break
		}
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			break
		}
	}
	return out.String()
}

// TestProtectedMode: with the defaults (protected-mode yes, no password) a remote client is sent
// Redis's -DENIED error and disconnected while loopback clients are served; a password, or
// protected-mode no, lets it in, and both take effect at once through CONFIG SET.
func TestProtectedMode(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		remote := serveRemote(t, s)
		if got := talk(t, remote, "PING"); got != protected.Denied {
			t.Fatalf("remote client, protected mode, no password: %q", got)
		}
		if got := talk(t, s.addr(), "PING"); got != "+PONG\r\n" {
			t.Fatalf("loopback client: %q", got)
		}
		if got := talk(t, s.addr(), "CONFIG SET requirepass pw"); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET requirepass: %q", got)
		}
		if got := talk(t, remote, "PING", "AUTH pw", "PING"); !strings.HasPrefix(got, "-NOAUTH") || !strings.HasSuffix(got, "+OK\r\n+PONG\r\n") {
			t.Fatalf("remote client with a password set: %q", got)
		}
		if got := talk(t, s.addr(), "AUTH pw", "CONFIG SET requirepass \"\"", "CONFIG SET protected-mode no", "CONFIG GET protected-mode"); got != "+OK\r\n+OK\r\n+OK\r\n*2\r\n" {
			t.Fatalf("CONFIG SET protected-mode no: %q", got)
		}
		if got := talk(t, remote, "PING"); got != "+PONG\r\n" {
			t.Fatalf("remote client, protected-mode no: %q", got)
		}
	})
}

func TestProtectedModeDefault(t *testing.T) {
	if c := DefaultConfig(); !c.ProtectedMode {
		t.Fatal("protected-mode is off by default")
	}
	c, _, err := ParseArgs([]string{"--protected-mode", "no"})
	if err != nil || c.ProtectedMode {
		t.Fatalf("--protected-mode no: %v %v", c.ProtectedMode, err)
	}
}

// TestExposedWarning: the start-up log warns when the server is bound beyond the loopback
// interface without a password, saying what protected mode does; it is quiet on loopback or
// with a password. (The server is made but never listens.)
func TestExposedWarning(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bind", "0.0.0.0"}, "protected mode refuses every client not on loopback"},
		{[]string{"--bind", "0.0.0.0", "--protected-mode", "no"}, "anyone who can reach the port"},
		{[]string{"--bind", "0.0.0.0", "--requirepass", "pw"}, ""},
		{[]string{"--bind", "127.0.0.1", "-::1"}, ""},
	} {
		cfg, _, err := ParseArgs(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
		cfg.EventLoops = -1
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.logStart("")
		s.Shutdown(context.Background())
		warned := strings.Contains(log.String(), "level=WARN")
		if tc.want == "" && warned || tc.want != "" && !strings.Contains(log.String(), tc.want) {
			t.Errorf("%q: log\n%s", tc.args, log.String())
		}
	}
}
