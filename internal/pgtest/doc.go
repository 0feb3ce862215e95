// Package pgtest starts a real PostgreSQL server for tests: initdb in a temporary directory, then
// postgres on a free loopback port (no Unix socket, fsync off), trust authentication for the user
// "postgres". When the test process runs as root, both run as the system user "postgres" (or
// "nobody"), because PostgreSQL refuses to run as root. On Linux the server dies with the test
// process, so a crashed test leaves nothing running.
//
// The binaries are looked up in PATH and then in /usr/lib/postgresql/*/bin (Debian's layout).
// Where they are missing, New skips the test with a message, unless the environment sets
// BLOOM_REQUIRE_POSTGRES=1 (as CI does), in which case it fails it.
package pgtest
