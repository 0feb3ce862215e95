//go:build linux

package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// More of Linux's io_uring ABI, for rings that wait (NewWaiting).
const (
	setupCQSize         = 1 << 3
	setupSubmitAll      = 1 << 7
	setupTaskrunFlag    = 1 << 9
	setupSingleIssuer   = 1 << 12
	setupDeferTaskrun   = 1 << 13
	enterGetEvents      = 1 << 0
	enterExtArg         = 1 << 3
	enterRegisteredRing = 1 << 4
	registerRingFDs     = 20
	unregisterRingFDs   = 21
	registerPbufRing    = 22
	opPollAdd           = 6
	opAsyncCancel       = 14
	sqeBufferSelect     = 1 << 5
	sqeCQESkipSuccess   = 1 << 6
	recvMultishot       = 1 << 1 // IORING_RECV_MULTISHOT, in ioprio
	pollAddMulti        = 1 << 0 // IORING_POLL_ADD_MULTI, in len
	cqeFBuffer          = 1 << 0
	cqeFMore            = 1 << 1
	cqeBufferShift      = 16
	pollIn              = 0x1
	pollOut             = 0x4
	pollErr             = 0x8
	pollHup             = 0x10
	bufGroup            = 0
	getEventsArgSize    = 24
	bufRingEntrySize    = 16
	bufRingTailOffset   = 14
	maxProvidedBuffers  = 1 << 15
)

// A Completion's Flags say more about it: see More and Buffer.
const (
	FlagBuffer = cqeFBuffer // the completion used a provided buffer (Completion.Buffer)
	FlagMore   = cqeFMore   // a multishot operation goes on after this completion
)

// More reports whether the multishot operation that produced c goes on: when it does not, the
// operation has ended and must be queued again to receive more.
func (c Completion) More() bool { return c.Flags&cqeFMore != 0 }

// Buffer returns the provided buffer a receive filled, and whether there is one.
func (c Completion) Buffer() (id uint16, ok bool) {
	return uint16(c.Flags >> cqeBufferShift), c.Flags&cqeFBuffer != 0
}

type getEventsArg struct {
	sigmask     uint64
	sigmaskSize uint32
	minWaitUsec uint32
	ts          uint64
}

type timespec struct{ sec, nsec int64 }

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// provided is a ring of buffers the kernel picks from for multishot receives.
type provided struct {
	ring    []byte // bufRingEntrySize per buffer; the tail sits in the first entry
	mem     []byte // the buffers, size bytes each
	size    int
	mask    uint16
	tail    uint16 // the next entry to fill, published at the next submission
	tailPtr *uint16
}

// NewWaiting makes a ring that an event loop waits on: receives are multishot, each completion
// bringing the bytes in one of bufs provided buffers of bufSize bytes, and Wait blocks until a
// completion arrives, submitting what was queued in the same system call. The kernel runs the
// ring's work only inside Wait (IORING_SETUP_DEFER_TASKRUN), so nothing reaches the ring's
// buffers or its completion queue while the caller is elsewhere, and only the thread that made
// the ring may submit to it (IORING_SETUP_SINGLE_ISSUER): the caller keeps its goroutine on one
// thread (runtime.LockOSThread) for the ring's life. bufs is a power of two.
//
// NewWaiting reports an error where the kernel lacks any of it (Linux 6.1 has all); callers
// then use New.
func NewWaiting(entries uint32, cqEntries uint32, bufs uint16, bufSize int) (*Ring, error) {
	if bufs == 0 || bufs&(bufs-1) != 0 || bufs > maxProvidedBuffers || bufSize <= 0 {
		return nil, fmt.Errorf("uring: %d provided buffers of %d bytes", bufs, bufSize)
	}
	p := params{flags: setupCQSize | setupSubmitAll | setupTaskrunFlag | setupSingleIssuer | setupDeferTaskrun, cqEntries: cqEntries}
	fd, _, errno := syscall.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("uring: io_uring_setup with IORING_SETUP_DEFER_TASKRUN (Linux 6.1): %w", errno)
	}
	r := &Ring{fd: int(fd), enterFD: fd}
	if err := r.probe(); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	r.done = make([]Completion, 0, p.cqEntries)
	if err := r.provide(bufs, bufSize); err != nil {
		r.Close()
		return nil, err
	}
	r.registerFD()
	return r, nil
}

// ringFDUpdate is struct io_uring_rsrc_update.
type ringFDUpdate struct {
	offset, resv uint32
	data         uint64
}

// registerFD registers the ring's descriptor with the calling thread (IORING_REGISTER_RING_FDS,
// Linux 5.18), which spares each io_uring_enter the look-up of the descriptor; where that
// fails, the calls name the descriptor.
func (r *Ring) registerFD() {
	upd := ringFDUpdate{offset: ^uint32(0), data: uint64(r.fd)}
	n, _, errno := syscall.Syscall6(sysRegister, uintptr(r.fd), registerRingFDs, uintptr(unsafe.Pointer(&upd)), 1, 0, 0)
	if errno == 0 && n == 1 {
		r.enterFD, r.enterFlags = uintptr(upd.offset), enterRegisteredRing
	}
}

// provide registers bufs buffers of size bytes as buffer group 0.
func (r *Ring) provide(bufs uint16, size int) error {
	prot, flags := syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS
	ringMem, err := syscall.Mmap(-1, 0, int(bufs)*bufRingEntrySize, prot, flags)
	if err != nil {
		return fmt.Errorf("uring: mmap: %w", err)
	}
	mem, err := syscall.Mmap(-1, 0, int(bufs)*size, prot, flags)
	if err != nil {
		syscall.Munmap(ringMem)
		return fmt.Errorf("uring: mmap: %w", err)
	}
	pb := &provided{ring: ringMem, mem: mem, size: size, mask: bufs - 1}
	pb.tailPtr = (*uint16)(unsafe.Pointer(&ringMem[bufRingTailOffset]))
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&ringMem[0]))), ringEntries: uint32(bufs), bgid: bufGroup}
	_, _, errno := syscall.Syscall6(sysRegister, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if errno != 0 {
		syscall.Munmap(ringMem)
		syscall.Munmap(mem)
		return fmt.Errorf("uring: io_uring_register(IORING_REGISTER_PBUF_RING, Linux 5.19): %w", errno)
	}
	r.pbuf = pb
	for id := range bufs {
		pb.put(id)
	}
	pb.publish()
	return nil
}

// put queues buffer id for the kernel; publish makes the queued ones visible.
func (pb *provided) put(id uint16) {
	e := unsafe.Pointer(&pb.ring[int(pb.tail&pb.mask)*bufRingEntrySize])
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&pb.mem[int(id)*pb.size])))
	*(*uint32)(unsafe.Add(e, 8)) = uint32(pb.size)
	*(*uint16)(unsafe.Add(e, 12)) = id
	pb.tail++
}

func (pb *provided) publish() {
	// The release store orders the entries before the tail for the kernel.
	atomicStore16(pb.tailPtr, pb.tail)
}

// atomicStore16 stores v at p with release semantics. Go has no 16-bit atomic store; on the
// platforms io_uring runs on an aligned 16-bit store is atomic, and the 32-bit atomic
// operation on the surrounding word orders it (the other half is the kernel-ignored resv of
// the first entry, which nothing else writes).
func atomicStore16(p *uint16, v uint16) {
	w := (*uint32)(unsafe.Pointer(uintptr(unsafe.Pointer(p)) &^ 3))
	shift := (uintptr(unsafe.Pointer(p)) & 3) * 8
	for {
		old := atomic.LoadUint32(w)
		nw := old&^(0xffff<<shift) | uint32(v)<<shift
		if atomic.CompareAndSwapUint32(w, old, nw) {
			return
		}
	}
}

// Data returns the bytes a receive completion brought in its provided buffer; the buffer must
// be given back with Release once they are used.
func (r *Ring) Data(c Completion) []byte {
	id, ok := c.Buffer()
	if !ok || c.Res <= 0 || r.pbuf == nil {
		return nil
	}
	off := int(id) * r.pbuf.size
	return r.pbuf.mem[off : off+int(c.Res)]
}

// Release gives the provided buffer of a completion back to the kernel (at the next
// submission), if it has one.
func (r *Ring) Release(c Completion) {
	if id, ok := c.Buffer(); ok && r.pbuf != nil {
		r.pbuf.put(id)
	}
}

// RecvMultishot queues a receive on the socket fd that goes on until it fails, the peer closes
// or it is cancelled: each completion brings bytes in a provided buffer (Data), and the last one
// has no FlagMore. It reports false, queueing nothing, when the ring is full.
func (r *Ring) RecvMultishot(fd int, tag uint64) bool {
	e := r.next()
	if e == nil {
		return false
	}
	*e = sqe{opcode: opRecv, flags: sqeBufferSelect, ioprio: recvMultishot, fd: int32(fd), bufIndex: bufGroup, userData: tag}
	return true
}

// PollMultishot queues a wait for fd to be readable that reports every wake-up, until it is
// cancelled (or fails). It reports false when the ring is full.
func (r *Ring) PollMultishot(fd int, tag uint64) bool {
	e := r.next()
	if e == nil {
		return false
	}
	*e = sqe{opcode: opPollAdd, fd: int32(fd), len: pollAddMulti, opFlags: pollIn, userData: tag}
	return true
}

// PollWritable queues a wait for the socket fd to take more bytes (or fail), reported once.
// It reports false when the ring is full.
func (r *Ring) PollWritable(fd int, tag uint64) bool {
	e := r.next()
	if e == nil {
		return false
	}
	*e = sqe{opcode: opPollAdd, fd: int32(fd), opFlags: pollOut | pollErr | pollHup, userData: tag}
	return true
}

// Cancel queues the cancellation of the operation queued with tag target: it ends with a
// completion of its own (with -ECANCELED, or its result if it finished first). Only a failed
// cancellation (nothing found) has a completion, tagged tag. It reports false when the ring is
// full.
func (r *Ring) Cancel(target, tag uint64) bool {
	e := r.next()
	if e == nil {
		return false
	}
	*e = sqe{opcode: opAsyncCancel, flags: sqeCQESkipSuccess, addr: target, userData: tag}
	return true
}

// next returns the next free submission entry, counted as queued, or nil when the ring is full.
func (r *Ring) next() *sqe {
	if r.Full() {
		return nil
	}
	tail := *r.sqTail + uint32(r.queued)
	i := tail & r.sqMask
	r.sqArray[i] = i
	r.queued++
	return &r.sqes[i]
}

// Wait submits what was queued, then waits until a completion arrives beyond those of the
// queued sends (which complete during the submission), or until timeout passes (0: no limit;
// negative: no wait), and returns every completion there is, in the order the kernel made
// them. The slice is valid until the next call; buffers given to Send are free again when it
// returns. Only the thread that made the ring may call it.
//
// With held, the wait does not tell Go's scheduler, which then keeps the caller's P (the Go
// runtime's processor) for it, as for a short system call: waking costs nothing more than the
// kernel's wake-up, where a blocking system call may find its P taken when it returns. It is
// for short waits: other goroutines cannot run on the held P, and the runtime interrupts a
// goroutine that keeps one for 10 ms (a signal, which ends the wait early).
func (r *Ring) Wait(timeout time.Duration, held bool) ([]Completion, error) {
	r.done = r.done[:0]
	if r.pbuf != nil {
		r.pbuf.publish()
	}
	if r.queued > 0 {
		atomic.StoreUint32(r.sqTail, *r.sqTail+uint32(r.queued))
		r.queued = 0
	}
	// What the kernel has not taken yet, from this call or an earlier one that it cut short.
	n := int(*r.sqTail - atomic.LoadUint32(r.sqHead))
	wait := timeout >= 0
	minComplete := 0
	if wait {
		minComplete = r.sends + 1
	}
	r.sends = 0
	var arg getEventsArg
	var ts timespec
	flags := enterGetEvents | r.enterFlags
	argp, argSize := uintptr(0), uintptr(0)
	if timeout > 0 {
		ts = timespec{sec: int64(timeout / time.Second), nsec: int64(timeout % time.Second)}
		arg.ts = uint64(uintptr(unsafe.Pointer(&ts)))
		flags |= enterExtArg
		argp, argSize = uintptr(unsafe.Pointer(&arg)), getEventsArgSize
	}
	for submitted := 0; ; {
		var m uintptr
		var errno syscall.Errno
		if wait && !held {
			m, _, errno = syscall.Syscall6(sysEnter, r.enterFD, uintptr(n-submitted), uintptr(minComplete), flags, argp, argSize)
		} else {
			m, _, errno = syscall.RawSyscall6(sysEnter, r.enterFD, uintptr(n-submitted), uintptr(minComplete), flags, argp, argSize)
		}
		switch errno {
		case 0:
			submitted += int(m)
			if submitted < n && m > 0 {
				continue
			}
		case syscall.EINTR, syscall.ETIME:
			// A signal, or the time is up, with nothing to submit (a call that submitted
			// returns the count).
		case syscall.EAGAIN, syscall.EBUSY:
			// Short of memory, or completions to reap first: reap; the entries not taken stay
			// in the queue for the next call.
		default:
			r.reap()
			return r.done, fmt.Errorf("uring: io_uring_enter: %w", errno)
		}
		break
	}
	r.reap()
	return r.done, nil
}

// Flush submits what was queued without waiting or reaping: the completions are returned by
// the next Wait. Only the thread that made the ring may call it.
func (r *Ring) Flush() error {
	if r.queued > 0 {
		if r.pbuf != nil {
			r.pbuf.publish()
		}
		atomic.StoreUint32(r.sqTail, *r.sqTail+uint32(r.queued))
		r.queued = 0
	}
	n := int(*r.sqTail - atomic.LoadUint32(r.sqHead))
	for n > 0 {
		m, _, errno := syscall.RawSyscall6(sysEnter, r.enterFD, uintptr(n), 0, r.enterFlags, 0, 0)
		switch errno {
		case 0:
			if m == 0 {
				return nil
			}
			n -= int(m)
		case syscall.EINTR:
		case syscall.EAGAIN, syscall.EBUSY:
			return nil // left for the next Wait
		default:
			return fmt.Errorf("uring: io_uring_enter: %w", errno)
		}
	}
	return nil
}

// unregisterFD undoes registerFD, which holds the ring open until the thread ends.
func (r *Ring) unregisterFD() {
	if r.enterFlags&enterRegisteredRing == 0 {
		return
	}
	upd := ringFDUpdate{offset: uint32(r.enterFD)}
	syscall.Syscall6(sysRegister, uintptr(r.fd), unregisterRingFDs, uintptr(unsafe.Pointer(&upd)), 1, 0, 0)
	r.enterFD, r.enterFlags = uintptr(r.fd), 0
}
