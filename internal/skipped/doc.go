// Package skipped makes the tests that skip for a missing outside program (redis-server, java,
// python3-redis, ...) visible: Missing skips a test and records why, and Main, called from a
// package's TestMain, prints one line naming the package, the missing programs and how many
// tests each cost, so that a run where every package says "ok" still shows what was not tested.
//
// # Where the line goes
//
// go test prints nothing of a passing package but its "ok" line, unless -v or -json is given:
// what the test binary writes is buffered and dropped (cmd/go's test.go, Go 1.26). So the line
// goes where the go command's own output goes, which is where the reader of the test command's
// output looks, wherever the command runs:
//
//   - With -v or -json (an IDE runs one of them) go test shows the binary's output: the line goes
//     to standard output, and with -json becomes an output event of the package.
//   - Otherwise, on Linux, when the binary's parent is the go command, the line is written to the
//     go command's standard output, opened through /proc/PPID/fd/1: a terminal, a pipe (| tee,
//     a CI runner's log) or a file opened for appending (>>). It appears just before the
//     package's own "ok" line, or among the lines of packages that finish at the same time. A
//     file the shell truncated (go test ./... > log) takes no second writer (the go command
//     writes at its own offset and would overwrite the line): then the go command's standard
//     error is used if it is one of those.
//   - Failing that, the terminal (/dev/tty) if there is one, else standard output.
//
// TestWhereTheLineGoes runs go test in a new session (no terminal) and finds the line in each
// case. A result go test takes from its cache is not run again and prints no line, and
// installing the missing program does not invalidate that cache (go test tracks only files in
// the module): go test -count=1 runs the tests again.
package skipped
