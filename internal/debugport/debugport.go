package debugport

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"
)

// A Server serves net/http/pprof on a loopback port. Close stops it.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Start listens on 127.0.0.1:port (port 0 picks a free port, for tests) and serves the pprof
// handlers under /debug/pprof/ in a goroutine. It fails if the port cannot be bound.
func Start(port int) (*Server, error) {
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
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
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
