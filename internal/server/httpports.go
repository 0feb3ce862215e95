package server

import (
	"net"
	"net/http"

	"github.com/bloomd/bloom/internal/httpguard"
	"github.com/bloomd/bloom/internal/protected"
)

// The server's side of internal/httpguard: the metrics port answers only loopback Host names,
// its own address and http-allowed-hosts, and protected mode refuses its clients not on
// loopback as it refuses the RESP port's.

// guardHTTP returns h behind the Host check and protected mode.
func (s *Server) guardHTTP(h http.Handler) http.Handler {
	return httpguard.Guard{AllowedHosts: s.allowedHosts, Refuse: s.refuseHTTP}.Wrap(h)
}

// allowedHosts returns http-allowed-hosts.
func (s *Server) allowedHosts() []string { return s.config().HTTPAllowedHosts }

// refuseHTTP reports whether protected mode refuses an HTTP client at remote: the same rule as
// for a RESP connection (Server.accept).
func (s *Server) refuseHTTP(remote net.Addr) bool {
	return protected.Refuse(remote, s.protected.Load(), !s.acl.users.Default().User().NoPass())
}
