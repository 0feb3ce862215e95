// Package httpguard guards bloomd's HTTP ports, the metrics port (/metrics and the page) and
// the debug port (Go's profiles), against what a web browser can be made to do to them.
//
// # DNS rebinding
//
// A page on any web site can make its visitor's browser send requests to a name the attacker
// controls, then point that name at 127.0.0.1 (or at any address the visitor can reach): the
// browser then treats the port as the attacker's own site and lets the page read the answers.
// Such a request always carries the attacker's name in its Host header. So a guarded port
// answers only requests whose Host names this machine's loopback interface ("localhost", an
// address in 127.0.0.0/8, "::1") or the address the request arrived at (the port's bound address,
// or for a port bound to all addresses the one the client used), plus the names the operator
// lists (http-allowed-hosts; "*" turns the check off, for a port behind a reverse proxy that
// rewrites Host). Any other request is refused with 403 Forbidden, naming the setting. A
// request without a Host header (HTTP/1.0) is answered: browsers always send one.
//
// # Protected mode
//
// Redis's protected mode (package protected) applies to the metrics port as it does to the
// RESP port: while protected-mode is on and the default user needs no password, a request from
// a client not on the loopback interface is refused with 403 Forbidden saying why, whatever its
// Host.
//
// TestHost and TestProtected check the rules; the server's TestMetricsPortGuard and cmd/bloomd's
// TestDebugPort check them on the real ports.
package httpguard
