// Package skipped makes the tests that skip for a missing outside program (redis-server, java,
// python3-redis, ...) visible: Missing skips a test and records why, and Main, called from a
// package's TestMain, prints one line naming the package, the missing programs and how many
// tests each cost, so that a run where every package says "ok" still shows what was not tested.
//
// go test shows a passing package's output only with -v, so the line goes to the terminal
// (/dev/tty) when there is one, where a user running "go test ./..." sees it, and to standard
// output otherwise (CI sets BLOOM_REQUIRE_<NAME>=1, which turns such skips into failures). A
// result go test takes from its cache is not run again and prints no line; -count=1 runs it.
package skipped
