// Package childproc starts the outside programs that tests run (redis-server, redis-cli,
// PostgreSQL) so that the kernel kills them when the test process dies: a test binary that
// crashes or is killed by its timeout leaves no server behind.
//
// Linux delivers PR_SET_PDEATHSIG when the thread that forked the child ends, not when the
// process does, and Go ends a thread whose goroutine exits while locked to it, as bloomd's
// io_uring event loops do (internal/server) when a server started in the test's own process
// shuts down. A child forked from a thread that later ran such a loop died with that server: a
// node of redisfilter's shared Redis Cluster vanished in the middle of its tests. Start forks
// every child from one goroutine locked to its thread and never released, so the thread, and
// the children's lives with it, last as long as the process. TestChildOutlivesLockedThread
// shows the failure it prevents.
//
// Elsewhere than Linux, Start is exec.Cmd.Start.
package childproc
