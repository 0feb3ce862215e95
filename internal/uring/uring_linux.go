//go:build linux

package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Linux's io_uring ABI (include/uapi/linux/io_uring.h).
const (
	sysSetup    = 425
	sysEnter    = 426
	sysRegister = 427

	registerProbe = 8 // IORING_REGISTER_PROBE, Linux 5.6
	opSupported   = 1 // IO_URING_OP_SUPPORTED

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0

	opSend = 26
	opRecv = 27

	msgDontWait = 0x40
	msgNoSignal = 0x4000
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	pad         uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// A Completion is the result of one queued operation: Tag as given to Send or Recv, Res, the
// byte count or a negated errno, and Flags (FlagMore, FlagBuffer).
type Completion struct {
	Tag   uint64
	Res   int32
	Flags uint32
}

// Ring is one io_uring instance.
type Ring struct {
	fd      int
	ringMem []byte
	cqMem   []byte // nil when the kernel maps both rings at once
	sqeMem  []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []sqe
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []cqe

	queued int // operations queued since the last Submit
	done   []Completion

	pbuf  *provided // NewWaiting's provided buffers
	sends int       // sends queued since the last Wait

	// What Wait and Flush pass io_uring_enter for the ring: its descriptor, or its index
	// among the thread's registered rings with enterRegisteredRing.
	enterFD    uintptr
	enterFlags uintptr
}

// New makes a ring that holds up to entries operations between submissions (a power of two;
// the kernel rounds up).
func New(entries uint32) (*Ring, error) {
	var p params
	fd, _, errno := syscall.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("uring: io_uring_setup: %w", errno)
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
	return r, nil
}

// probe checks that the kernel has the operations a Ring queues: io_uring came in Linux 5.1,
// its send and receive operations in 5.6, and on a kernel between the two every operation would
// complete with -EINVAL, which a caller would take for a broken socket.
func (r *Ring) probe() error {
	var pr struct {
		lastOp, opsLen uint8
		resv           uint16
		resv2          [3]uint32
		ops            [256]struct {
			op, resv uint8
			flags    uint16
			resv2    uint32
		}
	}
	_, _, errno := syscall.Syscall6(sysRegister, uintptr(r.fd), registerProbe, uintptr(unsafe.Pointer(&pr)), uintptr(len(pr.ops)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("uring: io_uring_register(IORING_REGISTER_PROBE): %w", errno)
	}
	for _, op := range []uint8{opSend, opRecv} {
		if op > pr.lastOp || int(op) >= int(pr.opsLen) || pr.ops[op].flags&opSupported == 0 {
			return fmt.Errorf("uring: this kernel's io_uring has no operation %d (send and receive need Linux 5.6)", op)
		}
	}
	return nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	prot, flags := syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE
	if r.ringMem, err = syscall.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("uring: mmap: %w", err)
	}
	cqMem := r.ringMem
	if !single {
		if r.cqMem, err = syscall.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
			return fmt.Errorf("uring: mmap: %w", err)
		}
		cqMem = r.cqMem
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(sqe{}))
	if r.sqeMem, err = syscall.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("uring: mmap: %w", err)
	}
	sq := unsafe.Pointer(&r.ringMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	cq := unsafe.Pointer(&cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*cqe)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)
	return nil
}

// Close releases the ring. Operations queued and not submitted are dropped. A ring made by
// NewWaiting is closed by the thread that made it.
func (r *Ring) Close() error {
	if r.fd >= 0 {
		r.unregisterFD()
	}
	var bufs [][]byte
	if r.pbuf != nil {
		bufs = [][]byte{r.pbuf.ring, r.pbuf.mem}
		r.pbuf = nil
	}
	defer func() {
		// After the ring: the kernel may use the buffers until it is closed.
		for _, m := range bufs {
			syscall.Munmap(m)
		}
	}()
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			syscall.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.ringMem = nil, nil, nil
	if r.fd < 0 {
		return nil
	}
	err := syscall.Close(r.fd)
	r.fd = -1
	return err
}

// Full reports whether the ring holds as many queued operations as it can: Submit them before
// queueing more.
func (r *Ring) Full() bool {
	return r.queued+int(*r.sqTail-atomic.LoadUint32(r.sqHead)) >= len(r.sqes)
}

// Send queues a write of p to the socket fd. p must stay unchanged until Submit returns.
// It reports false, queueing nothing, when the ring is full.
func (r *Ring) Send(fd int, p []byte, tag uint64) bool { return r.queue(opSend, fd, p, tag) }

// Recv queues a read from the socket fd into p, which must not be used until Submit returns.
// It reports false, queueing nothing, when the ring is full.
func (r *Ring) Recv(fd int, p []byte, tag uint64) bool { return r.queue(opRecv, fd, p, tag) }

func (r *Ring) queue(op uint8, fd int, p []byte, tag uint64) bool {
	e := r.next() // only this process moves the tail
	if e == nil {
		return false
	}
	*e = sqe{opcode: op, fd: int32(fd), len: uint32(len(p)), opFlags: msgDontWait | msgNoSignal, userData: tag}
	if len(p) > 0 {
		e.addr = uint64(uintptr(unsafe.Pointer(&p[0])))
	}
	if op == opSend {
		r.sends++
	}
	return true
}

// Submit issues the queued operations with one system call and returns their results, in the
// order the kernel finished them; the slice is valid until the next Submit. Buffers given to
// Send and Recv are free again when it returns. On an error, the operations without a result
// were not issued, and the ring must not be used again.
func (r *Ring) Submit() ([]Completion, error) {
	n := r.queued
	r.done = r.done[:0]
	if n == 0 {
		return r.done, nil
	}
	atomic.StoreUint32(r.sqTail, *r.sqTail+uint32(n))
	r.queued = 0
	// MSG_DONTWAIT makes every operation finish during the call, so asking it to wait for all
	// of them (min_complete, IORING_ENTER_GETEVENTS) returns at once; the raw call spares the
	// scheduler the preparations for a blocking one.
	for submitted := 0; submitted < n; {
		m, _, errno := syscall.RawSyscall6(sysEnter, uintptr(r.fd), uintptr(n-submitted), uintptr(n-submitted), 1, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			r.reap()
			return r.done, fmt.Errorf("uring: io_uring_enter: %w", errno)
		}
		submitted += int(m)
	}
	r.reap()
	if len(r.done) < n {
		return r.done, errIncomplete
	}
	return r.done, nil
}

var errIncomplete = errors.New("uring: an operation did not complete at once")

func (r *Ring) reap() {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := &r.cqes[head&r.cqMask]
		r.done = append(r.done, Completion{Tag: c.userData, Res: c.res, Flags: c.flags})
	}
	atomic.StoreUint32(r.cqHead, head)
}
