// Package debugport serves Go's runtime profiles (net/http/pprof) for operators of bloomd: CPU
// and heap profiles, goroutine dumps and execution traces, on a loopback-only HTTP port that is
// off unless configured (bloomd --debug-port n).
//
// With bloomd started as "bloomd --debug-port 6060", a 30-second CPU profile of a busy server is
//
//	go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=30
//
// The port is bound to 127.0.0.1 only: profiles reveal the program's internals and cost CPU while
// they run, so they are for someone logged in on the machine (or through an SSH tunnel), never
// for the network. Being on loopback is not enough against a web browser: a page can point a
// name it controls at 127.0.0.1 (DNS rebinding) and read the port's answers. So the port answers
// only requests whose Host header is a loopback name or address, or one the operator lists in
// http-allowed-hosts (internal/httpguard). /debug/pprof/cmdline shows the command line with its
// passwords (--requirepass, --masterauth, --masteruser, --user's password rules) as
// "(redacted)". TestGuard and TestCmdlineRedacted check both.
package debugport
