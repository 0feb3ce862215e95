package httpguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// A Guard says what a guarded port allows. The zero Guard allows only loopback Host names and
// the request's own local address, and applies no protected mode.
type Guard struct {
	// AllowedHosts, if set, returns the operator's further Host names or addresses
	// (http-allowed-hosts), read for every request; "*" among them allows any Host.
	AllowedHosts func() []string
	// Refuse, if set, reports whether protected mode refuses a client at remote now.
	Refuse func(remote net.Addr) bool
	// Setting is the name of the setting that lists further hosts, for the refusal's text;
	// "" means "http-allowed-hosts".
	Setting string
}

// Wrap returns h behind g's checks.
func (g Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Refuse != nil && g.Refuse(remoteAddr(r.RemoteAddr)) {
			forbid(w, "bloomd is running in protected mode because protected mode is enabled and no password is set for the default user. "+
				"In this mode only clients on the loopback interface are served. Set requirepass (this port then asks for basic auth), "+
				"or set protected-mode no on a network you trust.")
			return
		}
		var local net.Addr
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			local = a
		}
		var extra []string
		if g.AllowedHosts != nil {
			extra = g.AllowedHosts()
		}
		if !HostAllowed(r.Host, local, extra) {
			setting := g.Setting
			if setting == "" {
				setting = "http-allowed-hosts"
			}
			forbid(w, fmt.Sprintf("Host %q is not a loopback name or this server's address; add it to %s to allow it.", r.Host, setting))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func forbid(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintln(w, "Forbidden:", msg)
}

// remoteAddr parses a request's RemoteAddr ("ip:port"); a value that is not one (a Unix socket,
// a test's pipe) gives nil, which package protected treats as local.
func remoteAddr(s string) net.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// HostAllowed reports whether a request whose Host header is host, received on the local address
// local (nil if unknown), may be answered: host (without its port, any case, a final dot
// ignored) is empty, "localhost", a loopback address, local's address, or one of extra (names
// or addresses), or extra holds "*".
func HostAllowed(host string, local net.Addr, extra []string) bool {
	name := hostName(host)
	if name == "" || name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	isIP := err == nil
	if isIP {
		ip = ip.Unmap()
		if ip.IsLoopback() {
			return true
		}
		if l := localIP(local); l.IsValid() && l == ip {
			return true
		}
	}
	for _, e := range extra {
		e = hostName(e)
		if e == "*" || e == name {
			return true
		}
		if a, err := netip.ParseAddr(e); err == nil && isIP && a.Unmap() == ip {
			return true
		}
	}
	return false
}

// hostName returns a Host header's or setting's name: without port or brackets, lower case,
// without a final dot.
func hostName(h string) string {
	h = strings.TrimSpace(h)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func localIP(a net.Addr) netip.Addr {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip, ok := netip.AddrFromSlice(t.IP)
	if !ok || ip.Unmap().IsUnspecified() {
		return netip.Addr{}
	}
	return ip.Unmap()
}
