package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
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
	syncSize  int64     // under r.mu
	syncRead  atomic.Int64
	connMu    sync.Mutex
	nc        net.Conn // the current connection, for kill
	killed    atomic.Int64
	writeMu   sync.Mutex
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
		m.r.log.Warn("link with the primary lost or failed; retrying in 1 s", "primary", addr, "err", err)
		select {
		case <-m.done:
			return
		case <-time.After(time.Second):
		}
	}
}

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
	br := bufio.NewReaderSize(nc, 64<<10)
	cmd := func(args ...string) (string, error) {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		nc.SetDeadline(time.Now().Add(timeout))
		if _, err := nc.Write(resp.AppendCommand(nil, bs...)); err != nil {
			return "", err
		}
		line, err := readLine(br, nc, timeout)
		nc.SetDeadline(time.Time{})
		return line, err
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
	if _, err := cmd("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
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
			return fmt.Errorf("primary replied with a malformed +FULLRESYNC: %q", line)
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || off < 0 {
			return fmt.Errorf("primary replied with a malformed +FULLRESYNC: %q", line)
		}
		if err := m.loadSnapshot(nc, br, timeout); err != nil {
			return err
		}
		r.mu.Lock()
		r.replid, r.replid2, r.secondOff = f[1], zeroID, -1
		r.offset = off
		r.backlog.reset()
		m.synced = true
		r.disconnectLinksLocked()
		r.mu.Unlock()
		r.log.Info("full sync done", "replid", f[1], "offset", off)
	case strings.HasPrefix(line, "+CONTINUE"):
		f := strings.Fields(line)
		r.mu.Lock()
		if len(f) == 2 && f[1] != r.replid {
			if len(f[1]) != 40 {
				r.mu.Unlock()
				return fmt.Errorf("primary replied with a malformed +CONTINUE: %q", line)
			}
			// The primary has a new history that continues ours: keep ours as the
			// secondary ID, as the promoted replica did.
			r.replid2, r.secondOff, r.replid = r.replid, r.offset+1, f[1]
			r.disconnectLinksLocked()
		}
		m.synced = true
		r.mu.Unlock()
		r.log.Info("partial resynchronization succeeded", "primary", addr, "offset", from)
	default:
		return fmt.Errorf("PSYNC refused: %s", line)
	}
	m.setState(stateConnected)
	return m.follow(nc, br, timeout)
}

// readLine reads one reply line, skipping the empty lines a primary sends to keep the link
// alive while it prepares a snapshot (or waits for one to end before it takes the next): each
// gives the read another timeout.
func readLine(br *bufio.Reader, nc net.Conn, timeout time.Duration) (string, error) {
	for {
		nc.SetReadDeadline(time.Now().Add(timeout))
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return "", errors.New("primary sent a line longer than 64 KiB")
			}
			return "", err
		}
		s := strings.TrimRight(string(line), "\r\n")
		if s != "" {
			return s, nil
		}
	}
}

// loadSnapshot receives the snapshot ("$size\r\n" and size bytes) into a temporary file, and
// only once it has all of it replaces the data: a transfer cut short leaves the data as it was.
func (m *masterLink) loadSnapshot(nc net.Conn, br *bufio.Reader, timeout time.Duration) error {
	r := m.r
	line, err := readLine(br, nc, timeout)
	if err != nil {
		return err
	}
	size, err := strconv.ParseInt(strings.TrimPrefix(line, "$"), 10, 64)
	if line[0] != '$' || err != nil || size < 0 {
		return fmt.Errorf("primary sent %q where the snapshot's length belongs", line[:min(len(line), 64)])
	}
	r.mu.Lock()
	dir := r.cfg.TempDir
	m.syncSize = size
	r.mu.Unlock()
	m.syncRead.Store(0)
	m.setState(stateTransfer)
	f, err := os.CreateTemp(dir, "temp-repl-*.bdb")
	if err != nil {
		return fmt.Errorf("cannot create a file for the primary's snapshot: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	src := &progressReader{r: br, nc: nc, timeout: timeout, n: &m.syncRead}
	if n, err := io.CopyN(f, src, size); err != nil {
		return fmt.Errorf("snapshot transfer cut short after %d of %d bytes (the data is kept as it was): %w", n, size, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r.log.Info("snapshot received from the primary; loading it", "bytes", size, "file", filepath.Base(f.Name()))
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if m.stopped() {
		return errors.New("replication stopped")
	}
	if err := r.host.Load(bufio.NewReaderSize(f, 1<<20), size); err != nil {
		return fmt.Errorf("loading the primary's snapshot: %w", err)
	}
	return nil
}

// progressReader reads with a deadline per read and counts the bytes.
type progressReader struct {
	r       io.Reader
	nc      net.Conn
	timeout time.Duration
	n       *atomic.Int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	p.nc.SetReadDeadline(time.Now().Add(p.timeout))
	n, err := p.r.Read(b)
	p.n.Add(int64(n))
	return n, err
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
	rd := resp.NewReader(&progressReader{r: br, nc: nc, timeout: timeout, n: new(atomic.Int64)})
	rd.Limits.MaxBulk = 1<<31 - 1
	var raw []byte
	for {
		argv, err := rd.ReadCommand()
		if err != nil {
			return err
		}
		if err := m.applyBatch(rd, argv, &raw, ack); err != nil {
			return err
		}
	}
}

// maxBatch bounds the stream bytes a replica applies in one batch, during which the server's
// operations that need every command stopped (a snapshot's start) wait.
const maxBatch = 1 << 20

// applyBatch applies argv and every complete command already received after it, as one batch:
// applied and recorded in the backlog together, and only while this link is the server's (a
// link replaced or stopped by REPLICAOF applies nothing more).
func (m *masterLink) applyBatch(rd *resp.Reader, argv [][]byte, raw *[]byte, ack func() error) (err error) {
	r := m.r
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if m.stopped() {
		return errors.New("replication stopped")
	}
	b := (*raw)[:0]
	record := func() {
		r.mu.Lock()
		r.appendLocked(b)
		m.lastIO = time.Now()
		r.mu.Unlock()
		b = b[:0]
	}
	defer func() {
		r.host.EndBatch()
		record()
		*raw = b
	}()
	for argv != nil {
		switch {
		case len(argv) >= 2 && strings.EqualFold(string(argv[0]), "replconf") && strings.EqualFold(string(argv[1]), "getack"):
			record() // the acknowledgement covers everything before this command
			if err := ack(); err != nil {
				return err
			}
		case strings.EqualFold(string(argv[0]), "ping"), strings.EqualFold(string(argv[0]), "replconf"):
		default:
			r.host.Apply(argv)
		}
		b = resp.AppendCommand(b, argv...)
		if len(b) >= maxBatch {
			return nil
		}
		if argv, err = rd.ReadBuffered(); err != nil {
			return err
		}
	}
	return nil
}
