package servertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/server"
)

// Options changes how Start runs bloomd; the zero value is the default configuration.
type Options struct {
	// Config, when not nil, changes the configuration before the server is made (its data
	// directory is already a temporary one and its logger silent).
	Config func(*server.Config)
	// Listener, when not nil, wraps the loopback listener, e.g. in tls.NewListener; the
	// address Start returns is the listener's all the same.
	Listener func(net.Listener) net.Listener
}

// Start runs bloomd in this process on a free loopback port, with a temporary data directory
// and a silent logger, and returns the server and its address. The server shuts down when the
// test ends (before cleanups registered earlier, such as clients' closing, run after it); a
// failed shutdown fails the test. opt may be nil.
func Start(tb testing.TB, opt *Options) (*server.Server, string) {
	tb.Helper()
	if opt == nil {
		opt = &Options{}
	}
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Dir = tb.TempDir()
	if opt.Config != nil {
		opt.Config(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	if opt.Listener != nil {
		ln = opt.Listener(ln)
	}
	served := make(chan struct{})
	go func() { defer close(served); s.ServeListener(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			tb.Errorf("bloomd Shutdown: %v", err)
		}
		<-served
	})
	return s, addr
}
