// Package uring sends and receives on many sockets with one system call, through Linux's
// io_uring: a caller queues the reads and writes of one event-loop iteration, and Submit issues
// them together and returns their results.
//
// It is made for non-blocking sockets that the caller already knows to be ready (from epoll):
// every operation carries MSG_DONTWAIT, so the kernel performs it during Submit and never parks
// it for later; a socket that cannot take or give bytes yields -EAGAIN, as read(2) and write(2)
// would. Where system calls are costly (virtual machines whose guests trap on each one), one
// submission instead of one call per socket is most of what a request costs to serve.
//
// Only what that needs is here: a ring, send, receive, submit. (No library for io_uring was
// reachable from this project's module proxy; the ring's layout is Linux's ABI, stable since
// 5.1.) New reports an error where io_uring is missing or forbidden (old kernels,
// kernel.io_uring_disabled, seccomp); callers then use plain system calls.
//
// A Ring is not safe for concurrent use.
package uring
