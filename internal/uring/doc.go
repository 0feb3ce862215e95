// Package uring sends and receives on many sockets through Linux's io_uring, for bloomd's event
// loops, in two ways.
//
// A Ring made by New batches: a caller queues the reads and writes of one event-loop iteration,
// and Submit issues them together and returns their results. It is made for non-blocking
// sockets that the caller already knows to be ready (from epoll): every operation carries
// MSG_DONTWAIT, so the kernel performs it during Submit and never parks it for later; a socket
// that cannot take or give bytes yields -EAGAIN, as read(2) and write(2) would. Where system
// calls are costly (virtual machines whose guests trap on each one), one submission instead of
// one call per socket is most of what a request costs to serve. It needs Linux 5.6.
//
// A Ring made by NewWaiting is what a loop waits on, in place of epoll: each socket has one
// multishot receive (RecvMultishot, Linux 6.0), whose completions bring its bytes in buffers the
// ring provides (a buffer ring, Linux 5.19), and Wait sends the queued replies (MSG_DONTWAIT,
// complete during the call) and waits for the next completions in one system call. The kernel
// runs the ring's work only inside Wait, on the thread that made the ring
// (IORING_SETUP_DEFER_TASKRUN and SINGLE_ISSUER, Linux 6.1): nothing reaches the buffers or the
// completion queue while that thread is elsewhere, and bytes that arrive meanwhile stay in the
// sockets. Other goroutines wake a waiting thread through a descriptor it polls
// (PollMultishot, an eventfd).
//
// Only what those need is here. (No library for io_uring was reachable from this project's
// module proxy; the ring's layout is Linux's ABI, stable since 5.1.) New and NewWaiting report
// an error where what they need is missing or forbidden (old kernels,
// kernel.io_uring_disabled, seccomp); callers then do without: NewWaiting's callers use New,
// New's use plain system calls. TestRecvMultishot, TestRecvOutOfBuffers, TestCancelAndSend and
// TestPollMultishotWakes show the kernel's behaviour that NewWaiting's callers rely on.
//
// A Ring is not safe for concurrent use.
package uring
