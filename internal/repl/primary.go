package repl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/outbuf"
	"github.com/bloomd/bloom/internal/resp"
)

// The states of an attached replica, as INFO names them.
const (
	linkWaitBgsave = "wait_bgsave"
	linkSendBulk   = "send_bulk"
	linkOnline     = "online"
)

// A link is one replica attached to this server.
type link struct {
	r     *Repl
	nc    net.Conn
	ip    string
	port  int
	state string // under r.mu

	// What the replica said of itself (REPLCONF).
	info ReplicaInfo

	// A full sync's: waiting for the next snapshot (the stream is not collected yet), the
	// snapshot it was given (under r.mu), and where it is handed over.
	waiting  bool
	job      *syncJob
	assigned chan *syncJob

	bufMu     sync.Mutex
	buf       []byte       // stream bytes not yet written
	sending   int          // bytes taken from buf that stream is writing
	over      bool         // the replica passed its output limit: the link is closed
	softSince atomic.Int64 // see outbuf.Limit.Over
	signal    chan struct{}

	ack     atomic.Int64 // offset the replica acknowledged
	ackTime atomic.Int64 // unix ns of the last acknowledgement
	// acked is closed by the replica's first acknowledgement. After an RDB sent behind an
	// EOF mark the stream waits for it, as Redis 7.0's primary waits: a Redis replica finds
	// the mark only at the end of what it has read, so no byte may follow it until the
	// replica has loaded the RDB and said so.
	acked     chan struct{}
	ackedOnce sync.Once
	waitAck   bool
	once      sync.Once
	done      chan struct{}
}

// add queues stream bytes for the replica. Called under r.mu. A replica whose unwritten
// stream (including, during a full sync, all the writes since its snapshot's instant) passes
// the replica class of client-output-buffer-limit is disconnected, and resynchronises later,
// as Redis disconnects it.
func (l *link) add(b []byte) {
	l.bufMu.Lock()
	if l.over {
		l.bufMu.Unlock()
		return
	}
	used := int64(len(l.buf) + l.sending + len(b))
	if lim := l.r.outputLimitLocked(); !lim.Off() && lim.Over(used, unixSeconds, &l.softSince) {
		l.over = true
		l.buf = nil
		l.bufMu.Unlock()
		l.r.obufDrops.Add(1)
		l.r.log.Warn(fmt.Sprintf("Client addr=%s laddr=%s flags=S omem=%d cmd=psync scheduled to be closed ASAP for overcoming of output buffer limits.",
			l.nc.RemoteAddr(), l.nc.LocalAddr(), used))
		l.close()
		return
	}
	l.buf = append(l.buf, b...)
	l.bufMu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.nc.Close()
	})
}

// A ReplicaInfo is what a replica said about itself before PSYNC (REPLCONF).
type ReplicaInfo struct {
	Addr          string // the connection's remote address
	ListeningPort int    // REPLCONF listening-port
	IPAddress     string // REPLCONF ip-address
	PSync2        bool   // REPLCONF capa psync2
	EOF           bool   // REPLCONF capa eof: it reads an RDB sent behind an EOF mark
	// Bloomd is the snapshot format a bloomd replica asked for (REPLCONF capa bloomd or
	// bloomd-rdb): "bloomd", "rdb", or "" for a Redis replica, which gets an exact RDB file.
	Bloomd string
}

// Capa records a capability a replica named in REPLCONF capa.
func (i *ReplicaInfo) Capa(v string) {
	switch strings.ToLower(v) {
	case "psync2":
		i.PSync2 = true
	case "eof":
		i.EOF = true
	case capaBloomd:
		i.Bloomd = "bloomd"
	case capaBloomdRDB:
		i.Bloomd = "rdb"
	}
}

// ServeReplica takes over a connection that sent PSYNC replid offset: it answers with a
// partial or a full sync and then streams the writes, until the replica goes away or the
// link is dropped. buffered holds bytes the client sent after PSYNC that were already read.
// It returns at once; the link has its own goroutines.
func (r *Repl) ServeReplica(nc net.Conn, buffered []byte, replid string, offsetArg []byte, info ReplicaInfo) {
	ip := info.IPAddress
	if ip == "" {
		ip, _, _ = net.SplitHostPort(info.Addr)
	}
	l := &link{r: r, nc: nc, ip: ip, port: info.ListeningPort, info: info, signal: make(chan struct{}, 1), done: make(chan struct{}), acked: make(chan struct{})}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		nc.Close()
		return
	}
	r.wg.Add(1)
	r.active.Store(true) // the backlog starts here, at the current offset
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer l.close()
		offset, err := strconv.ParseInt(string(offsetArg), 10, 64)
		if err != nil {
			r.log.Warn("replica asks for synchronization but with a wrong offset", "replica", info.Addr)
			nc.Write([]byte("-ERR value is not an integer or out of range\r\n"))
			return
		}
		if !r.tryPartial(l, replid, offset, info) {
			if err := r.fullSync(l, info); err != nil {
				r.log.Warn("full sync with a replica failed", "replica", info.Addr, "err", err)
				r.dropLink(l)
				return
			}
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.readAcks(l, buffered)
		}()
		r.stream(l)
		r.dropLink(l)
	}()
}

// sameHistoryLocked reports whether this server's history contains the replica's: its ID is
// ours, or our secondary ID up to where that history ended.
func (r *Repl) sameHistoryLocked(replid string, offset int64) bool {
	return strings.EqualFold(replid, r.replid) || strings.EqualFold(replid, r.replid2) && offset <= r.secondOff
}

// tryPartial attaches l with +CONTINUE if this server holds the history the replica asks for.
func (r *Repl) tryPartial(l *link, replid string, offset int64, info ReplicaInfo) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.sameHistoryLocked(replid, offset) {
		if replid != "?" {
			r.partialErr++
			r.log.Info("partial resynchronization not accepted: replication ID mismatch or offset past the secondary ID's end",
				"asked", replid, "offset", offset, "replid", r.replid, "replid2", r.replid2, "second_repl_offset", r.secondOff)
		}
		return false
	}
	data, ok := r.backlogFromLocked(offset)
	if !ok {
		r.partialErr++
		r.log.Info("unable to partial resync for lack of backlog", "replica", info.Addr, "offset", offset,
			"backlog_first", r.firstByteLocked(), "master_repl_offset", r.offset)
		return false
	}
	reply := "+CONTINUE\r\n"
	if info.PSync2 {
		reply = "+CONTINUE " + r.replid + "\r\n"
	}
	l.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(l.nc, reply); err != nil {
		return true // the link closes; the replica retries
	}
	l.nc.SetWriteDeadline(time.Time{})
	l.buf = data
	l.state = linkOnline
	l.ackTime.Store(time.Now().UnixNano())
	r.links[l] = struct{}{}
	r.partialOK++
	r.log.Info("partial resynchronization accepted", "replica", info.Addr, "bytes", len(data), "from", offset)
	return true
}

func (r *Repl) setState(l *link, s string) {
	r.mu.Lock()
	l.state = s
	r.mu.Unlock()
}

func (r *Repl) timeout() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Duration(max(r.cfg.Timeout, 1)) * time.Second
}

// deadlineWriter writes with a deadline per write: a replica that stops reading for
// repl-timeout is dropped.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.nc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.nc.Write(p)
}

// stream writes the link's buffered stream bytes as they come.
func (r *Repl) stream(l *link) {
	if l.waitAck {
		select {
		case <-l.acked:
		case <-l.done:
			return
		}
	}
	w := &deadlineWriter{nc: l.nc, timeout: r.timeout()}
	var out []byte
	for first := true; ; first = false {
		if first {
			goto drain
		}
		select {
		case <-l.done:
			return
		case <-l.signal:
		}
	drain:
		l.bufMu.Lock()
		out, l.buf = l.buf, out[:0]
		l.sending = len(out)
		over := l.over
		l.bufMu.Unlock()
		if over {
			return // closed by add, which said why
		}
		if len(out) > 0 {
			_, err := w.Write(out)
			l.bufMu.Lock()
			l.sending = 0
			l.bufMu.Unlock()
			if err != nil {
				r.log.Info("connection with a replica lost", "replica", l.nc.RemoteAddr(), "err", err)
				return
			}
		}
		if cap(out) > 1<<20 {
			out = nil
		}
	}
}

// readAcks reads what the replica sends: REPLCONF ACK offset. Anything else is a protocol
// violation that drops the link.
func (r *Repl) readAcks(l *link, buffered []byte) {
	defer l.close()
	rd := resp.NewReader(io.MultiReader(strings.NewReader(string(buffered)), l.nc))
	rd.Limits.MaxBulk = 1 << 10
	rd.Limits.MaxElems = 16
	for {
		l.nc.SetReadDeadline(time.Now().Add(r.timeout()))
		argv, err := rd.ReadCommand()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				r.log.Warn("replica sent bytes that are not a command; disconnecting it", "replica", l.nc.RemoteAddr(), "err", pe.Msg)
			}
			return
		}
		if len(argv) >= 3 && strings.EqualFold(string(argv[0]), "replconf") && strings.EqualFold(string(argv[1]), "ack") {
			off, err := strconv.ParseInt(string(argv[2]), 10, 64)
			if err != nil || off < 0 {
				r.log.Warn("replica acknowledged a bad offset; disconnecting it", "replica", l.nc.RemoteAddr(), "offset", string(argv[2][:min(len(argv[2]), 32)]))
				return
			}
			r.mu.Lock()
			if off > r.offset {
				off = r.offset // a replica cannot have more than was sent
			}
			if off > l.ack.Load() {
				l.ack.Store(off)
			}
			l.ackedOnce.Do(func() { close(l.acked) })
			l.ackTime.Store(time.Now().UnixNano())
			close(r.ackChanged)
			r.ackChanged = make(chan struct{})
			r.mu.Unlock()
			continue
		}
		if strings.EqualFold(string(argv[0]), "ping") || strings.EqualFold(string(argv[0]), "replconf") {
			continue
		}
		r.log.Warn("replica sent a command other than REPLCONF ACK on its link; disconnecting it", "replica", l.nc.RemoteAddr(), "command", string(argv[0][:min(len(argv[0]), 32)]))
		return
	}
}

func (r *Repl) dropLink(l *link) {
	r.mu.Lock()
	delete(r.links, l)
	r.mu.Unlock()
	l.close()
}

func (r *Repl) sortedLinksLocked() []*link {
	ls := make([]*link, 0, len(r.links))
	for l := range r.links {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b *link) int { return strings.Compare(a.nc.RemoteAddr().String(), b.nc.RemoteAddr().String()) })
	return ls
}

// countAcksLocked returns the online replicas that acknowledged offset.
func (r *Repl) countAcksLocked(offset int64) int {
	n := 0
	for l := range r.links {
		if l.state == linkOnline && l.ack.Load() >= offset {
			n++
		}
	}
	return n
}

// Acked returns how many online replicas acknowledged offset: what WAIT answers at once.
func (r *Repl) Acked(offset int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.countAcksLocked(offset)
}

// Wait implements WAIT: it waits until n replicas acknowledged offset (the stream offset after
// the client's last write), or timeout passes (0: no limit), and returns how many did; stop
// (the server's end) or gone (the client's) ends the wait too. It asks the replicas attached
// for an acknowledgement at once. With none attached it sends nothing, so that the stream's
// offset does not move (Redis puts the request into its backlog when it has one).
func (r *Repl) Wait(n int, offset int64, timeout time.Duration, stop, gone <-chan struct{}) int {
	r.mu.Lock()
	if got := r.countAcksLocked(offset); got >= n {
		r.mu.Unlock()
		return got
	}
	if len(r.links) > 0 && r.master == nil {
		r.scratch = resp.AppendCommand(r.scratch[:0], []byte("REPLCONF"), []byte("GETACK"), []byte("*"))
		r.appendLocked(r.scratch)
	}
	r.mu.Unlock()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		r.mu.Lock()
		got := r.countAcksLocked(offset)
		ch := r.ackChanged
		r.mu.Unlock()
		if got >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.countAcksLocked(offset)
		case <-stop:
			return got
		case <-gone:
			return got
		}
	}
}

// outputLimitLocked returns the replica class's output limit, its hard limit raised to the
// backlog's size when it is smaller, as Redis does (a replica that the backlog could continue
// would otherwise be disconnected).
func (r *Repl) outputLimitLocked() outbuf.Limit {
	lim := r.cfg.OutputLimit
	if lim.Hard != 0 && lim.Hard < uint64(r.cfg.BacklogSize) {
		lim.Hard = uint64(r.cfg.BacklogSize)
	}
	return lim
}

// OutputLimitDisconnections returns how many replicas were disconnected for their output
// limit, for INFO's client_output_buffer_limit_disconnections.
func (r *Repl) OutputLimitDisconnections() int64 { return r.obufDrops.Load() }

func unixSeconds() int64 { return time.Now().Unix() }

// goodLocked counts the online replicas whose last acknowledgement is at most
// min-replicas-max-lag seconds old.
func (r *Repl) goodLocked(now time.Time) int {
	n := 0
	for l := range r.links {
		if l.state == linkOnline && now.Sub(time.Unix(0, l.ackTime.Load())) <= time.Duration(r.cfg.MinReplicasMaxLag)*time.Second {
			n++
		}
	}
	return n
}

// EnoughReplicas reports whether a primary may accept writes under min-replicas-to-write and
// min-replicas-max-lag.
func (r *Repl) EnoughReplicas() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.MinReplicasToWrite <= 0 || r.cfg.MinReplicasMaxLag <= 0 || r.master != nil {
		return true
	}
	return r.goodLocked(time.Now()) >= r.cfg.MinReplicasToWrite
}
