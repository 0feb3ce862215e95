package migrate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// The socket cache's limits: Redis's MIGRATE_SOCKET_CACHE_ITEMS and MIGRATE_SOCKET_CACHE_TTL.
const (
	MaxCached = 64
	IdleClose = 10 * time.Second
)

// maxLine bounds a reply line read from the target; Redis keeps the first 1023 bytes.
const (
	maxLine  = 64 << 10
	keepLine = 1023
)

// A Payload is one key's DUMP payload: Len bytes, which WriteTo writes.
type Payload struct {
	Len     int64
	WriteTo func(w io.Writer) (int64, error)
	// Close, if not nil, releases what the payload holds; it is called once the payload was
	// written or will not be.
	Close func()
}

// Bytes returns a Payload of a payload in memory.
func Bytes(p []byte) Payload {
	return Payload{Len: int64(len(p)), WriteTo: func(w io.Writer) (int64, error) {
		n, err := w.Write(p)
		return int64(n), err
	}}
}

// A Key is one key to move.
type Key struct {
	Name []byte
	// TTL returns the key's remaining time to live in milliseconds when the command is
	// written: 0 for none, negative for a key whose time has passed (it is left out).
	TTL func() int64
	// Open returns the key's payload; it is called once per attempt, just before the payload is
	// written, so that one payload at a time is held.
	Open func() (Payload, error)
}

// A Request is one MIGRATE.
type Request struct {
	Addr string // host:port, as given: the cache's name for the connection
	// DialAddr is the address to dial (net.JoinHostPort of the host and port), if it is not
	// Addr.
	DialAddr string
	DB       int64
	Timeout  time.Duration
	Replace  bool
	Asking   bool // send RESTORE-ASKING, as a cluster node does
	// Auth, when set, sends AUTH with Username (if not empty) and Password first.
	Auth               bool
	Username, Password string
}

// A Result says what the target did with the keys.
type Result struct {
	// Moved lists the indexes of the keys the target acknowledged, in order.
	Moved []int
	// Sent is the number of keys sent (those whose time had not passed).
	Sent int
	// Reply is the error reply for the client, without its leading '-' and CRLF, or "" for
	// +OK: the target's first error ("ERR Target instance replied with error: ...") or an I/O
	// failure ("IOERR ..."). Keys in Moved were moved whatever Reply says.
	Reply string
}

// Errors of an exchange, as Redis words them.
const (
	ErrConnect = "IOERR error or timeout connecting to the client"
	ErrWrite   = "IOERR error or timeout writing to target instance"
	ErrRead    = "IOERR error or timeout reading to target instance"
)

// A Dialer connects to host:port within a timeout.
type Dialer func(addr string, timeout time.Duration) (net.Conn, error)

// A Pool is the cache of connections MIGRATE keeps (Redis's migrate_cached_sockets). It is safe
// for concurrent use.
type Pool struct {
	dial Dialer
	now  func() time.Time

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
}

type conn struct {
	nc     net.Conn
	r      *bufio.Reader
	lastDB int64 // the database SELECTed, or -1
	used   time.Time
}

// NewPool returns an empty cache that makes connections with dial.
func NewPool(dial Dialer) *Pool {
	return &Pool{dial: dial, now: time.Now, conns: make(map[string]*conn)}
}

// take returns the cached connection for addr (taking it out of the cache) or a new one to
// dialAddr ("" for addr).
func (p *Pool) take(addr, dialAddr string, timeout time.Duration) (*conn, error) {
	p.mu.Lock()
	if c := p.conns[addr]; c != nil {
		delete(p.conns, addr)
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	if dialAddr == "" {
		dialAddr = addr
	}
	nc, err := p.dial(dialAddr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 4096), lastDB: -1}, nil
}

// put returns a connection to the cache, unless one for addr is there already (another
// MIGRATE's) or the pool is closed; it makes room by closing a random one.
func (p *Pool) put(addr string, c *conn) {
	c.used = p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.conns[addr] != nil {
		c.nc.Close()
		return
	}
	if len(p.conns) >= MaxCached {
		victim := rand.IntN(len(p.conns))
		for name, old := range p.conns {
			if victim == 0 {
				old.nc.Close()
				delete(p.conns, name)
				break
			}
			victim--
		}
	}
	p.conns[addr] = c
}

// CloseIdle closes the connections unused for longer than IdleClose, as Redis's
// migrateCloseTimedoutSockets does once a second.
func (p *Pool) CloseIdle() {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, c := range p.conns {
		if now.Sub(c.used) > IdleClose {
			c.nc.Close()
			delete(p.conns, name)
		}
	}
}

// Cached returns the number of cached connections.
func (p *Pool) Cached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close closes every cached connection; connections in use are closed when they come back.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for name, c := range p.conns {
		c.nc.Close()
		delete(p.conns, name)
	}
}

// Migrate sends keys to req.Addr and reads the target's replies, retrying once on a new
// connection as Redis does (see the package documentation). An error is returned only when a
// payload cannot be made (Key.Open); what the target or the network did is in the Result.
func (p *Pool) Migrate(req Request, keys []Key) (Result, error) {
	if req.Timeout <= 0 {
		req.Timeout = time.Second
	}
	mayRetry := true
	for {
		res, retry, err := p.attempt(req, keys, mayRetry)
		if err != nil || !retry {
			return res, err
		}
		mayRetry = false
	}
}

// attempt is one try of Migrate. retry reports a failure that deserves another try.
func (p *Pool) attempt(req Request, keys []Key, mayRetry bool) (res Result, retry bool, err error) {
	c, derr := p.take(req.Addr, req.DialAddr, req.Timeout)
	if derr != nil {
		// Redis connects without blocking and counts a refused connection (which the socket
		// reports as writable) as a failed write, retried once; an address that does not
		// resolve, or no answer within the timeout, as a failed connection.
		var dnsErr *net.DNSError
		if mayRetry && !isTimeout(derr) && !errors.As(derr, &dnsErr) {
			return Result{}, true, nil
		}
		if !isTimeout(derr) && !errors.As(derr, &dnsErr) {
			return Result{Reply: ErrWrite}, false, nil
		}
		return Result{Reply: ErrConnect}, false, nil
	}
	fail := func(reply string, cause error) (Result, bool, error) {
		c.nc.Close()
		if mayRetry && !isTimeout(cause) && len(res.Moved) == 0 {
			return Result{}, true, nil
		}
		res.Reply = reply
		return res, false, nil
	}

	// The command, written as it is made: a payload is opened only when its turn comes.
	w := bufio.NewWriterSize(&deadlineWriter{nc: c.nc, timeout: req.Timeout}, 64<<10)
	var buf []byte
	if req.Auth {
		if req.Username != "" {
			buf = resp.AppendCommand(buf[:0], []byte("AUTH"), []byte(req.Username), []byte(req.Password))
		} else {
			buf = resp.AppendCommand(buf[:0], []byte("AUTH"), []byte(req.Password))
		}
		w.Write(buf)
	}
	selectDB := c.lastDB != req.DB
	if selectDB {
		w.Write(resp.AppendCommand(buf[:0], []byte("SELECT"), strconv.AppendInt(nil, req.DB, 10)))
	}
	name := []byte("RESTORE")
	if req.Asking {
		name = []byte("RESTORE-ASKING")
	}
	var sent []int
	for i, k := range keys {
		ttl := int64(0)
		if k.TTL != nil {
			if ttl = k.TTL(); ttl < 0 {
				continue
			}
		}
		pl, err := k.Open()
		if err != nil {
			c.nc.Close()
			return Result{}, false, fmt.Errorf("migrate: key %q: %w", k.Name, err)
		}
		n := 4
		if req.Replace {
			n = 5
		}
		buf = fmt.Appendf(buf[:0], "*%d\r\n", n)
		for _, a := range [][]byte{name, k.Name, strconv.AppendInt(nil, ttl, 10)} {
			buf = fmt.Appendf(buf, "$%d\r\n%s\r\n", len(a), a)
		}
		buf = fmt.Appendf(buf, "$%d\r\n", pl.Len)
		w.Write(buf)
		ew := &errWriter{w: w}
		written, werr := pl.WriteTo(ew)
		if pl.Close != nil {
			pl.Close()
		}
		switch {
		case ew.err != nil:
			return fail(ErrWrite, ew.err)
		case werr == nil && written != pl.Len:
			werr = fmt.Errorf("payload of %d bytes, %d written", pl.Len, written)
			fallthrough
		case werr != nil:
			c.nc.Close()
			return Result{}, false, fmt.Errorf("migrate: key %q: %w", k.Name, werr)
		}
		buf = append(buf[:0], "\r\n"...)
		if req.Replace {
			buf = append(buf, "$7\r\nREPLACE\r\n"...)
		}
		w.Write(buf)
		sent = append(sent, i)
	}
	if err := w.Flush(); err != nil {
		return fail(ErrWrite, err)
	}
	res.Sent = len(sent)

	readLine := func() (string, error) {
		c.nc.SetReadDeadline(time.Now().Add(req.Timeout))
		line, err := c.r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = c.r.ReadSlice('\n')
			if len(line) < maxLine {
				line = append(line[:len(line):len(line)], more...)
			}
		}
		if err != nil {
			return "", err
		}
		s := string(line[:len(line)-1])
		if len(s) > 0 && s[len(s)-1] == '\r' {
			s = s[:len(s)-1]
		}
		if len(s) > keepLine {
			s = s[:keepLine]
		}
		return s, nil
	}
	var authReply, selectReply string
	if req.Auth {
		if authReply, err = readLine(); err != nil {
			return fail(ErrRead, err)
		}
	}
	if selectDB {
		if selectReply, err = readLine(); err != nil {
			return fail(ErrRead, err)
		}
	}
	targetErr := false
	for j, i := range sent {
		line, err := readLine()
		if err != nil {
			if j == 0 {
				return fail(ErrRead, err)
			}
			c.nc.Close()
			if !targetErr {
				res.Reply = ErrRead
			}
			return res, false, nil
		}
		errLine := ""
		switch {
		case req.Auth && len(authReply) > 0 && authReply[0] == '-':
			errLine = authReply
		case selectDB && len(selectReply) > 0 && selectReply[0] == '-':
			errLine = selectReply
		case len(line) > 0 && line[0] == '-':
			errLine = line
		}
		if errLine != "" {
			if !targetErr {
				targetErr = true
				c.lastDB = -1
				res.Reply = "ERR Target instance replied with error: " + errLine[1:]
			}
			continue
		}
		res.Moved = append(res.Moved, i)
	}
	if !targetErr {
		c.lastDB = req.DB
	}
	p.put(req.Addr, c)
	return res, false, nil
}

// isTimeout reports whether an I/O failure was a timeout, which Redis does not retry.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// An errWriter keeps the first error of the connection's side, to tell it from the payload's.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// A deadlineWriter gives each write to the connection its own deadline, as Redis's
// connSyncWrite gives each 64 KiB piece.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.nc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.nc.Write(p)
}
