package debugport

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bloomd/bloom/internal/httpguard"
	"github.com/bloomd/bloom/internal/redact"
)

// A Server serves net/http/pprof on a loopback port. Close stops it.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Start listens on 127.0.0.1:port (port 0 picks a free port, for tests) and serves the pprof
// handlers under /debug/pprof/ in a goroutine. It fails if the port cannot be bound. Requests
// are answered only when their Host header names the loopback interface or one of the names
// allowedHosts returns (http-allowed-hosts; allowedHosts may be nil): see internal/httpguard.
func Start(port int, allowedHosts func() []string) (*Server, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("debugport: port %d is not in [0, 65535]", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("debugport: %w", err)
	}
	// Handlers registered on a mux of our own, not http.DefaultServeMux, so that nothing else
	// in the process can add pages to this port or these pages to another.
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	h := httpguard.Guard{AllowedHosts: allowedHosts}.Wrap(mux)
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server and closes its connections, including profiles in progress.
func (s *Server) Close() error {
	if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// commandLine returns the program's arguments; tests replace it.
var commandLine = func() []string { return os.Args }

// cmdline serves /debug/pprof/cmdline as net/http/pprof does (the arguments separated by NUL
// bytes), with the passwords on the command line (--requirepass, --masterauth, --masteruser,
// --user's password rules) shown as "(redacted)" (internal/redact). The page is kept rather than
// dropped because an operator uses it to see which settings a running bloomd was started with;
// go tool pprof itself does not read it.
func cmdline(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(redact.CommandLine(commandLine()), "\x00"))
}
