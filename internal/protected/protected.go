package protected

import (
	"net"
	"net/netip"
	"strings"
)

// Denied is the reply sent to a refused client before it is disconnected: Redis 7.0's text, word
// for word (its typo included), since clients and operators search for it.
const Denied = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// Refuse reports whether a client at remote must be refused: protected mode is on, no password
// is set and remote is not a loopback address (127.0.0.0/8 or ::1, IPv4-mapped forms included).
// A remote address that is not an IP address (a Unix socket, an in-memory pipe) is local.
func Refuse(remote net.Addr, on, passwordSet bool) bool {
	if !on || passwordSet {
		return false
	}
	return !IsLocal(remote)
}

// IsLocal reports whether remote is on this machine's loopback interface or not an IP address.
func IsLocal(remote net.Addr) bool {
	var ip netip.Addr
	switch a := remote.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	case nil:
		return true
	default:
		ap, err := netip.ParseAddrPort(remote.String())
		if err != nil {
			return remote.Network() != "tcp" && remote.Network() != "udp"
		}
		ip = ap.Addr()
	}
	return ip.Unmap().IsLoopback()
}

// Exposed returns the bind addresses (redis.conf's bind syntax: "*", "-::1", "localhost", IP
// addresses) that are reachable from beyond this machine's loopback interface.
func Exposed(bind []string) []string {
	var out []string
	for _, b := range bind {
		host := strings.TrimPrefix(b, "-")
		if host == "localhost" {
			continue
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
			continue
		}
		out = append(out, b)
	}
	return out
}
