package repl

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
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

// Host is the server as replication sees it.
type Host interface {
	// Snapshot calls mark while no write is in flight and returns the snapshot of the data at
	// that instant. It fails without calling mark when the copies the snapshot needs do not fit
	// under the memory ceiling. An exact snapshot copies everything it would otherwise read
	// while writes go on (Bloom filters' bits): a Redis replica, which tests every add against
	// the bits it has, needs one (see Snapshot.Exact).
	Snapshot(mark func(), exact bool) (Snapshot, error)
	// Load replaces all data with a primary's snapshot, which it reads from p (see Payload).
	// While it runs the server answers -LOADING.
	Load(p *Payload) (Loaded, error)
	// Supports reports whether the server has the command name, which a primary's stream
	// holds: one it lacks is for a type it does not hold (Config.SkipUnsupported).
	Supports(name []byte) bool
	// Apply runs one command of the primary's stream, as the primary's client. Commands come
	// in batches, each ended by EndBatch: in between, the server may keep other work that
	// needs every command stopped waiting.
	Apply(argv [][]byte)
	// EndBatch ends a batch of Apply calls.
	EndBatch()
	// SetAddsAsNew switches how Apply applies Bloom filter adds: as new (counted, whatever the
	// bits say, as a log is replayed over a snapshot copied while adds went on) or as a client's
	// add (counted only if the item tests absent, as Redis applies its primary's stream).
	SetAddsAsNew(on bool)
	// Port returns the port the server listens on, which a replica announces to its primary
	// (unless replica-announce-port is set).
	Port() int
	// RoleChanged tells the server that it became a replica (true) or a primary (false).
	RoleChanged(replica bool)
	// Charge charges n bytes of replication's own memory (the backlog's chunks) to the
	// server's memory ceiling, or refuses them with an error that says why; a negative n
	// gives bytes back. It is called with the stream's lock held, so it must be quick.
	Charge(n int64) error
}

// A Payload is a primary's snapshot as it arrives on the link: "$<Size>" and that many bytes,
// or, with Size -1, Redis's diskless framing, "$EOF:<mark>", an RDB file and the mark. A host
// reads it either way, but no byte past it (the stream follows on R):
//
//   - straight from R: Size bytes, or an RDB file read exactly through its checksum (R is a
//     *bufio.Reader, which internal/rdb reads no further than that); the link then reads the
//     mark;
//   - or through Copy, which copies the snapshot's bytes as they are (to a file, say) and reads
//     the mark itself.
type Payload struct {
	R    *bufio.Reader
	Size int64
	mark []byte
	done bool // the mark has been read
}

// Copy copies the snapshot's bytes to w: Size of them, or those before the EOF mark, which it
// reads and checks. It returns the bytes copied.
func (p *Payload) Copy(w io.Writer) (int64, error) {
	if p.mark == nil {
		n, err := io.CopyN(w, p.R, p.Size)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	// Redis's way: the bytes before the last len(mark) read are the snapshot's, until those
	// last bytes are the mark.
	k := len(p.mark)
	buf := make([]byte, 0, 1<<20)
	var n int64
	for {
		if p.R.Buffered() == 0 {
			if _, err := p.R.Peek(1); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return n, err
			}
		}
		chunk, _ := p.R.Peek(p.R.Buffered())
		buf = append(buf, chunk...)
		p.R.Discard(len(chunk))
		if len(buf) >= k && bytes.Equal(buf[len(buf)-k:], p.mark) {
			m, err := w.Write(buf[:len(buf)-k])
			p.done = true
			return n + int64(m), err
		}
		if len(buf) > k {
			m, err := w.Write(buf[:len(buf)-k])
			n += int64(m)
			if err != nil {
				return n, err
			}
			buf = append(buf[:0], buf[len(buf)-k:]...)
		}
	}
}

// finish reads the EOF mark after a snapshot read straight from R, if Copy did not.
func (p *Payload) finish() error {
	if p.mark == nil || p.done {
		return nil
	}
	got := make([]byte, len(p.mark))
	if _, err := io.ReadFull(p.R, got); err != nil {
		return fmt.Errorf("reading the EOF mark after the RDB: %w", err)
	}
	if !bytes.Equal(got, p.mark) {
		return fmt.Errorf("the RDB is not followed by its EOF mark (%q, not %q)", got, p.mark)
	}
	p.done = true
	return nil
}

// Loaded is what a replica learns from its primary's snapshot besides the data.
type Loaded struct {
	// AddsNewUntil is the stream offset up to which the adds that follow the snapshot are
	// applied as new (0: none): those a snapshot read while adds went on may hold already.
	AddsNewUntil int64
	// DB is the database the stream starts in (an RDB's repl-stream-db).
	DB int
}

// A Snapshot is the data at one instant, as Host.Snapshot takes it.
type Snapshot struct {
	// Size is the exact number of bytes Write writes in bloomd's format; an RDB's length is
	// not known before it is written.
	Size int64
	// Exact reports that Write writes the data of the instant exactly; otherwise a Bloom
	// filter's bits are read as they are written and may hold adds made after it, which the
	// stream repeats, so the replica applies those adds as new up to the offset that window
	// returns (see persist.WriteSync).
	Exact bool
	// Write writes the snapshot to w, as an RDB file (for Redis replicas and bloomd replicas
	// that asked for one) or in bloomd's format. window, if not nil, is called once every key
	// is written (while no write is in flight, for a snapshot that is not exact) for the
	// offset written at the snapshot's end. Replicas that share the snapshot call Write each
	// for itself, concurrently.
	Write func(w io.Writer, rdb bool, window func() int64) error
	// Release gives back what the snapshot holds (copies charged to memory); it is called
	// once, after the last Write has returned. It may be nil.
	Release func()
}

// The capabilities a replica names in REPLCONF capa: Redis's, and bloomd's own, with which a
// bloomd replica asks for bloomd's snapshot format (capaBloomd) or for an RDB file read as a
// bloomd replica reads it (capaBloomdRDB). Redis ignores capabilities it does not know.
const (
	capaBloomd    = "bloomd"
	capaBloomdRDB = "bloomd-rdb"
)

// Config holds replication's settings, with redis.conf's names.
type Config struct {
	MasterAuth         string // masterauth
	MasterUser         string // masteruser
	ReplicaReadOnly    bool   // replica-read-only
	ServeStaleData     bool   // replica-serve-stale-data
	ReplicaPriority    int    // replica-priority
	AnnounceIP         string // replica-announce-ip
	AnnouncePort       int    // replica-announce-port
	BacklogSize        int64  // repl-backlog-size
	Timeout            int    // repl-timeout, seconds
	MinReplicasToWrite int    // min-replicas-to-write
	MinReplicasMaxLag  int    // min-replicas-max-lag, seconds
	BindSourceAddr     string // bind-source-addr: the local address of outgoing connections
	// SkipUnsupported (rdb-skip-unknown-types yes) skips, and counts, the commands of a
	// primary's stream that bloomd cannot apply (those for types it does not hold, or for
	// databases other than 0), where otherwise they stop the link with an error.
	SkipUnsupported bool
	// SnapshotRDB makes a replica ask its bloomd primary for full syncs as RDB files (its data
	// files are RDB files: dbfilename ends in .rdb) rather than in bloomd's own format.
	SnapshotRDB bool
	// OutputLimit is client-output-buffer-limit's replica class: how far a replica may fall
	// behind (see link.add).
	OutputLimit outbuf.Limit
}

// DefaultConfig returns Redis's defaults.
func DefaultConfig() Config {
	return Config{ReplicaReadOnly: true, ServeStaleData: true, ReplicaPriority: 100, BacklogSize: 1 << 20,
		Timeout: 60, MinReplicasMaxLag: 10, OutputLimit: outbuf.Default()[outbuf.Replica]}
}

// A Repl is one server's replication state: its history (ID, offset, backlog), the replicas
// attached to it, and its link to a primary when it is a replica.
type Repl struct {
	host Host
	log  *slog.Logger

	mu         sync.Mutex
	cfg        Config
	replid     string
	replid2    string
	secondOff  int64 // second_repl_offset, -1 for none
	offset     int64 // master_repl_offset: bytes of stream so far
	backlog    *backlog
	links      map[*link]struct{}
	ackChanged chan struct{} // closed and replaced when a replica acknowledges
	master     *masterLink   // non-nil while a replica
	scratch    []byte
	fullSyncs  int64
	sync       syncState    // full syncs: the shared snapshot and the replicas waiting for one
	obufDrops  atomic.Int64 // replicas disconnected for their output limit
	partialOK  int64
	partialErr int64
	closed     bool
	applyMu    sync.Mutex // serialises Host.Apply and Host.Load across links old and new
	inMulti    bool       // under applyMu: the stream is inside MULTI
	// addsNewUntil is the window of the last full sync (masterLink.addsNew), which a
	// snapshot this replica gives its own replicas passes on (read inside Host.Snapshot).
	addsNewUntil atomic.Int64
	selected     bool             // the stream has selected database 0 since its history began
	skipped      map[string]int64 // what SkipUnsupported skipped, by kind
	linkErr      string           // why the link to the primary failed last, "" while it is up
	stop         chan struct{}    // closed by Close
	replicaFlag  atomic.Bool
	// active is set once a replica attached or the server became a replica: until then, as in
	// Redis, there is no backlog, writes cost nothing here and the offset does not move.
	active atomic.Bool
	// dial connects to a primary (Dial; tests replace it).
	dial func(addr string, timeout time.Duration) (net.Conn, error)
	wg   sync.WaitGroup
}

// New returns the replication state of a primary with a fresh replication ID and an empty
// backlog.
func New(host Host, cfg Config, log *slog.Logger) *Repl {
	cfg.BacklogSize = max(cfg.BacklogSize, minBacklog)
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := &Repl{host: host, log: log, cfg: cfg, replid: newID(), replid2: zeroID, secondOff: -1,
		links: map[*link]struct{}{}, ackChanged: make(chan struct{}), skipped: map[string]int64{}}
	r.backlog = newBacklog(cfg.BacklogSize, host.Charge)
	r.dial = r.Dial
	r.stop = make(chan struct{})
	r.wg.Add(1)
	go r.pinger()
	return r
}

// pinger puts a PING into the stream every 10 seconds while replicas are attached, as Redis's
// repl-ping-replica-period does, so that a replica can tell a silent primary from a dead one.
func (r *Repl) pinger() {
	defer r.wg.Done()
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		if r.master == nil && len(r.links) > 0 {
			r.scratch = resp.AppendCommand(r.scratch[:0], []byte("PING"))
			r.appendLocked(r.scratch)
		}
		r.mu.Unlock()
	}
}

const zeroID = "0000000000000000000000000000000000000000"

// newID returns a random 40-character replication ID, as Redis makes them.
func newID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Restore sets the history to replid at offset, with an empty backlog: for a server restarted
// from data files that hold exactly the stream up to offset (see State). A replica then asks
// its primary to continue from there, and replicas that were at offset continue from this
// server. It must be called before the server follows a primary.
func (r *Repl) Restore(replid string, offset int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replid, r.offset = replid, offset
	r.backlog.reset()
	r.selected = false
	r.active.Store(true)
}

// State returns the replication ID and offset of the data as of now.
func (r *Repl) State() (replid string, offset int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replid, r.offset
}

// SetConfig changes the settings (CONFIG SET). A new backlog size keeps the backlog's history,
// less its oldest bytes when the new size is smaller.
func (r *Repl) SetConfig(cfg Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg.BacklogSize = max(cfg.BacklogSize, minBacklog)
	if cfg.BacklogSize != r.backlog.size {
		r.backlog.setSize(cfg.BacklogSize)
		r.log.Info("replication backlog resized; its history is kept", "repl_backlog_size", cfg.BacklogSize, "repl_backlog_histlen", r.backlog.histlen)
	}
	r.cfg = cfg
}

// IsReplica reports whether the server follows a primary. It costs one atomic load.
func (r *Repl) IsReplica() bool { return r.replicaFlag.Load() }

// ReadOnly reports whether writes from clients must be refused: a replica with
// replica-read-only.
func (r *Repl) ReadOnly() bool {
	if !r.replicaFlag.Load() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.ReplicaReadOnly
}

// Stale reports whether a replica must refuse data commands with -MASTERDOWN: its link is
// down and replica-serve-stale-data is no.
func (r *Repl) Stale() bool {
	if !r.replicaFlag.Load() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.cfg.ServeStaleData && (r.master == nil || r.master.state != stateConnected)
}

// Feed appends a write to the stream: the backlog and every attached replica. It returns the
// stream's offset after it. A replica's own writes (with replica-read-only no) are not
// replicated, as in Redis: Feed ignores them and returns 0. The first write of a history (and
// after a full sync's snapshot) is preceded by SELECT 0, as Redis precedes it with the SELECT of
// its database: a Redis replica that followed a Redis primary's other database before a
// failover applies this one's writes to database 0.
func (r *Repl) Feed(argv [][]byte) int64 {
	if !r.active.Load() || r.replicaFlag.Load() {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scratch = r.scratch[:0]
	if !r.selected {
		r.scratch = append(r.scratch, selectZero...)
		r.selected = true
	}
	r.scratch = resp.AppendCommand(r.scratch, argv...)
	r.appendLocked(r.scratch)
	return r.offset
}

// BacklogMemory returns the bytes the backlog holds allocated (INFO's mem_replication_backlog).
func (r *Repl) BacklogMemory() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.backlog.charged
}

// Offset returns master_repl_offset.
func (r *Repl) Offset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.offset
}

// appendLocked adds stream bytes to the backlog and to the buffer of every attached replica
// that is past waiting for its snapshot.
func (r *Repl) appendLocked(b []byte) {
	if err := r.backlog.add(b); err != nil {
		r.log.Warn("the replication backlog cannot grow: it keeps less history than repl-backlog-size, so a replica that was away longer will need a full sync",
			"err", err, "backlog", r.backlog.String())
	}
	r.offset += int64(len(b))
	for l := range r.links {
		if !l.waiting {
			l.add(b)
		}
	}
}

// backlogFromLocked returns a copy of the backlog from stream offset from (1-based, as PSYNC
// asks), or ok false if the backlog does not hold it.
func (r *Repl) backlogFromLocked(from int64) ([]byte, bool) {
	return r.backlog.from(from-1, r.offset)
}

// firstByteLocked returns repl_backlog_first_byte_offset.
func (r *Repl) firstByteLocked() int64 { return r.offset - r.backlog.histlen + 1 }

// selectZero is SELECT 0 as Redis writes it into the stream.
const selectZero = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"

// shiftIDLocked starts a new history at the current offset, keeping the old ID valid up to it.
func (r *Repl) shiftIDLocked() {
	r.selected = false
	r.replid2 = r.replid
	r.secondOff = r.offset + 1
	r.replid = newID()
	r.log.Info("new replication ID; the previous one stays valid up to its offset",
		"replid", r.replid, "replid2", r.replid2, "second_repl_offset", r.secondOff)
}

// disconnectLinksLocked drops every attached replica, which then reconnects and learns the
// new history.
func (r *Repl) disconnectLinksLocked() {
	for l := range r.links {
		l.close()
		delete(r.links, l)
	}
}

// ReplicaOf makes the server a replica of host:port. It answers as REPLICAOF does: "OK", or
// "OK Already connected to specified master" when nothing changes.
func (r *Repl) ReplicaOf(host string, port int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.master != nil && r.master.host == host && r.master.port == port {
		return "OK Already connected to specified master"
	}
	if r.master != nil {
		r.master.stop()
	}
	r.disconnectLinksLocked()
	was := r.replicaFlag.Swap(true)
	r.active.Store(true)
	m := &masterLink{r: r, host: host, port: port, done: make(chan struct{}), downSince: time.Now()}
	r.master = m
	r.wg.Add(1)
	go m.run()
	if !was {
		r.host.RoleChanged(true)
	}
	r.log.Info("REPLICAOF enabled", "primary", net.JoinHostPort(host, strconv.Itoa(port)))
	return "OK"
}

// NoOne makes the server a primary (REPLICAOF NO ONE). A replica that was one keeps its data
// and history: its ID becomes the secondary ID.
func (r *Repl) NoOne() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.master == nil {
		return
	}
	r.master.stop()
	r.master = nil
	r.shiftIDLocked()
	r.disconnectLinksLocked()
	r.replicaFlag.Store(false)
	r.host.RoleChanged(false)
	r.log.Info("MASTER MODE enabled")
}

// KillPrimaryLink closes the link to the primary (CLIENT KILL TYPE master), which then
// reconnects and continues with a partial sync. It reports whether there was one.
func (r *Repl) KillPrimaryLink() int {
	r.mu.Lock()
	m := r.master
	r.mu.Unlock()
	if m == nil {
		return 0
	}
	return m.kill()
}

// KillReplicas closes the links of every attached replica (CLIENT KILL TYPE replica) and
// returns how many there were.
func (r *Repl) KillReplicas() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.links)
	r.disconnectLinksLocked()
	return n
}

// Close stops every link and waits for the package's goroutines.
func (r *Repl) Close() {
	r.mu.Lock()
	if !r.closed {
		close(r.stop)
	}
	r.closed = true
	if r.master != nil {
		r.master.stop()
	}
	r.disconnectLinksLocked()
	r.mu.Unlock()
	r.wg.Wait()
}

// AppendInfo appends the fields of INFO's replication section, with Redis's names, to b.
func (r *Repl) AppendInfo(b []byte) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	f := func(name string, v any) { b = fmt.Appendf(b, "%s:%v\r\n", name, v) }
	b = append(b, "# Replication\r\n"...)
	if m := r.master; m != nil {
		f("role", "slave")
		f("master_host", m.host)
		f("master_port", m.port)
		link := "down"
		if m.state == stateConnected {
			link = "up"
		}
		f("master_link_status", link)
		last := -1
		if m.state == stateConnected {
			last = int(now.Sub(m.lastIO).Seconds())
		}
		f("master_last_io_seconds_ago", last)
		sync := 0
		if m.state == stateTransfer {
			sync = 1
		}
		f("master_sync_in_progress", sync)
		f("slave_read_repl_offset", max(m.readOff.Load(), r.offset))
		f("slave_repl_offset", r.offset)
		if m.state == stateTransfer {
			f("master_sync_total_bytes", m.syncSize)
			f("master_sync_read_bytes", m.syncRead.Load())
			f("master_sync_left_bytes", m.syncSize-m.syncRead.Load())
		}
		if m.state != stateConnected {
			f("master_link_down_since_seconds", int64(now.Sub(m.downSince).Seconds()))
		}
		f("slave_priority", r.cfg.ReplicaPriority)
		f("slave_read_only", boolInt(r.cfg.ReplicaReadOnly))
		f("replica_announced", 1)
		if r.linkErr != "" && m.state != stateConnected {
			// bloomd's own: why the link is down (a primary's stream it cannot apply, say).
			f("master_link_error", r.linkErr)
		}
	} else {
		f("role", "master")
	}
	if len(r.skipped) > 0 {
		// bloomd's own: what rdb-skip-unknown-types skipped of a primary's stream.
		var n int64
		kinds := make([]string, 0, len(r.skipped))
		for k, v := range r.skipped {
			n += v
			kinds = append(kinds, fmt.Sprintf("%s=%d", strings.ReplaceAll(k, " ", "_"), v))
		}
		slices.Sort(kinds)
		f("replication_skipped_commands", n)
		f("replication_skipped", strings.Join(kinds, ","))
	}
	f("connected_slaves", len(r.links))
	if r.cfg.MinReplicasToWrite > 0 && r.cfg.MinReplicasMaxLag > 0 {
		f("min_slaves_good_slaves", r.goodLocked(now))
	}
	i := 0
	for _, l := range r.sortedLinksLocked() {
		lag := int64(0)
		if l.state == linkOnline {
			lag = int64(now.Sub(time.Unix(0, l.ackTime.Load())).Seconds())
		}
		b = fmt.Appendf(b, "slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d\r\n", i, l.ip, l.port, l.state, l.ack.Load(), lag)
		i++
	}
	f("master_failover_state", "no-failover")
	f("master_replid", r.replid)
	f("master_replid2", r.replid2)
	f("master_repl_offset", r.offset)
	f("second_repl_offset", r.secondOff)
	f("repl_backlog_active", boolInt(r.active.Load()))
	f("repl_backlog_size", r.backlog.size)
	f("repl_backlog_first_byte_offset", r.firstByteLocked())
	f("repl_backlog_histlen", r.backlog.histlen)
	return b
}

// AppendStats appends the replication counters of INFO's stats section.
func (r *Repl) AppendStats(b []byte) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	b = fmt.Appendf(b, "sync_full:%d\r\nsync_partial_ok:%d\r\nsync_partial_err:%d\r\n", r.fullSyncs, r.partialOK, r.partialErr)
	return b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PrimaryLink reports a replica's link to its primary, for a cluster replica deciding whether
// its data is recent enough to fail over (cluster-replica-validity-factor): whether the link is
// up, and when it last carried traffic (up) or went down. A primary gets false and now.
func (r *Repl) PrimaryLink() (up bool, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.master
	switch {
	case m == nil:
		return false, time.Now()
	case m.state == stateConnected:
		return true, m.lastIO
	}
	return false, m.downSince
}

// A RoleInfo is what ROLE reports.
type RoleInfo struct {
	Replica bool
	// Primary: the offset and the online replicas.
	Offset   int64
	Replicas []RoleReplica
	// Replica: the primary, the link's state (connect, connecting, handshake, sync,
	// connected) and the offset processed (-1 before the first sync).
	Host  string
	Port  int
	State string
}

// A RoleReplica is one replica in ROLE's reply: address, port and acknowledged offset.
type RoleReplica struct {
	IP        string
	Port, Ack int64
}

// Role returns what ROLE answers.
func (r *Repl) Role() RoleInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.master; m != nil {
		off := r.offset
		if !m.synced {
			off = -1
		}
		return RoleInfo{Replica: true, Host: m.host, Port: m.port, State: m.state.String(), Offset: off}
	}
	ri := RoleInfo{Offset: r.offset}
	for _, l := range r.sortedLinksLocked() {
		if l.state == linkOnline {
			ri.Replicas = append(ri.Replicas, RoleReplica{IP: l.ip, Port: int64(l.port), Ack: l.ack.Load()})
		}
	}
	return ri
}
