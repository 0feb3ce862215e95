package repl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// The states of a replica's link to its primary; String gives ROLE's names.
type linkState int

const (
	stateConnect linkState = iota
	stateConnecting
	stateHandshake
	stateTransfer
	stateConnected
)

func (s linkState) String() string {
	return [...]string{"connect", "connecting", "handshake", "sync", "connected"}[s]
}

// A masterLink is a replica's link to its primary: one goroutine that connects, syncs and
// applies the stream, reconnecting after a second when the link breaks, until stop.
type masterLink struct {
	r         *Repl
	host      string
	port      int
	done      chan struct{}
	stopOnce  sync.Once
	state     linkState // under r.mu
	synced    bool      // under r.mu: the data follows this primary
	lastIO    time.Time // under r.mu
	downSince time.Time // under r.mu
	syncSize  int64     // under r.mu; -1 for an RDB behind an EOF mark
	syncRead  atomic.Int64
	readOff   atomic.Int64 // slave_read_repl_offset: the stream offset of the bytes received
	connMu    sync.Mutex
	nc        net.Conn // the current connection, for kill
	killed    atomic.Int64
	writeMu   sync.Mutex

	// The stream's state that outlives a connection, as a Redis replica's cached master keeps
	// it; under r.applyMu.
	db       int   // the database the stream's commands are for (SELECT)
	addsNew  int64 // adds in the stream up to this offset are applied as new (see Loaded)
	asNew    bool  // Host.SetAddsAsNew(true) is in effect
	lastStop string
}

func (m *masterLink) stop() {
	m.stopOnce.Do(func() {
		close(m.done)
		m.kill()
	})
}

// kill closes the current connection; the link reconnects (unless stopped).
func (m *masterLink) kill() int {
	m.connMu.Lock()
	defer m.connMu.Unlock()
	if m.nc == nil {
		return 0
	}
	m.nc.Close()
	m.killed.Add(1)
	return 1
}

func (m *masterLink) stopped() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

func (m *masterLink) setState(s linkState) {
	m.r.mu.Lock()
	if m.state == stateConnected && s != stateConnected {
		m.downSince = time.Now()
	}
	m.state = s
	m.lastIO = time.Now()
	m.r.mu.Unlock()
}

func (m *masterLink) run() {
	defer m.r.wg.Done()
	addr := net.JoinHostPort(m.host, strconv.Itoa(m.port))
	for !m.stopped() {
		err := m.session(addr)
		m.setState(stateConnect)
		if m.stopped() {
			return
		}
		var unsup *UnsupportedError
		switch {
		case errors.As(err, &unsup):
			// The link stops at the same command every time until the setting changes: say
			// so once, and keep trying (CONFIG SET rdb-skip-unknown-types yes lets it on).
			m.r.applyMu.Lock()
			first := m.lastStop != err.Error()
			m.lastStop = err.Error()
			m.r.applyMu.Unlock()
			if first {
				m.r.log.Error("replication stopped: the primary sent what bloomd does not hold; retrying every second", "primary", addr, "err", err)
			}
		default:
			m.r.log.Warn("link with the primary lost or failed; retrying in 1 s", "primary", addr, "err", err)
		}
		m.r.mu.Lock()
		m.r.linkErr = oneLine(err.Error())
		m.r.mu.Unlock()
		select {
		case <-m.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// connReader reads the connection with a deadline per read and counts the bytes.
type connReader struct {
	nc      net.Conn
	timeout time.Duration
	n       atomic.Int64
}

func (c *connReader) Read(p []byte) (int, error) {
	c.nc.SetReadDeadline(time.Now().Add(c.timeout))
	n, err := c.nc.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// maxLine bounds a reply line of the handshake.
const maxLine = 64 << 10

// session is one connection to the primary: handshake, sync, then the stream until it fails.
func (m *masterLink) session(addr string) error {
	r := m.r
	r.mu.Lock()
	cfg := r.cfg
	r.mu.Unlock()
	timeout := time.Duration(max(cfg.Timeout, 1)) * time.Second
	m.setState(stateConnecting)
	nc, err := r.dial(addr, timeout)
	if err != nil {
		return err
	}
	m.connMu.Lock()
	m.nc = nc
	m.connMu.Unlock()
	defer func() {
		m.connMu.Lock()
		m.nc = nil
		m.connMu.Unlock()
		nc.Close()
	}()
	if m.stopped() {
		return errors.New("stopped")
	}
	m.setState(stateHandshake)
	cr := &connReader{nc: nc, timeout: timeout}
	br := bufio.NewReaderSize(cr, 1<<20)
	cmd := func(args ...string) (string, error) {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		nc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := nc.Write(resp.AppendCommand(nil, bs...)); err != nil {
			return "", err
		}
		return readLine(br)
	}
	if line, err := cmd("PING"); err != nil {
		return err
	} else if line[0] == '-' && !strings.HasPrefix(line, "-NOAUTH") && !strings.HasPrefix(line, "-NOPERM") {
		return fmt.Errorf("primary answered PING with %s", line)
	}
	if cfg.MasterAuth != "" {
		args := []string{"AUTH", cfg.MasterAuth}
		if cfg.MasterUser != "" {
			args = []string{"AUTH", cfg.MasterUser, cfg.MasterAuth}
		}
		if line, err := cmd(args...); err != nil {
			return err
		} else if line[0] == '-' {
			return fmt.Errorf("unable to AUTH to the primary: %s", line)
		}
	}
	port := r.host.Port()
	if cfg.AnnouncePort != 0 {
		port = cfg.AnnouncePort
	}
	if line, err := cmd("REPLCONF", "listening-port", strconv.Itoa(port)); err != nil {
		return err
	} else if line[0] == '-' {
		r.log.Info("primary does not understand REPLCONF listening-port", "reply", line)
	}
	if cfg.AnnounceIP != "" {
		if _, err := cmd("REPLCONF", "ip-address", cfg.AnnounceIP); err != nil {
			return err
		}
	}
	// Redis ignores the capabilities it does not know; a bloomd primary sends its own format
	// to a replica that names it (see Config.SnapshotRDB).
	own := capaBloomd
	if cfg.SnapshotRDB {
		own = capaBloomdRDB
	}
	if _, err := cmd("REPLCONF", "capa", "eof", "capa", "psync2", "capa", own); err != nil {
		return err
	}
	r.mu.Lock()
	replid, from := r.replid, r.offset+1
	r.mu.Unlock()
	line, err := cmd("PSYNC", replid, strconv.FormatInt(from, 10))
	if err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(line, "+FULLRESYNC"):
		f := strings.Fields(line)
		if len(f) != 3 || len(f[1]) != 40 {
			return fmt.Errorf("primary replied with a malformed +FULLRESYNC: %q", clipLine(line))
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || off < 0 {
			return fmt.Errorf("primary replied with a malformed +FULLRESYNC: %q", clipLine(line))
		}
		if err := m.fullSync(nc, br, cr, f[1], off); err != nil {
			return err
		}
	case strings.HasPrefix(line, "+CONTINUE"):
		f := strings.Fields(line)
		r.mu.Lock()
		if len(f) == 2 && f[1] != r.replid {
			if len(f[1]) != 40 {
				r.mu.Unlock()
				return fmt.Errorf("primary replied with a malformed +CONTINUE: %q", clipLine(line))
			}
			// The primary has a new history that continues ours: keep ours as the
			// secondary ID, as the promoted replica did.
			r.replid2, r.secondOff, r.replid = r.replid, r.offset+1, f[1]
			r.selected = false
			r.disconnectLinksLocked()
		}
		m.synced = true
		r.mu.Unlock()
		r.log.Info("partial resynchronization succeeded", "primary", addr, "offset", from)
	default:
		return fmt.Errorf("PSYNC refused: %s", clipLine(line))
	}
	r.mu.Lock()
	r.linkErr = ""
	m.readOff.Store(r.offset)
	r.mu.Unlock()
	m.setState(stateConnected)
	return m.follow(nc, br, timeout)
}

func clipLine(s string) string { return s[:min(len(s), 128)] }

// readLine reads one reply line, skipping the empty lines a primary sends to keep the link
// alive while it prepares a snapshot (or waits for one to end before it takes the next): each
// read has its own deadline (connReader).
func readLine(br *bufio.Reader) (string, error) {
	for {
		var line []byte
		for {
			frag, err := br.ReadSlice('\n')
			line = append(line, frag...)
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return "", err
			}
			if len(line) > maxLine {
				return "", errors.New("primary sent a line longer than 64 KiB")
			}
		}
		s := strings.TrimRight(string(line), "\r\n")
		if s != "" {
			return s, nil
		}
	}
}

// eofMarkLen is the length of the mark that ends an RDB sent behind "$EOF:" (Redis's
// CONFIG_RUN_ID_SIZE).
const eofMarkLen = 40

// fullSync receives the primary's snapshot after +FULLRESYNC replid off: "$<length>" and that
// many bytes (bloomd's snapshot, or an RDB file as a disk-based Redis sync sends it), or
// "$EOF:<mark>", an RDB file and the mark (Redis's diskless sync), which the host loads
// straight from the connection (Host.Load), while the replica sends the primary a newline every
// second, as a Redis replica does while it loads. Only a snapshot loaded whole replaces the
// history: a transfer cut short leaves the replica empty and without one, to sync again.
func (m *masterLink) fullSync(nc net.Conn, br *bufio.Reader, cr *connReader, replid string, off int64) error {
	r := m.r
	line, err := readLine(br)
	if err != nil {
		return err
	}
	var size int64 = -1
	var mark []byte
	switch {
	case strings.HasPrefix(line, "$EOF:"):
		if len(line) != 5+eofMarkLen {
			return fmt.Errorf("primary sent a malformed EOF mark: %q", clipLine(line))
		}
		mark = []byte(line[5:])
	case strings.HasPrefix(line, "$"):
		size, err = strconv.ParseInt(line[1:], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("primary sent %q where the snapshot's length belongs", clipLine(line))
		}
	default:
		return fmt.Errorf("primary sent %q where the snapshot's length belongs", clipLine(line))
	}
	r.mu.Lock()
	m.syncSize = size
	r.mu.Unlock()
	start := cr.n.Load() - int64(br.Buffered())
	m.syncRead.Store(0)
	m.setState(stateTransfer)
	stopProgress := make(chan struct{})
	defer close(stopProgress)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				m.syncRead.Store(cr.n.Load() - int64(br.Buffered()) - start)
				m.writeMu.Lock()
				nc.SetWriteDeadline(time.Now().Add(cr.timeout))
				nc.Write([]byte("\n"))
				m.writeMu.Unlock()
			}
		}
	}()
	r.log.Info("full sync: loading the primary's snapshot as it arrives", "bytes", size, "diskless", mark != nil)
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if m.stopped() {
		return errors.New("replication stopped")
	}
	m.discardTransaction()
	// The data is being replaced: whatever history it had is gone, even if the load fails.
	r.mu.Lock()
	r.replid, r.replid2, r.secondOff, r.offset = newID(), zeroID, -1, 0
	r.backlog.reset()
	m.synced = false
	r.disconnectLinksLocked()
	r.mu.Unlock()
	p := &Payload{R: br, Size: size, mark: mark}
	ld, err := r.host.Load(p)
	if err != nil {
		return fmt.Errorf("loading the primary's snapshot: %w", err)
	}
	if err := p.finish(); err != nil {
		return err
	}
	m.syncRead.Store(cr.n.Load() - int64(br.Buffered()) - start)
	r.mu.Lock()
	if m.stopped() {
		// REPLICAOF NO ONE (or another primary) came while a snapshot received whole was
		// loading: the server's history is its own now, and must not take this primary's ID
		// and offset, which a promoted server would then share with a primary that goes on.
		r.mu.Unlock()
		return errors.New("replication stopped while the snapshot loaded")
	}
	r.replid, r.replid2, r.secondOff = replid, zeroID, -1
	r.offset = off
	r.backlog.reset()
	r.selected = false
	m.synced = true
	r.disconnectLinksLocked()
	r.mu.Unlock()
	m.db = ld.DB
	m.addsNew = 0
	if ld.AddsNewUntil > off {
		m.addsNew = ld.AddsNewUntil
	}
	r.addsNewUntil.Store(m.addsNew)
	m.setAddsNew(m.addsNew > off)
	r.log.Info("full sync done", "replid", replid, "offset", off, "adds_new_until", m.addsNew, "db", m.db)
	return nil
}

// setAddsNew switches Host.SetAddsAsNew; under r.applyMu.
func (m *masterLink) setAddsNew(on bool) {
	if on != m.asNew {
		m.asNew = on
		m.r.host.SetAddsAsNew(on)
	}
}

// discardTransaction drops a transaction of the stream that the link left unfinished (the
// commands applied since its MULTI, queued in the host, and not counted in the offset: the
// primary sends them again). Under r.applyMu.
func (m *masterLink) discardTransaction() {
	if m.r.inMulti {
		m.r.host.Apply([][]byte{[]byte("DISCARD")})
		m.r.host.EndBatch()
		m.r.inMulti = false
	}
}

// follow applies the primary's stream, feeding it on to this server's backlog and replicas, and
// acknowledges the offset every second and when asked (REPLCONF GETACK).
func (m *masterLink) follow(nc net.Conn, br *bufio.Reader, timeout time.Duration) error {
	r := m.r
	stopAcks := make(chan struct{})
	defer close(stopAcks)
	ack := func() error {
		r.mu.Lock()
		off := r.offset
		r.mu.Unlock()
		m.writeMu.Lock()
		defer m.writeMu.Unlock()
		nc.SetWriteDeadline(time.Now().Add(timeout))
		_, err := nc.Write(resp.AppendCommand(nil, []byte("REPLCONF"), []byte("ACK"), []byte(strconv.FormatInt(off, 10))))
		return err
	}
	if err := ack(); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopAcks:
				return
			case <-t.C:
				if ack() != nil {
					return
				}
			}
		}
	}()
	s := &streamReader{tap: &tap{r: br}, m: m}
	s.rd = resp.NewReader(s.tap)
	s.rd.Limits.MaxBulk = 1<<31 - 1
	defer func() {
		r.applyMu.Lock()
		m.discardTransaction()
		r.applyMu.Unlock()
	}()
	for {
		argv, err := s.rd.ReadCommand()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				return fmt.Errorf("the primary's stream is not RESP: %s", pe.Msg)
			}
			return err
		}
		if err := m.applyBatch(s, argv, ack); err != nil {
			return err
		}
	}
}

// A tap keeps the bytes read through it, so that the stream's bytes, exactly as the primary
// sent them, are what the replica counts, keeps in its backlog and sends to its own replicas.
type tap struct {
	r     io.Reader
	buf   []byte // bytes read, from the first one not yet recorded
	total int64  // bytes read in all
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	t.total += int64(n)
	return n, err
}

// A streamReader reads the primary's stream through a tap. t.buf[0] is the byte at the
// replica's offset (Repl.offset): the bytes before it are recorded, those after it are those of
// a transaction not yet executed, then those read but not yet applied.
type streamReader struct {
	tap  *tap
	rd   *resp.Reader
	m    *masterLink
	done int // the end, in tap.buf, of the last command applied
}

// consumed returns the bytes of tap.buf the reader has consumed.
func (s *streamReader) consumed() int {
	return len(s.tap.buf) - s.rd.Buffered()
}

// maxBatch bounds the stream bytes a replica applies in one batch, during which the server's
// operations that need every command stopped (a snapshot's start) wait.
const maxBatch = 1 << 20

// applyBatch applies argv and every complete command already received after it, as one batch:
// applied and recorded in the backlog together, and only while this link is the server's (a
// link replaced or stopped by REPLICAOF applies nothing more). The offset moves past a command
// once it is applied, except inside a transaction, which it passes only at its EXEC, as in
// Redis: a link cut inside one continues from its MULTI.
func (m *masterLink) applyBatch(s *streamReader, argv [][]byte, ack func() error) (err error) {
	r := m.r
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if m.stopped() {
		return errors.New("replication stopped")
	}
	r.mu.Lock()
	base := r.offset // the stream offset of s.tap.buf[0]
	r.mu.Unlock()
	recorded, committed := 0, 0 // bytes of s.tap.buf in the backlog, and passed by the offset
	record := func() {
		if committed > recorded {
			r.mu.Lock()
			r.appendLocked(s.tap.buf[recorded:committed])
			m.lastIO = time.Now()
			r.mu.Unlock()
			recorded = committed
		}
	}
	defer func() {
		r.host.EndBatch()
		record()
		n := copy(s.tap.buf, s.tap.buf[recorded:])
		s.tap.buf = s.tap.buf[:n]
		s.done -= recorded
		if cap(s.tap.buf) > 4*maxBatch && n < maxBatch {
			s.tap.buf = append([]byte(nil), s.tap.buf...)
		}
	}()
	for argv != nil {
		end := s.consumed()
		raw := s.tap.buf[s.done:end]
		s.done = end
		m.readOff.Store(base + int64(end))
		if i := bytes.IndexByte(raw, '*'); i < 0 || len(bytes.Trim(raw[:i], "\r\n")) > 0 {
			return errors.New("the primary sent an inline command: its stream is out of step (Redis closes such a link too)")
		}
		if err := m.applyOne(argv, base+int64(end), ack, record); err != nil {
			return err
		}
		if !r.inMulti {
			committed = end
		}
		if end-recorded >= maxBatch {
			return nil
		}
		if argv, err = s.rd.ReadBuffered(); err != nil {
			return err
		}
	}
	return nil
}

// applyOne applies one command of the stream, whose bytes end at stream offset end. flush
// records the commands before it (REPLCONF GETACK acknowledges them). Under r.applyMu.
func (m *masterLink) applyOne(argv [][]byte, end int64, ack func() error, flush func()) error {
	r := m.r
	name := strings.ToLower(string(argv[0]))
	if m.addsNew > 0 {
		m.setAddsNew(end <= m.addsNew)
		if end > m.addsNew {
			m.addsNew = 0
			r.addsNewUntil.Store(0)
		}
	}
	switch name {
	case "replconf":
		if len(argv) >= 2 && strings.EqualFold(string(argv[1]), "getack") {
			flush() // the acknowledgement covers everything before this command
			return ack()
		}
		return nil
	case "ping":
		return nil
	case "select":
		db, err := strconv.Atoi(string(argv[len(argv)-1]))
		if len(argv) != 2 || err != nil || db < 0 {
			return fmt.Errorf("the primary sent a malformed SELECT: %q", clipArgs(argv))
		}
		m.db = db
		return nil
	case "multi":
		r.inMulti = true
	case "exec", "discard":
		r.inMulti = false
	}
	if m.db != 0 && !dbless[name] {
		return m.unsupported(argv, fmt.Sprintf("db %d", m.db), fmt.Sprintf("a command for database %d (bloomd has one database, 0)", m.db))
	}
	if !r.host.Supports(argv[0]) {
		return m.unsupported(argv, "command "+name, "a command bloomd does not have (for a type it does not hold)")
	}
	r.host.Apply(argv)
	return nil
}

// dbless names the commands that apply whatever database the stream selected.
var dbless = map[string]bool{"multi": true, "exec": true, "discard": true, "publish": true, "flushall": true, "script": true}

// An UnsupportedError stops a replica's link at a command of its primary's stream that bloomd
// cannot apply (rdb-skip-unknown-types no).
type UnsupportedError struct {
	Command string // the command, clipped
	What    string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the primary's stream holds %s: %s; the link stops before it. To skip such commands (counted in INFO replication), set rdb-skip-unknown-types yes", e.What, e.Command)
}

// unsupported skips argv, counted under kind, when the settings say so, or stops the link.
func (m *masterLink) unsupported(argv [][]byte, kind, what string) error {
	r := m.r
	r.mu.Lock()
	skip := r.cfg.SkipUnsupported
	if skip {
		r.skipped[kind]++
	}
	r.mu.Unlock()
	if skip {
		return nil
	}
	return &UnsupportedError{Command: clipArgs(argv), What: what}
}

// clipArgs renders a command for a message, shortened.
func clipArgs(argv [][]byte) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if b.Len()+len(a) > 96 {
			b.WriteString("...")
			break
		}
		b.WriteString(strconv.Quote(string(a)))
	}
	return b.String()
}
