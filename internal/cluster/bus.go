package cluster

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"
)

// A Bus is the real cluster bus: it listens on the bus port, connects to the other nodes, reads
// their messages into a Cluster, writes the Cluster's, and ticks it ten times a second. It is
// the Env of a Cluster that runs on a network.
type Bus struct {
	// DialFunc opens a connection to another node (nil: net.DialTimeout); the server passes
	// its one dialer, which honours bind-source-addr.
	DialFunc func(addr string, timeout time.Duration) (net.Conn, error)
	// Log receives the bus's own messages.
	Log *slog.Logger
	// MaxMessage is the largest message accepted (0: MaxMessage).
	MaxMessage int

	c      *Cluster
	mu     sync.Mutex
	lns    []net.Listener
	conns  map[*busConn]struct{}
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// Now returns the time in unix milliseconds.
func (b *Bus) Now() int64 { return time.Now().UnixMilli() }

// Intn returns a random number in [0, n).
func (b *Bus) Intn(n int) int { return rand.IntN(n) }

// Listen opens the bus port on each address (redis.conf's bind, with its "-" prefix for an
// address that may be missing).
func (b *Bus) Listen(addrs []string, port int) error {
	var lns []net.Listener
	for _, a := range addrs {
		optional := len(a) > 1 && a[0] == '-'
		if optional {
			a = a[1:]
		}
		if a == "*" {
			a = ""
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
		if err != nil {
			if optional {
				continue
			}
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return errors.New("cluster: no address to listen on for the cluster bus")
	}
	b.mu.Lock()
	b.lns = append(b.lns, lns...)
	b.mu.Unlock()
	return nil
}

// Addrs returns the addresses the bus listens on.
func (b *Bus) Addrs() []net.Addr {
	b.mu.Lock()
	defer b.mu.Unlock()
	var as []net.Addr
	for _, l := range b.lns {
		as = append(as, l.Addr())
	}
	return as
}

// Attach gives the bus its Cluster, before Start; the Cluster must have been made with the Bus
// as its Env.
func (b *Bus) Attach(c *Cluster) {
	b.c = c
	if b.Log == nil {
		b.Log = c.log
	}
	if b.MaxMessage == 0 {
		b.MaxMessage = MaxMessage
	}
	b.conns = map[*busConn]struct{}{}
	b.stop = make(chan struct{})
	if b.DialFunc == nil {
		b.DialFunc = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
}

// Start accepts connections and ticks the Cluster until Close.
func (b *Bus) Start() {
	b.mu.Lock()
	lns := b.lns
	b.mu.Unlock()
	for _, ln := range lns {
		b.wg.Add(1)
		go b.accept(ln)
	}
	b.wg.Add(1)
	go b.tick()
}

func (b *Bus) tick() {
	defer b.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.c.Tick()
		}
	}
}

func (b *Bus) accept(ln net.Listener) {
	defer b.wg.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-b.stop:
				return
			default:
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			b.Log.Warn("cluster bus accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		b.Log.Debug("accepting cluster node connection", "from", nc.RemoteAddr().String())
		bc := b.newConn()
		if bc == nil {
			nc.Close()
			return
		}
		b.setup(nc)
		l := b.c.Accept(bc)
		bc.attach(nc)
		b.wg.Add(1)
		go b.read(bc, l)
	}
}

func (b *Bus) setup(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
		b.c.mu.Lock()
		ka := time.Duration(b.c.cfg.NodeTimeout) * time.Millisecond * 2
		b.c.mu.Unlock()
		tc.SetKeepAlivePeriod(max(ka, time.Second))
	}
}

// Dial connects l to ip:port in the background (Env.Dial).
func (b *Bus) Dial(l *Link, ip string, port int) Conn {
	bc := b.newConn()
	if bc == nil {
		bc = &busConn{b: b, closed: true}
		go b.c.LinkLost(l, errors.New("cluster: the bus is closed"))
		return bc
	}
	timeout := max(time.Duration(b.c.cfg.NodeTimeout)*time.Millisecond, time.Second)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		nc, err := b.DialFunc(net.JoinHostPort(ip, strconv.Itoa(port)), timeout)
		if err != nil {
			bc.Close()
			b.c.LinkLost(l, err)
			return
		}
		b.setup(nc)
		if !bc.attach(nc) {
			nc.Close()
			return
		}
		b.c.Connected(l)
		b.wg.Add(1)
		go b.read(bc, l)
	}()
	return bc
}

func (b *Bus) newConn() *busConn {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	bc := &busConn{b: b}
	bc.cond.L = &bc.mu
	b.conns[bc] = struct{}{}
	return bc
}

// read reads l's messages until its connection ends.
func (b *Bus) read(bc *busConn, l *Link) {
	defer b.wg.Done()
	var buf []byte
	for {
		frame, err := ReadFrame(bc.nc, buf, b.MaxMessage)
		if err != nil {
			switch {
			case errors.Is(err, ErrMalformed):
				b.Log.Warn("bad message length or signature received from the cluster bus; closing the link", "from", bc.RemoteIP(), "err", err)
			case errors.Is(err, io.ErrUnexpectedEOF):
				b.Log.Warn("cluster bus connection closed in the middle of a message", "from", bc.RemoteIP())
			}
			bc.Close()
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.Log.Debug("cluster bus read failed", "from", bc.RemoteIP(), "err", err)
			}
			b.c.LinkLost(l, err)
			return
		}
		b.c.Receive(l, frame)
		if cap(frame) <= 64<<10 {
			buf = frame[:0]
		} else {
			buf = nil
		}
	}
}

// Close stops accepting, closes every connection and stops ticking; it waits for the bus's
// goroutines.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	if b.stop != nil {
		close(b.stop)
	}
	for _, ln := range b.lns {
		ln.Close()
	}
	conns := make([]*busConn, 0, len(b.conns))
	for bc := range b.conns {
		conns = append(conns, bc)
	}
	b.mu.Unlock()
	for _, bc := range conns {
		bc.Close()
	}
	b.wg.Wait()
}

// A busConn queues messages and writes them from its own goroutine once connected.
type busConn struct {
	b       *Bus
	mu      sync.Mutex
	cond    sync.Cond
	nc      net.Conn
	queue   [][]byte
	pending int
	closed  bool
	local   string
	remote  string
}

// attach gives the connection its socket and starts its writer; false if it was closed.
func (bc *busConn) attach(nc net.Conn) bool {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.closed {
		return false
	}
	bc.nc = nc
	bc.local = hostOf(nc.LocalAddr())
	bc.remote = hostOf(nc.RemoteAddr())
	bc.b.wg.Add(1)
	go bc.write()
	return true
}

func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	h, _, _ := net.SplitHostPort(a.String())
	return h
}

func (bc *busConn) write() {
	defer bc.b.wg.Done()
	for {
		bc.mu.Lock()
		for len(bc.queue) == 0 && !bc.closed {
			bc.cond.Wait()
		}
		if bc.closed {
			bc.mu.Unlock()
			return
		}
		bufs := net.Buffers(bc.queue)
		bc.queue = nil
		nc := bc.nc
		bc.mu.Unlock()
		n, err := bufs.WriteTo(nc)
		bc.mu.Lock()
		bc.pending -= int(n)
		bc.mu.Unlock()
		if err != nil {
			bc.Close() // the reader sees the closed socket and reports the link lost
			return
		}
	}
}

// Send queues b (Conn.Send).
func (bc *busConn) Send(b []byte) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.closed {
		return
	}
	bc.queue = append(bc.queue, b)
	bc.pending += len(b)
	bc.cond.Signal()
}

// Close closes the connection (Conn.Close).
func (bc *busConn) Close() {
	bc.mu.Lock()
	if bc.closed {
		bc.mu.Unlock()
		return
	}
	bc.closed = true
	bc.queue = nil
	nc := bc.nc
	if bc.cond.L != nil {
		bc.cond.Broadcast()
	}
	bc.mu.Unlock()
	if nc != nil {
		nc.Close()
	}
	bc.b.mu.Lock()
	delete(bc.b.conns, bc)
	bc.b.mu.Unlock()
}

func (bc *busConn) LocalIP() string {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.local
}

func (bc *busConn) RemoteIP() string {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.remote
}

func (bc *busConn) Pending() int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.pending
}
