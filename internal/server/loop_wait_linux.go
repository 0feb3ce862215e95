//go:build linux

package server

import (
	"runtime"
	"syscall"
	"time"

	"github.com/bloomd/bloom/internal/uring"
)

// A waiting loop (useWaiting) keeps its goroutine on one thread and waits in io_uring_enter
// rather than in Go's poller: each connection has one multishot receive, whose completions bring
// its bytes in the ring's provided buffers, and an iteration's replies are sent in the same
// system call that waits for the next completions. Other goroutines wake it through the eventfd,
// which the ring polls. See runWaiting.

// useWaiting makes event loops wait on io_uring where the kernel has what that needs (Linux
// 6.1); tests turn it off to cover the other modes.
var useWaiting = true

// The provided buffers of a waiting loop's ring: what one iteration can receive before a
// connection's receive has to be armed again (-ENOBUFS), waitBufCount × waitBufSize bytes per
// loop; and its completion queue's size. Tests shrink them.
var (
	waitBufCount uint16 = 256
	waitBufSize         = 16 << 10
	waitCQ       uint32 = 4096
)

// newWaitingRing makes a waiting loop's ring; tests make it fail, as a kernel without what it
// needs does.
var newWaitingRing = uring.NewWaiting

// waitingSetup returns the function that makes a loop's waiting ring with the settings as they
// are now (the loop calls it on its own thread, when it starts).
func waitingSetup() func() (*uring.Ring, error) {
	mk, entries, cq, n, size := newWaitingRing, ringEntries, waitCQ, waitBufCount, waitBufSize
	return func() (*uring.Ring, error) { return mk(entries, cq, n, size) }
}

// What a ring operation of a waiting loop is for: the top byte of its tag. The rest is the
// connection's descriptor and generation (ringTag).
const (
	kindNone = iota
	kindRecv
	kindSend
	kindWake
	kindWritable
	kindCancel
)

func ringTag(kind uint64, c *Conn) uint64 {
	return kind<<56 | uint64(c.fd&0xffffff)<<32 | uint64(c.ringGen)
}

// tagConn returns the connection an operation's tag names, or nil if it has closed since.
func (lp *loop) tagConn(tag uint64) *Conn {
	c := lp.conn(int(tag >> 32 & 0xffffff))
	if c == nil || c.ringGen != uint32(tag) {
		return nil
	}
	return c
}

// runWaiting serves the loop with a waiting ring, and reports false, having served nothing, if
// the kernel cannot make one.
func (lp *loop) runWaiting() bool {
	// The ring accepts submissions from the thread that made it only, and runs its work only
	// when that thread waits in it.
	runtime.LockOSThread()
	r, err := lp.waitSetup()
	if err != nil {
		lp.srv.log.Debug("io_uring cannot wait for multishot receives here; the event loop parks in Go's poller", "err", err)
		runtime.UnlockOSThread()
		return false
	}
	// The thread ends with the goroutine (it stays locked): nothing else runs on a thread a
	// ring was made on.
	lp.wring = r
	lp.waiting.Store(true)
	if lp.ring != nil {
		lp.ring.Close()
		lp.ring = nil
	}
	defer r.Close()
	lp.armWake()
	for {
		cs, err := lp.waitRing()
		if err != nil {
			lp.srv.log.Error("io_uring_enter failed; the event loop stops", "err", err)
			for _, c := range lp.conns {
				if c != nil {
					lp.close(c)
				}
			}
			return true
		}
		now := time.Now()
		lp.nowMs = now.UnixMilli()
		// Sends first: they completed during the submission, before anything that follows,
		// and their connections' reply buffers are free again once they are taken.
		for i := range cs {
			if cs[i].Tag>>56 == kindSend {
				lp.sent(cs[i])
				cs[i].Tag = kindNone
			}
		}
		lp.cq = cs
		for lp.cqAt = 0; lp.cqAt < len(lp.cq); {
			d := lp.cq[lp.cqAt]
			lp.cqAt++
			lp.complete(d, now)
		}
		lp.cq, lp.cqAt = nil, 0
		lp.finish()
		if lp.afterHelp {
			lp.resume()
		}
		for _, c := range lp.rearm {
			if lp.conn(c.fd) == c {
				lp.armRecv(c)
			}
		}
		clear(lp.rearm)
		lp.rearm = lp.rearm[:0]
		if len(lp.lagging) > 0 && lp.nowMs >= lp.lagCheckMs {
			lp.publishLagging()
			lp.lagCheckMs = lp.nowMs + publishMs/4
		}
		if lp.stopSeen || lp.srv.timeout.Load() > 0 {
			lp.expire(now)
			if lp.stopSeen && lp.nconns == 0 && lp.exit() {
				return true
			}
		}
	}
}

// heldWait is how long a loop waits for completions holding its P (uring.Ring.Wait) before it
// gives the P back and waits on: long enough to cover the gaps between requests under load,
// short enough that an idle loop leaves its core to the rest of the process.
const heldWait = 5 * time.Millisecond

// waitRing waits for the ring's next completions. A wait that gives the P back costs the way
// back a hand-over when the runtime took it meanwhile, which its monitor does for a goroutine
// that has not been scheduled for 10 ms, as a loop that never parks is not; and after each such
// retake the monitor polls every 20 µs for a while. So the loop holds its P for heldWait, when
// there are more Ps than loops.
func (lp *loop) waitRing() ([]uring.Completion, error) {
	timeout := lp.waitTimeout()
	if !lp.holdP {
		return lp.wring.Wait(timeout, false)
	}
	held := heldWait
	if timeout > 0 {
		held = min(held, timeout)
	}
	cs, err := lp.wring.Wait(held, true)
	if len(cs) > 0 || err != nil || timeout > 0 && timeout <= heldWait {
		return cs, err
	}
	if timeout > 0 {
		timeout -= heldWait
	}
	return lp.wring.Wait(timeout, false)
}

// waitTimeout is how long the loop may wait for completions: unbounded, unless idle
// connections may time out or statistics wait to be published.
func (lp *loop) waitTimeout() time.Duration {
	switch {
	case lp.srv.timeout.Load() > 0 || lp.stopSeen:
		return 100 * time.Millisecond
	case len(lp.lagging) > 0:
		return publishMs * time.Millisecond
	}
	return 0
}

// complete takes one completion of the ring (other than a send's).
func (lp *loop) complete(d uring.Completion, now time.Time) {
	switch d.Tag >> 56 {
	case kindNone:
	case kindWake:
		if !d.More() {
			lp.armWake()
		}
		lp.control(now)
	case kindRecv:
		c := lp.tagConn(d.Tag)
		if c == nil {
			lp.wring.Release(d)
			return
		}
		lp.received(c, d, now)
	case kindWritable:
		if c := lp.tagConn(d.Tag); c != nil {
			c.pollingOut = false
			lp.writeOut(c)
		}
	case kindCancel:
		// Nothing to cancel: the operation had ended.
	}
}

// received takes what a connection's receive brought.
func (lp *loop) received(c *Conn, d uring.Completion, now time.Time) {
	if !d.More() {
		c.recvArmed = false
	}
	switch {
	case d.Res > 0:
		data := lp.wring.Data(d)
		lp.srv.stats.netIn.Add(int64(len(data)))
		for len(data) > 0 {
			n := copy(c.rd.Space(), data)
			c.rd.Commit(n, nil)
			data = data[n:]
		}
		lp.wring.Release(d)
		if !c.recvArmed {
			lp.rearm = append(lp.rearm, c)
		}
		lp.afterRead(c, nil, now)
	case d.Res == 0:
		// The client closed its side (or CLIENT KILL shut the socket down): once the replies
		// to what it sent before are written, close.
		c.closing = true
		lp.markDirty(c)
	case d.Res == -int32(syscall.ENOBUFS):
		lp.rearm = append(lp.rearm, c) // after this iteration has given buffers back
	case d.Res == -int32(syscall.ECANCELED):
		// Paused while the socket does not take the replies (see writeOut).
		if len(c.out) == 0 && !c.closing {
			lp.rearm = append(lp.rearm, c)
		}
	default:
		lp.close(c)
	}
}

// armWake makes the ring report wake-ups (Loop.wake), which a helping serveBusy sees through
// epoll instead, leaving the ring to resume.
func (lp *loop) armWake() {
	if lp.helping {
		lp.wakeUnarmed = true
		return
	}
	lp.queueRing(func() bool { return lp.wring.PollMultishot(lp.efd, kindWake<<56) })
}

// armRecv starts c's multishot receive unless it runs.
func (lp *loop) armRecv(c *Conn) {
	if c.recvArmed || c.closing || len(c.out) > 0 || lp.helping {
		return
	}
	for !lp.wring.RecvMultishot(c.fd, ringTag(kindRecv, c)) {
		lp.flushRing()
	}
	c.recvArmed = true
}

// queueSend queues c's buffered replies in the ring, sent when the loop next waits.
func (lp *loop) queueSend(c *Conn) {
	b := c.w.Bytes()
	if len(b) == 0 || c.inRing {
		return
	}
	if len(c.out) > 0 {
		lp.setOut(c, append(c.out, b...))
		c.w.Clear()
		lp.checkOut(c)
		return
	}
	if !lp.wring.Send(c.fd, b, ringTag(kindSend, c)) {
		lp.write(c) // the ring is full: a write of its own
		return
	}
	c.inRing = true
}

// sent takes the result of a send.
func (lp *loop) sent(d uring.Completion) {
	c := lp.tagConn(d.Tag)
	if c == nil {
		return
	}
	c.inRing = false
	switch n := int(d.Res); {
	case n < 0 && syscall.Errno(-n) != syscall.EAGAIN && syscall.Errno(-n) != syscall.EINTR:
		lp.wrote(c, 0, syscall.Errno(-n))
	default:
		lp.wrote(c, max(n, 0), nil)
	}
	if lp.conn(c.fd) != c {
		return
	}
	switch {
	case len(c.out) > 0:
	case c.closing:
		lp.close(c)
	case c.rd.Buffered() > 0 && !c.blocked:
		lp.process(c) // requests that arrived while the replies were in the ring
	}
}

// flushRing submits what the loop queued in its ring.
func (lp *loop) flushRing() {
	if err := lp.wring.Flush(); err != nil {
		lp.srv.log.Error("io_uring_enter failed", "err", err)
	}
}

// queueRing queues an operation with op, submitting first what is queued if the ring is full.
func (lp *loop) queueRing(op func() bool) {
	for !op() {
		lp.flushRing()
	}
}

// pauseRecv stops reading c while the socket does not take its replies, and waits until it
// does: what the client sends meanwhile stays in the socket, as in the other modes.
func (lp *loop) pauseRecv(c *Conn) {
	if c.recvArmed {
		lp.queueRing(func() bool { return lp.wring.Cancel(ringTag(kindRecv, c), kindCancel<<56) })
	}
	lp.pollWritable(c)
}

// pollWritable asks the ring for c's socket taking more bytes.
func (lp *loop) pollWritable(c *Conn) {
	if !c.pollingOut {
		lp.queueRing(func() bool { return lp.wring.PollWritable(c.fd, ringTag(kindWritable, c)) })
		c.pollingOut = true
	}
}

// forget cancels what the ring still does for a connection whose descriptor is about to
// close, and submits everything queued: no operation naming the descriptor may reach the kernel
// once another connection can have the number.
func (lp *loop) forget(c *Conn) {
	if lp.helping {
		// Another thread: it may not submit, and queues nothing that names a descriptor.
		// The loop cancels once it waits again; the peer sees the end now.
		if c.recvArmed {
			lp.cancels = append(lp.cancels, ringTag(kindRecv, c))
			c.recvArmed = false
		}
		if c.pollingOut {
			lp.cancels = append(lp.cancels, ringTag(kindWritable, c))
			c.pollingOut = false
		}
		shutdownFD(c.fd)
		return
	}
	if c.recvArmed {
		lp.queueRing(func() bool { return lp.wring.Cancel(ringTag(kindRecv, c), kindCancel<<56) })
		c.recvArmed = false
	}
	if c.pollingOut {
		lp.queueRing(func() bool { return lp.wring.Cancel(ringTag(kindWritable, c), kindCancel<<56) })
		c.pollingOut = false
	}
	lp.flushRing()
}

// takeAhead appends to buf what the completions of this iteration not yet taken brought c,
// which is leaving the loop, and returns it.
func (lp *loop) takeAhead(c *Conn, buf []byte) []byte {
	for i := lp.cqAt; i < len(lp.cq); i++ {
		d := &lp.cq[i]
		if d.Tag == ringTag(kindRecv, c) {
			lp.srv.stats.netIn.Add(int64(len(lp.wring.Data(*d))))
			buf = append(buf, lp.wring.Data(*d)...)
			lp.wring.Release(*d)
			if !d.More() {
				c.recvArmed = false
			}
			d.Tag = kindNone
		}
	}
	return buf
}

// helpWaiting prepares serveBusy, on another goroutine, to serve a waiting loop while its own
// goroutine runs caller's script: it takes the completions the interrupted iteration has not
// (but caller's), and watches the other connections with the loop's epoll set, through which
// it reads and writes them with system calls of its own. The ring is left alone: only the
// loop's thread may submit to it, and it does nothing while that thread does not wait in it
// (uring.NewWaiting), so the bytes that arrive meanwhile stay in the sockets for the helper.
func (lp *loop) helpWaiting(caller *Conn, now time.Time) {
	for _, c := range lp.conns {
		if c == nil || c == caller {
			continue
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if len(c.out) > 0 {
			ev.Events = syscall.EPOLLOUT
		}
		if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			lp.close(c)
		}
	}
	for i := lp.cqAt; i < len(lp.cq); i++ {
		d := lp.cq[i]
		if d.Tag>>56 == kindRecv && lp.tagConn(d.Tag) == caller {
			continue
		}
		lp.cq[i].Tag = kindNone
		lp.complete(d, now)
	}
}

// helped ends serveBusy's service of a waiting loop: the connections leave the epoll set, and
// the loop, once it runs again, sets their ring operations right (resume).
func (lp *loop) helped() {
	for _, c := range lp.conns {
		if c != nil {
			syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
		}
	}
	lp.afterHelp = true
}

// resume gives the ring back the connections serveBusy served: it cancels what the helper
// could not, and receives (or waits to send) on each connection as its state asks.
func (lp *loop) resume() {
	lp.afterHelp = false
	if lp.wakeUnarmed {
		lp.wakeUnarmed = false
		lp.armWake()
	}
	for _, tag := range lp.cancels {
		lp.queueRing(func() bool { return lp.wring.Cancel(tag, kindCancel<<56) })
	}
	clear(lp.cancels)
	lp.cancels = lp.cancels[:0]
	for _, c := range lp.conns {
		switch {
		case c == nil || c.closing:
		case len(c.out) > 0:
			lp.pauseRecv(c)
		default:
			lp.armRecv(c)
		}
	}
}

// beforeScript runs on the loop's goroutine before a script that may pass busy-reply-threshold,
// when a helper would serve the loop (serveBusy): it submits what the iteration queued in the
// ring, so that no queued operation names a descriptor that the helper may close (and a new
// connection get) before the loop submits again. Mostly nothing is queued then, and it costs
// no system call.
func (lp *loop) beforeScript() {
	if lp.wring != nil && !lp.helping {
		lp.flushRing()
	}
}
