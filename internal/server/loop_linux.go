//go:build linux

package server

import (
	"bytes"
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/uring"
)

// A loop serves many plain-TCP connections from one goroutine, as Redis does: it waits for
// readable sockets with epoll, reads each once, runs every complete request in its buffer, makes
// the iteration's journal records durable with one wait, and writes each connection's replies
// with one write. Compared with a goroutine per connection this saves, per request, the read that
// finds nothing before the goroutine parks, and the scheduler's wake-ups; bloomd runs one loop
// per core. With io_uring, all the reads of an iteration are one system call, and all the writes
// another (readBatch, finish). Where the kernel can, a loop waits on io_uring instead of epoll
// (runWaiting, loop_wait_linux.go): the same iteration, with receives that the kernel completes
// into the ring's buffers, and the writes sent by the system call that waits.
type loop struct {
	srv    *Server
	epfd   int
	epf    *os.File        // epfd in the Go runtime's poller: the loop parks there when idle
	rc     syscall.RawConn // of epf
	efd    int             // eventfd that wakes the loop for new connections and shutdown
	gs     gateState
	events []syscall.EpollEvent
	conns  []*Conn // by descriptor
	nconns int
	dirty  []*Conn      // connections with replies to write this iteration
	wait   func() error // the latest journal wait of this iteration

	// With io_uring (nil without), an iteration reads every readable socket with one system
	// call and writes every reply with another, instead of a read and a write per socket.
	ring      *uring.Ring
	reading   []*Conn     // connections to read in this iteration's batch
	writing   []*Conn     // connections whose replies are queued in the ring
	abandoned []*Conn     // see ringFailed
	deadRing  *uring.Ring // see ringFailed

	mu       sync.Mutex
	incoming []*Conn
	monitors []*monitor // MONITOR connections of this loop with output waiting
	pushq    []*Conn    // connections with bytes from other goroutines (Conn.deliver)
	stopping bool
	exited   bool // under mu: run returned; add closes what it is handed
	stopSeen bool // loop goroutine only

	hasDeadline bool // a read deadline is set on epf

	// lagging holds connections whose latest commands are not published yet (see
	// publishLagging, which runs at most every publishMs/4, at lagCheckMs); each has
	// Conn.lagging set. deadlineMs is when the read deadline the loop set for it passes.
	lagging                []*Conn
	lagCheckMs, deadlineMs int64

	pollFn  func(fd uintptr) bool // lp.pollOnce, made once (a method value allocates)
	pollN   int
	pollErr error

	nowMs int64 // the time of this iteration

	helping     bool               // serveBusy runs the loop: no io_uring (the loop's own batch is in flight)
	completions []uring.Completion // the reads submitReads is running

	// A waiting loop's ring (see loop_wait_linux.go), nil in the other modes; the completions
	// of its latest wait, of which cq[:cqAt] are taken; connections whose receive is to be
	// armed again once this iteration has given its buffers back; the latest connection's
	// generation.
	wring *uring.Ring
	cq    []uring.Completion
	cqAt  int
	rearm []*Conn
	gen   uint32

	// serveBusy's service of a waiting loop: the cancellations it left to the loop's thread,
	// and whether the loop has yet to set its connections' ring operations right.
	cancels     []uint64
	afterHelp   bool
	wakeUnarmed bool
	waiting     atomic.Bool // the loop waits on its ring (for tests)
	waitSetup   func() (*uring.Ring, error)
	holdP       bool

	batch batchHashes // of the batch that process runs (see prefetchBatch)
}

// A loop publishes a connection's statistics (commands processed, the last command, its calls
// per command) every publishEvery commands or publishMs milliseconds, rather than after every
// request: each publication is two locked instructions. A connection that falls quiet is
// published publishMs after its last publication (publishLagging), so INFO, CLIENT LIST and the
// page lag by at most about twice publishMs.
const (
	publishEvery = 256
	publishMs    = 100
)

// loopsSupported reports whether this system has event loops.
const loopsSupported = true

func newLoop(s *Server) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	r, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return nil, errno
	}
	efd := int(r)
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, efd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(efd)}); err != nil {
		syscall.Close(epfd)
		syscall.Close(efd)
		return nil, err
	}
	// The loop never blocks in epoll_wait: a goroutine blocked in a system call makes the
	// runtime hand its core to another thread and wake it back, two context switches per
	// wait. Instead the epoll descriptor itself (readable when it has events) goes into the
	// runtime's poller, where an idle loop parks like any goroutine waiting for a socket.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		syscall.Close(efd)
		return nil, err
	}
	epf := os.NewFile(uintptr(epfd), "epoll")
	rc, err := epf.SyscallConn()
	if err != nil {
		epf.Close()
		syscall.Close(efd)
		return nil, err
	}
	lp := &loop{srv: s, epfd: epfd, epf: epf, rc: rc, efd: efd, gs: gateState{slot: s.gate.register()},
		events: make([]syscall.EpollEvent, 256)}
	lp.pollFn = lp.pollOnce
	if useWaiting {
		lp.waitSetup = waitingSetup()
	}
	if useRing {
		if lp.ring, err = uring.New(ringEntries); err != nil {
			s.log.Debug("io_uring unavailable; the event loop reads and writes with a system call each", "err", err)
			lp.ring = nil
		}
	}
	return lp, nil
}

// useRing makes event loops batch their reads and writes through io_uring where the system has
// it; tests turn it off to cover the other path.
var useRing = true

// ringEntries is the most reads or writes submitted at once; more take several submissions.
var ringEntries uint32 = 256

// poll returns the ready events, parking in the runtime's poller until there are some, or until
// the deadline when the loop has idle connections to time out.
func (lp *loop) poll() (int, error) {
	switch {
	case lp.srv.timeout.Load() > 0 || lp.stopSeen:
		lp.epf.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		lp.hasDeadline = true
	case len(lp.lagging) > 0:
		// Wake for publishLagging; a deadline set before and not passed yet will do, so that a
		// busy loop does not reset its deadline on every poll.
		if !lp.hasDeadline || lp.nowMs >= lp.deadlineMs {
			lp.epf.SetReadDeadline(time.Now().Add(publishMs * time.Millisecond))
			lp.hasDeadline, lp.deadlineMs = true, lp.nowMs+publishMs
		}
	case lp.hasDeadline:
		lp.epf.SetReadDeadline(time.Time{})
		lp.hasDeadline = false
	}
	err := lp.rc.Read(lp.pollFn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil
	}
	if err == nil {
		err = lp.pollErr
	}
	return lp.pollN, err
}

// pollOnce is the non-blocking look at the epoll set that poll repeats after each wake-up.
func (lp *loop) pollOnce(fd uintptr) bool {
	lp.pollN, lp.pollErr = rawEpollWait(int(fd), lp.events)
	if lp.pollErr == syscall.EINTR {
		lp.pollN, lp.pollErr = 0, nil
	}
	return lp.pollN > 0 || lp.pollErr != nil
}

// wake makes epoll_wait return.
func (lp *loop) wake() {
	one := [8]byte{1}
	syscall.Write(lp.efd, one[:])
}

// stop makes the loop answer what its clients have sent, close them, and return.
func (lp *loop) stop() {
	lp.mu.Lock()
	lp.stopping = true
	lp.mu.Unlock()
	lp.wake()
}

// add hands a connection to the loop.
func (lp *loop) add(c *Conn) {
	lp.mu.Lock()
	if lp.exited {
		// Accepted just before the shutdown, handed over after the loop ended.
		lp.mu.Unlock()
		syscall.Close(c.fd)
		c.srv.removeConn(c)
		c.srv.clients.Add(-1)
		c.srv.wg.Done()
		return
	}
	lp.incoming = append(lp.incoming, c)
	lp.mu.Unlock()
	lp.wake()
}

// exit marks a stopped loop as ended, unless connections were handed to it meanwhile, which it
// must serve (and close) first.
func (lp *loop) exit() bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if len(lp.incoming) > 0 {
		return false
	}
	lp.exited = true
	return true
}

// adopt takes a connection from the Go runtime: it duplicates the socket (the duplicate is not
// in the runtime's poller) and closes the original.
func adopt(tc *net.TCPConn) (int, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(orig uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, orig, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			dupErr = errno
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	if dupErr != nil {
		return -1, dupErr
	}
	tc.Close()
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func shutdownFD(fd int) { syscall.Shutdown(fd, syscall.SHUT_RDWR) }

// fdReader reads a non-blocking socket for a resp.Reader.
type fdReader struct{ fd int }

func (r fdReader) Read(p []byte) (int, error) {
	for {
		n, err := rawRead(r.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, resp.ErrWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, errEOF
		}
		return n, nil
	}
}

var errEOF = errors.New("EOF")

// newLoopConn makes the connection for an adopted socket.
func (s *Server) newLoopConn(lp *loop, fd int, addr, laddr string) *Conn {
	c := s.initConn(&Conn{lp: lp, fd: fd, gs: &lp.gs, batch: &lp.batch}, fdReader{fd})
	c.addr, c.laddr = addr, laddr
	s.addConn(c)
	return c
}

// run serves until stop, then until its last connection is closed.
func (lp *loop) run() {
	defer lp.srv.wg.Done()
	defer lp.srv.gate.unregister(lp.gs.slot)
	defer lp.epf.Close()
	defer syscall.Close(lp.efd)
	defer func() {
		if lp.ring != nil {
			lp.ring.Close()
		}
	}()
	if lp.waitSetup != nil && lp.runWaiting() {
		return
	}
	for {
		n, err := lp.poll()
		if err != nil {
			lp.srv.log.Error("epoll_wait failed; the event loop stops", "err", err)
			for _, c := range lp.conns {
				if c != nil {
					lp.close(c)
				}
			}
			return
		}
		now := time.Now()
		lp.nowMs = now.UnixMilli()
		for i := range max(n, 0) {
			ev := &lp.events[i]
			fd := int(ev.Fd)
			if fd == lp.efd {
				lp.control(now)
				continue
			}
			c := lp.conn(fd)
			if c == nil {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 && len(c.out) > 0 {
				lp.writeOut(c)
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && len(c.out) == 0 && !c.closing {
				if lp.ring != nil {
					lp.reading = append(lp.reading, c)
				} else {
					lp.readable(c, now)
				}
			}
		}
		if len(lp.reading) > 0 {
			lp.readBatch(now)
		}
		lp.finish()
		if len(lp.lagging) > 0 && lp.nowMs >= lp.lagCheckMs {
			lp.publishLagging()
			lp.lagCheckMs = lp.nowMs + publishMs/4
		}
		if lp.stopSeen || lp.srv.timeout.Load() > 0 {
			lp.expire(now)
			if lp.stopSeen && lp.nconns == 0 && lp.exit() {
				return
			}
		}
	}
}

// control takes new connections and notices a stop.
func (lp *loop) control(now time.Time) {
	var buf [8]byte
	syscall.Read(lp.efd, buf[:])
	lp.mu.Lock()
	in := lp.incoming
	lp.incoming = nil
	mons := lp.monitors
	lp.monitors = nil
	pq := lp.pushq
	lp.pushq = nil
	stopping := lp.stopping
	lp.mu.Unlock()
	for _, m := range mons {
		if c := m.c; lp.conn(c.fd) == c {
			c.w.Raw(m.take())
			lp.markDirty(c)
		}
	}
	for _, c := range pq {
		lp.takePushed(c)
	}
	for _, c := range in {
		if lp.wring != nil {
			lp.gen++
			c.ringGen = lp.gen
		}
		if lp.wring != nil && !lp.helping {
			lp.put(c)
			lp.armRecv(c)
			lp.touch(c, now)
			continue
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			lp.srv.log.Warn("cannot watch a new connection; closing it", "client", c.addr, "err", err)
			lp.put(c)
			lp.close(c)
			continue
		}
		lp.put(c)
		lp.touch(c, now)
	}
	if stopping && !lp.stopSeen {
		lp.stopSeen = true
		for _, c := range lp.conns {
			if c == nil {
				continue
			}
			c.stopping.Store(true)
			c.deadline = now.Add(drainWindow).UnixMilli()
		}
	}
}

// deliverTo hands the loop a connection with bytes queued by another goroutine.
func (lp *loop) deliverTo(c *Conn) {
	lp.mu.Lock()
	lp.pushq = append(lp.pushq, c)
	lp.mu.Unlock()
	lp.wake()
}

// takePushed moves bytes queued for c by other goroutines to its output; if they end a
// blocking command, the requests buffered behind it run.
func (lp *loop) takePushed(c *Conn) {
	if lp.conn(c.fd) != c {
		return // closed meanwhile
	}
	b, unblock := c.takePushed()
	if len(c.out) > 0 {
		lp.setOut(c, append(c.out, b...)) // counted in deliver
	} else {
		c.w.Raw(b)
		lp.markDirty(c)
	}
	if unblock {
		c.blocked = false
		if len(c.out) == 0 {
			lp.process(c)
		}
	}
}

// conn returns the loop's connection on fd, or nil.
func (lp *loop) conn(fd int) *Conn {
	if fd < 0 || fd >= len(lp.conns) {
		return nil
	}
	return lp.conns[fd]
}

// put records a new connection.
func (lp *loop) put(c *Conn) {
	if c.fd >= len(lp.conns) {
		lp.conns = append(lp.conns, make([]*Conn, c.fd+1-len(lp.conns)+16)...)
	}
	lp.conns[c.fd] = c
	lp.nconns++
}

// touch records activity, and while stopping sets the connection's drain deadline.
func (lp *loop) touch(c *Conn, now time.Time) {
	// Recorded to the millisecond; skipping the atomic store within one saves a locked
	// instruction per request under load.
	if ms := now.UnixMilli(); ms != c.lastActive.Load() {
		c.lastActive.Store(ms)
	}
	if lp.stopSeen {
		c.deadline = now.Add(drainWindow).UnixMilli()
	}
}

// expire closes connections idle for longer than the timeout setting (as it is now: CONFIG SET
// applies to every connection), or, while stopping, past their drain deadline.
func (lp *loop) expire(now time.Time) {
	ms := now.UnixMilli()
	timeout := lp.srv.timeout.Load() / int64(time.Millisecond)
	for _, c := range lp.conns {
		switch {
		case c == nil || len(c.out) > 0 || c.inRing:
		case lp.stopSeen && c.deadline != 0 && ms > c.deadline:
			lp.close(c)
		case timeout > 0 && ms-c.lastActive.Load() > timeout:
			lp.srv.log.Debug("closing idle client", "client", c.addr)
			lp.close(c)
		}
	}
}

// readable reads once from c and runs the requests that completed.
func (lp *loop) readable(c *Conn, now time.Time) { lp.afterRead(c, c.rd.Fill(), now) }

// readBatch reads the connections of lp.reading through the ring, one system call for all (or
// for each ringEntries of them), and runs the requests that completed.
func (lp *loop) readBatch(now time.Time) {
	lo := 0
	for i, c := range lp.reading {
		if lp.conn(c.fd) != c || len(c.out) > 0 || c.closing {
			lp.reading[i] = nil // closed or busy meanwhile
			continue
		}
		if lp.ring != nil && lp.ring.Full() {
			lp.submitReads(lo, i, now)
			lo = i
			if lp.conn(c.fd) != c || len(c.out) > 0 || c.closing {
				lp.reading[i] = nil
				continue
			}
		}
		if lp.ring == nil {
			lp.reading[i] = nil
			lp.readable(c, now) // the ring failed
			continue
		}
		lp.ring.Recv(c.fd, c.rd.Space(), uint64(i))
	}
	if lp.ring != nil {
		lp.submitReads(lo, len(lp.reading), now)
	}
	clear(lp.reading)
	lp.reading = lp.reading[:0]
}

// submitReads submits the reads queued for lp.reading[lo:hi] and runs what they brought.
func (lp *loop) submitReads(lo, hi int, now time.Time) {
	done, err := lp.ring.Submit()
	lp.completions = done
	for _, d := range done {
		lp.takeRead(d, now)
	}
	lp.completions = nil
	if err != nil {
		lp.ringFailed(err, lp.reading[lo:hi])
	}
}

// takeRead runs what a read of the ring brought, unless it was taken already (by serveBusy).
func (lp *loop) takeRead(d uring.Completion, now time.Time) {
	c := lp.reading[d.Tag]
	if c == nil {
		return
	}
	lp.reading[d.Tag] = nil
	if lp.conn(c.fd) != c {
		return // closed by a request of a connection before it in this batch
	}
	n, rerr := 0, error(nil)
	switch {
	case d.Res > 0:
		n = int(d.Res)
		lp.srv.stats.netIn.Add(int64(n))
	case d.Res == 0:
		rerr = errEOF
	case syscall.Errno(-d.Res) == syscall.EAGAIN || syscall.Errno(-d.Res) == syscall.EINTR:
		rerr = resp.ErrWouldBlock // epoll reports the socket again if it has bytes
	default:
		rerr = syscall.Errno(-d.Res)
	}
	lp.afterRead(c, c.rd.Commit(n, rerr), now)
}

// ringFailed gives up the ring after a failed submission; the loop goes on with a system call
// per read and write. An operation without a result may still be in the kernel's hands, using
// its connection's buffer: those connections (the non-nil ones of unfinished) are closed, and
// kept referenced, with the ring, for the life of the loop. Sockets made non-blocking for each
// operation (MSG_DONTWAIT) finish during the submission, so this does not happen in practice.
func (lp *loop) ringFailed(err error, unfinished []*Conn) {
	lp.srv.log.Error("io_uring failed; the event loop goes on with plain system calls", "err", err)
	for i, c := range unfinished {
		if c != nil {
			lp.abandoned = append(lp.abandoned, c)
			lp.close(c)
			unfinished[i] = nil
		}
	}
	lp.deadRing = lp.ring
	lp.ring = nil
}

// afterRead runs the requests that a read of c (with result err) completed.
func (lp *loop) afterRead(c *Conn, err error, now time.Time) {
	switch {
	case err == nil:
	case err == resp.ErrWouldBlock:
		return
	default:
		// The client closed its side, or the socket failed (or was shut down by CLIENT
		// KILL): replies to what it sent before have been written.
		lp.close(c)
		return
	}
	lp.touch(c, now)
	if !c.blocked {
		lp.process(c)
	}
}

// prefetchMinBytes is the buffered input from which process prepares the filters' memory for the
// batch (prefetchBatch): about two BF.ADD requests.
const prefetchMinBytes = 80

// process runs the complete requests in c's buffer, until it is empty, a reply could not be
// written whole (c.out), or the connection is closing.
func (lp *loop) process(c *Conn) {
	defer func() {
		lp.batch.n = 0 // the batch's items point into c's read buffer
		if r := recover(); r != nil {
			lp.srv.recovered(c, r)
			c.closing = true
			lp.markDirty(c)
		}
	}()
	if c.rd.Buffered() >= prefetchMinBytes {
		c.prefetchBatch()
	}
	for len(c.out) == 0 && !c.closing && !c.blocked && !c.inRing {
		if c.resume != nil {
			// A command held for a key being migrated runs before the requests behind it.
			args := c.resume
			c.resume, c.rerun = nil, true
			c.execute(args)
			if c.wait != nil {
				lp.wait = c.wait
				c.wait = nil
			}
			continue
		}
		args, err := c.rd.ReadBuffered()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.w.Error("ERR " + pe.Msg)
				lp.srv.log.Debug("protocol error; closing client", "client", c.addr, "err", pe.Msg)
			}
			c.closing = true
			break
		}
		if args == nil {
			break
		}
		c.execute(args)
		lp.batch.at++
		if c.hijack != nil {
			lp.handOver(c)
			return
		}
		if c.quit {
			c.closing = true
		}
		if c.wait != nil {
			lp.wait = c.wait
			c.wait = nil
		}
		if c.w.Buffered() >= flushAt {
			// A large reply: write it now (after the journal), rather than grow the buffer.
			// Like output queued elsewhere, it counts against the client's output limit.
			if c.outputOver(c.omem() + int64(c.w.Buffered())) {
				lp.closeForOutput(c)
				return
			}
			if !lp.waitJournal() {
				return
			}
			lp.write(c)
		}
	}
	lp.markDirty(c)
}

func (lp *loop) markDirty(c *Conn) {
	if c.w.Buffered() > 0 || c.closing {
		lp.dirty = append(lp.dirty, c)
	}
}

// waitJournal makes this iteration's journal records durable, outside the gate. If the journal
// fails, every connection with replies waiting is closed without them.
func (lp *loop) waitJournal() bool {
	if lp.wait == nil {
		return true
	}
	w := lp.wait
	lp.wait = nil
	if lp.gs.entered {
		lp.srv.gate.exit(lp.gs.slot)
		lp.gs.entered = false
	}
	if err := w(); err != nil {
		lp.srv.log.Error("journal failed; closing clients without acknowledging their writes", "err", err)
		for _, c := range lp.dirty {
			c.w.Clear()
			lp.close(c)
		}
		lp.dirty = lp.dirty[:0]
		return false
	}
	return true
}

// finish ends an iteration: leave the gate, wait for the journal, write every reply.
func (lp *loop) finish() {
	if lp.gs.entered {
		lp.srv.gate.exit(lp.gs.slot)
		lp.gs.entered = false
	}
	if !lp.waitJournal() {
		return
	}
	for _, c := range lp.dirty {
		if lp.conn(c.fd) != c {
			continue // closed meanwhile
		}
		if c.pendingCmds >= publishEvery || lp.nowMs-c.publishedAt >= publishMs {
			c.publishedAt = lp.nowMs
			c.publish()
		} else if c.pendingCmds > 0 && !c.lagging {
			c.lagging = true
			lp.lagging = append(lp.lagging, c)
		}
		switch {
		case lp.helping:
			lp.write(c)
		case lp.wring != nil:
			lp.queueSend(c)
		case lp.ring != nil:
			lp.queueWrite(c)
		default:
			lp.write(c)
		}
	}
	if len(lp.writing) > 0 {
		lp.submitWrites()
	}
	for _, c := range lp.dirty {
		if c.closing && len(c.out) == 0 && !c.inRing && lp.conn(c.fd) == c {
			lp.close(c)
		}
	}
	clear(lp.dirty)
	lp.dirty = lp.dirty[:0]
}

// publishLagging publishes the connections of lp.lagging whose last publication is publishMs
// old, and forgets those closed meanwhile (closing published them). Without it, the last
// commands of a connection that falls quiet would stay unpublished until its next batch: INFO
// would show a command's latency percentiles (observed as it ran) with none of its calls.
func (lp *loop) publishLagging() {
	keep := lp.lagging[:0]
	for _, c := range lp.lagging {
		switch {
		case lp.conn(c.fd) != c:
			c.lagging = false
		case lp.nowMs-c.publishedAt >= publishMs:
			c.publishedAt = lp.nowMs
			c.publish()
			c.lagging = false
		default:
			keep = append(keep, c)
		}
	}
	clear(lp.lagging[len(keep):])
	lp.lagging = keep
}

// write writes c's buffered replies; what the socket does not take waits in c.out for EPOLLOUT.
func (lp *loop) write(c *Conn) {
	b := c.w.Bytes()
	if len(b) == 0 {
		return
	}
	if len(c.out) > 0 {
		lp.setOut(c, append(c.out, b...))
		c.w.Clear()
		lp.checkOut(c)
		return
	}
	n, err := writeFD(c.fd, b)
	lp.wrote(c, n, err)
}

// wrote takes the result of writing c's buffered replies: n bytes written, then err.
func (lp *loop) wrote(c *Conn, n int, err error) {
	b := c.w.Bytes()
	lp.srv.stats.netOut.Add(int64(n))
	if err != nil {
		c.w.Clear()
		lp.close(c)
		return
	}
	if n < len(b) {
		// Until the socket takes it all, watch for writability only: no new requests run.
		lp.setOut(c, append(c.out[:0], b[n:]...))
		c.w.Clear()
		if lp.checkOut(c) {
			if lp.wring != nil && !lp.helping {
				lp.pauseRecv(c)
			} else {
				lp.watch(c, syscall.EPOLLOUT)
			}
		}
		return
	}
	c.w.Clear()
}

// setOut replaces c.out, keeping its length where other goroutines read it (Conn.outLen).
func (lp *loop) setOut(c *Conn, out []byte) {
	c.out = out
	c.outLen.Store(int64(len(out)))
}

// checkOut closes c if its unwritten output breaks its output limit, and reports whether it
// is still open.
func (lp *loop) checkOut(c *Conn) bool {
	if c.outputOver(c.omem()) {
		lp.closeForOutput(c)
		return false
	}
	return true
}

// closeForOutput closes c at once for its output (see Conn.outputLimitReached).
func (lp *loop) closeForOutput(c *Conn) {
	c.outputLimitReached(true)
	c.w.Clear()
	lp.close(c)
}

// queueWrite queues c's buffered replies in the ring, as write would write them.
func (lp *loop) queueWrite(c *Conn) {
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
	if lp.ring.Full() {
		lp.submitWrites()
		if lp.ring == nil {
			lp.write(c) // the ring failed
			return
		}
	}
	lp.ring.Send(c.fd, b, uint64(len(lp.writing)))
	lp.writing = append(lp.writing, c)
	c.inRing = true
}

// submitWrites submits the writes queued in the ring.
func (lp *loop) submitWrites() {
	done, err := lp.ring.Submit()
	for _, d := range done {
		c := lp.writing[d.Tag]
		lp.writing[d.Tag] = nil
		c.inRing = false
		if lp.conn(c.fd) != c {
			continue // closed meanwhile
		}
		switch n := int(d.Res); {
		case n < 0 && syscall.Errno(-n) != syscall.EAGAIN && syscall.Errno(-n) != syscall.EINTR:
			lp.wrote(c, 0, syscall.Errno(-n))
		case n < len(c.w.Bytes()):
			// The socket took part (or none): try the rest as write does, with a plain
			// write (it stops at EAGAIN).
			n = max(n, 0)
			m, err := writeFD(c.fd, c.w.Bytes()[n:])
			lp.wrote(c, n+m, err)
		default:
			lp.wrote(c, n, nil)
		}
	}
	if err != nil {
		for _, c := range lp.writing {
			if c != nil {
				c.inRing = false
			}
		}
		lp.ringFailed(err, lp.writing)
	}
	clear(lp.writing)
	lp.writing = lp.writing[:0]
}

// writeOut writes pending output when the socket can take more; once it is all written, the
// requests already buffered run.
func (lp *loop) writeOut(c *Conn) {
	n, err := writeFD(c.fd, c.out)
	lp.srv.stats.netOut.Add(int64(n))
	if err != nil {
		lp.close(c)
		return
	}
	lp.setOut(c, c.out[n:])
	if len(c.out) > 0 {
		if lp.wring != nil && !lp.helping {
			lp.pollWritable(c)
		}
		return
	}
	lp.setOut(c, nil)
	if lp.wring != nil && !lp.helping {
		lp.armRecv(c)
	} else {
		lp.watch(c, syscall.EPOLLIN|syscall.EPOLLRDHUP)
	}
	if c.closing {
		lp.close(c)
		return
	}
	if !c.blocked {
		lp.process(c)
	}
}

// The loop's sockets are non-blocking, so their system calls return at once: they are made raw,
// without telling the scheduler (which would otherwise prepare to hand the core away).

func rawRead(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawEpollWait(epfd int, events []syscall.EpollEvent) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func writeFD(fd int, b []byte) (int, error) {
	total := 0
	for total < len(b) {
		n, err := rawWrite(fd, b[total:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return total, nil
		case err != nil:
			return total, err
		}
		total += n
	}
	return total, nil
}

func (lp *loop) watch(c *Conn, events uint32) {
	ev := syscall.EpollEvent{Events: events, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		lp.close(c)
	}
}

// close closes a connection of the loop.
func (lp *loop) close(c *Conn) {
	if lp.conn(c.fd) != c {
		return
	}
	c.publish()
	c.closePubSub()
	c.dropOutput()
	lp.setOut(c, nil)
	c.closing = true // a batch that closed it runs no further request (process)
	lp.conns[c.fd] = nil
	lp.nconns--
	if lp.wring != nil {
		lp.forget(c)
	}
	c.fdMu.Lock()
	c.fdClosed = true
	syscall.Close(c.fd) // also removes it from epoll
	c.fdMu.Unlock()
	c.srv.removeConn(c)
	c.srv.clients.Add(-1)
	c.srv.wg.Done()
}

// startLoops starts one event loop per core, unless cfg asks for none.
func (s *Server) startLoops(n int) error {
	if n < 0 {
		return nil
	}
	if n == 0 {
		// One loop per core, but one core is left for the rest: the runtime, the journal,
		// and on small machines the clients (as Redis advises for its io-threads).
		n = max(runtime.GOMAXPROCS(0)-1, 1)
	}
	for range n {
		lp, err := newLoop(s)
		if err != nil {
			return err
		}
		// A waiting loop may hold its P while it waits (see waitRing) when that leaves one
		// for the rest of the process.
		lp.holdP = n < runtime.GOMAXPROCS(0)
		s.loops = append(s.loops, lp)
		s.wg.Add(1)
		go lp.run()
	}
	return nil
}

// notifyMonitor asks the loop to write m's feed (see Server.feedMonitors).
func (lp *loop) notifyMonitor(m *monitor) {
	lp.mu.Lock()
	lp.monitors = append(lp.monitors, m)
	lp.mu.Unlock()
	lp.wake()
}

// handOver takes a connection out of the loop and gives it, as a blocking net.Conn, to the
// PSYNC that asked for it (internal/repl then serves it with its own goroutines).
func (lp *loop) handOver(c *Conn) {
	fn := c.hijack
	c.hijack = nil
	buf := bytes.Clone(c.rd.Unread())
	if b := c.w.Bytes(); len(b) > 0 {
		n, _ := writeFD(c.fd, b) // replies before PSYNC in the same batch, if any
		lp.srv.stats.netOut.Add(int64(n))
		c.w.Clear()
	}
	c.publish()
	c.closePubSub()
	lp.conns[c.fd] = nil
	lp.nconns--
	if lp.wring != nil {
		buf = lp.takeAhead(c, buf)
		lp.forget(c)
	} else {
		syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	}
	c.fdMu.Lock()
	c.fdClosed = true
	c.fdMu.Unlock()
	c.srv.removeConn(c)
	c.srv.clients.Add(-1)
	c.srv.wg.Done()
	syscall.SetNonblock(c.fd, false)
	f := os.NewFile(uintptr(c.fd), c.addr)
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		lp.srv.log.Warn("cannot hand a replica's connection over", "client", c.addr, "err", err)
		return
	}
	fn(nc, buf)
}

// serveBusy serves the loop while its own goroutine runs a script of caller's that passed
// busy-reply-threshold, until stop is closed, and then closes done: the other connections of
// the loop are answered as Redis answers them then (-BUSY, and SCRIPT KILL, SHUTDOWN NOSAVE and
// the other allow_busy commands run). The loop's goroutine is inside the script and touches
// none of the loop's state until done is closed, so this goroutine owns it meanwhile; it
// leaves alone the caller (whose request is the script) and the connections whose reads the
// interrupted iteration has yet to take, and does not use io_uring, whose completions that
// iteration is still reading.
func (lp *loop) serveBusy(caller *Conn, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	lp.helping = true
	defer func() {
		lp.helping = false
		lp.epf.SetReadDeadline(time.Time{})
		lp.hasDeadline = false
	}()
	// The reads the interrupted iteration brought and has not run yet: run them first (the
	// iteration skips what is taken).
	now := time.Now()
	for _, d := range lp.completions {
		if c := lp.reading[d.Tag]; c != nil && c != caller {
			lp.takeRead(d, now)
		}
	}
	if lp.wring != nil {
		lp.helpWaiting(caller, now)
		defer lp.helped()
	}
	lp.finish()
	events := make([]syscall.EpollEvent, 64)
	for {
		select {
		case <-stop:
			lp.finish()
			return
		default:
		}
		lp.epf.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n := 0
		lp.rc.Read(func(fd uintptr) bool {
			m, err := rawEpollWait(int(fd), events)
			if err != nil {
				m = 0
			}
			n = m
			return m > 0
		})
		now := time.Now()
		served := false
		for i := range n {
			fd := int(events[i].Fd)
			if fd == lp.efd {
				lp.control(now)
				served = true
				continue
			}
			c := lp.conn(fd)
			if c == nil || c == caller {
				continue
			}
			served = true
			if events[i].Events&syscall.EPOLLOUT != 0 && len(c.out) > 0 {
				lp.writeOut(c)
			}
			if events[i].Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && len(c.out) == 0 && !c.closing {
				lp.readable(c, now)
			}
		}
		lp.finish()
		if n > 0 && !served {
			time.Sleep(time.Millisecond) // only the caller is ready: epoll would report it at once again
		}
	}
}
