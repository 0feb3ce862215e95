// Package redistest starts real redis-server processes for tests: a standalone server (optionally
// with requirepass) or a Redis Cluster of several masters created with redis-cli --cluster create.
// Servers listen on free loopback ports, keep their files in a temporary directory, and are
// stopped and cleaned up by Close (or by the test's Cleanup when started through New and
// NewCluster). On Linux they also die with the test process, so a crashed test leaves nothing
// running.
//
// Tests that need Redis call New, NewCluster or the package-wide Shared and SharedCluster. Where
// redis-server or redis-cli is not installed these skip the test with a message, unless the
// environment sets BLOOM_REQUIRE_REDIS=1 (as CI does), in which case they fail it.
//
// Shared servers live for the whole test binary: the package's TestMain must call Main, which
// runs the tests and then stops them (and runs what AtExit registered).
//
// StartProgram runs another RESP server the same way, such as bloomd built by a test.
package redistest
