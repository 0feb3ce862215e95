package repl

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// Dial connects to addr (host:port) over TCP within timeout: the one way the server opens
// connections to other servers (a replica's link to its primary, and MIGRATE's), so that all
// of them honour bind-source-addr. With bind-source-addr set, the connection's local address is
// that address, as Redis binds it. Like Redis ("best effort binding"), a source address that
// cannot be used (it does not resolve, is not an address of this host, or is of the other IP
// family than addr) does not stop the connection: it is made from the address the system
// picks, and the log says why.
func (r *Repl) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	r.mu.Lock()
	source := r.cfg.BindSourceAddr
	r.mu.Unlock()
	nc, bindErr, err := DialFrom(addr, source, timeout)
	if bindErr != nil {
		r.log.Warn("cannot bind an outgoing connection to bind-source-addr; connecting from the address the system picks",
			"bind-source-addr", source, "to", addr, "err", bindErr)
	}
	return nc, err
}

// DialFrom connects to addr over TCP within timeout from the local address source ("" for the
// address the system picks): source's addresses are tried in turn, and if none can be bound
// (bindErr says why) the connection is made without binding, as Redis 7.0's
// anetTcpNonBlockBestEffortBindConnect does. err is the connection's failure.
func DialFrom(addr, source string, timeout time.Duration) (nc net.Conn, bindErr, err error) {
	deadline := time.Now().Add(timeout)
	if source != "" {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		ips, lerr := net.DefaultResolver.LookupIPAddr(ctx, source)
		cancel()
		bindErr = lerr
		for _, ip := range ips {
			d := net.Dialer{Deadline: deadline, LocalAddr: &net.TCPAddr{IP: ip.IP, Zone: ip.Zone}}
			nc, err = d.Dial("tcp", addr)
			if err == nil || !isBindError(err) {
				return nc, nil, err
			}
			bindErr = err
		}
	}
	d := net.Dialer{Deadline: deadline}
	nc, err = d.Dial("tcp", addr)
	return nc, bindErr, err
}

// isBindError reports whether a dial failed on its local address rather than on reaching the
// other end.
func isBindError(err error) bool {
	var se *os.SyscallError
	if errors.As(err, &se) && se.Syscall == "bind" {
		return true
	}
	var ae *net.AddrError
	return errors.As(err, &ae) // "mismatched local address type", "no suitable address found"
}
