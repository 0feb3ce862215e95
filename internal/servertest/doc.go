// Package servertest runs bloomd (package internal/server) inside a test's own process, on a
// free loopback port, for tests of packages that talk to bloomd as a client does: the guard, the
// bloom command's push and pull, the ACL comparison with Redis. Tests of internal/server itself
// have their own harness, which this package cannot serve (it imports internal/server).
package servertest
