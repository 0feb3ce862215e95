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
// for the network.
package debugport
