package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/cluster"
	"github.com/bloomd/bloom/internal/pubsub"
	"github.com/bloomd/bloom/internal/repl"
	"github.com/bloomd/bloom/internal/resp"
)

// flushAt is the buffered reply size past which a connection writes before its batch ends, so
// that a pipeline of large replies (BF.SCANDUMP chunks) does not pile up in memory.
const flushAt = 64 << 10

// Redis's error replies that several commands share.
const (
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errOOM       = "OOM command not allowed when used memory > 'maxmemory'."
	errNoAuth    = "NOAUTH Authentication required."
	errSyntax    = "ERR syntax error"
	errNotInt    = "ERR value is not an integer or out of range"
)

// A Conn is one client connection. It is served either by its own goroutine (TLS, and systems
// without epoll) or by an event loop (plain TCP on Linux), which serves many; either way one
// goroutine at a time runs its commands. The fields that other connections read (CLIENT LIST,
// CLIENT KILL) are atomic or under infoMu.
type Conn struct {
	srv *Server
	nc  net.Conn // the goroutine's connection; nil in an event loop and for Server.Exec
	rd  *resp.Reader
	w   *resp.Writer
	gs  *gateState // the connection's own, or its event loop's

	// Served by an event loop (see loop_linux.go).
	lp       *loop
	fd       int
	out      []byte // replies the socket did not take yet; no more commands run until it does
	closing  bool   // close once out is written
	inRing   bool   // its replies are queued in the loop's ring (loop.queueWrite, loop.queueSend)
	deadline int64  // unix ms after which an idle connection is closed; 0 for none
	// A waiting loop's (loop_wait_linux.go): the connection's generation in its ring's tags,
	// whether its multishot receive runs, whether the ring waits for its socket to take bytes.
	ringGen    uint32
	recvArmed  bool
	pollingOut bool
	fdMu       sync.Mutex
	fdClosed   bool // under fdMu: the loop closed fd, which kill must not touch

	id          int64
	addr, laddr string
	created     time.Time

	authed      bool
	acct        atomic.Pointer[acl.Account] // the user; nil for internal connections, which may run anything
	multi       *multiState                 // non-nil between MULTI and EXEC/DISCARD
	multiWrites int                         // inside EXEC: 1 before the first journaled write, 2 after
	inExclusive bool                        // running alone: inside an exclusive command or runExclusive
	busied      bool                        // the running command was refused -BUSY midway (runExclusive)
	wait        func() error                // the journal's wait for this batch's latest write
	quit        bool                        // close once the replies are flushed

	lastCmd  *Command // the previous command, to skip the table lookup in a stream of one command
	scratch  []int8   // per-item results of BF.MADD and friends
	oomReply string   // the reply of a resOOM result: the last refused growth's sizes

	journalArgs [][]byte // a rewritten command for the journal
	newKey      []byte   // a key the command created, whose "new" event is pending (notify.go)

	script *scriptHost // the script client's running script (cmd_script.go); nil otherwise

	// Cluster mode (cluster.go): ASKING was sent for the next command, READONLY is on, and
	// the keys of the command being routed.
	asking          bool
	readonlyCluster bool
	cq              cluster.Query
	clusterSlot     int  // the slot of the running command's keys, -1 if none (for its script)
	clusterAsking   bool // ASKING applies to the running command

	batch *batchHashes // the event loop's (see prefetchBatch); nil without one

	// The entry last looked up, valid while the keyspace's removal count is gen (see entry).
	cacheKey []byte
	cacheEnt *entry
	cacheGen uint64

	// Counted per command, published (atomically, for CLIENT LIST and INFO) once per batch.
	lastRun     *Command
	pendingCmds int64
	publishedAt int64 // unix ms; event loops publish periodically
	lagging     bool  // in its event loop's list of connections to publish when quiet

	// Per-command statistics summed here and added to statCmd's when the command changes or
	// the batch is published (see account).
	statCmd           *Command
	statCalls, statNs int64
	untimed           int64         // calls of statCmd since its last timed one
	lastNs            int64         // the duration of statCmd's last timed call
	errs              int64         // error replies written, to tell a failed call
	cflags            atomic.Uint32 // clientMonitor, clientNoEvict, clientNoTouch: CLIENT INFO's flags
	monitor           *monitor      // set by MONITOR, under Server.monMu

	ncmds      atomic.Int64
	lastActive atomic.Int64 // unix ms
	cur        atomic.Pointer[Command]
	proto      atomic.Int32
	stopping   atomic.Bool
	killed     atomic.Bool // CLIENT KILL closed it; gone for CLIENT LIST and KILL at once

	infoMu                sync.Mutex
	name, libName, libVer string

	// Publish/subscribe and blocking commands (cmd_pubsub.go).
	ps             *pubsub.Client // nil until the first subscription command
	subs           atomic.Int32   // subscriptions, for CLIENT KILL TYPE pubsub
	blocked        bool           // event loop: a blocking command (WAIT) awaits its reply
	resume         [][]byte       // event loop: a command held for a key being migrated, to run when unblocked
	rerun          bool           // the command about to run was held: MONITOR has seen it
	outMu          sync.Mutex     // own goroutine: serialises writes to nc with writePushed
	pushMu         sync.Mutex
	pushed         []byte // under pushMu: bytes for the client from other goroutines
	unblockPending bool   // under pushMu: pushed ends the blocking command
	pushWriting    bool   // under pushMu: a goroutine writes pushed to nc (own-goroutine connections)
	closed         bool   // under pushMu: the connection closed; pushed stays empty
	hijacked       bool   // the connection was handed over (see hijack); do not close nc

	gone chan struct{}   // event loop: closed when the connection closes, ending its WAIT (see block)
	in   *countingReader // what the connection reads from (see watchPeer)

	// Unwritten output, for client-output-buffer-limit and CLIENT LIST (outbuf.go).
	outLen     atomic.Int64 // the socket's backlog: an event loop's out, or what a goroutine is writing
	pushLen    atomic.Int64 // len(pushed)
	monLen     atomic.Int64 // the MONITOR feed not yet taken
	softSince  atomic.Int64 // when the soft limit was first reached (outbuf.Limit.Over)
	obufClosed atomic.Bool  // closed for its output
	bufMem     atomic.Int64 // the read and reply buffers' sizes, published with the statistics

	// Replication (replication.go).
	scriptClient bool                          // the client scripts run their commands through (MONITOR shows it as "lua")
	replApplier  bool                          // Exec's or the primary stream's client: exempt from READONLY and LOADING
	uncounted    bool                          // Exec's client: its calls reach no statistics (see Server.Exec)
	replInfo     repl.ReplicaInfo              // what REPLCONF said, for PSYNC
	woff         int64                         // the replication offset after this client's last write
	hijack       func(nc net.Conn, buf []byte) // set by PSYNC: hand the connection over after the command
}

// A gateState is a goroutine's place in the server's gate: a connection's goroutine or an event
// loop has one.
type gateState struct {
	slot    *slot
	entered bool // from the first command of a batch (or loop iteration) until before it blocks
}

// newConn returns a connection served by its own goroutine reading nc (nil for Server.Exec).
func (s *Server) newConn(nc net.Conn) *Conn {
	c := s.initConn(&Conn{nc: nc}, nc)
	c.gs = &gateState{slot: s.gate.register()}
	c.rd.BeforeRead = c.beforeRead
	if nc != nil {
		c.addr, c.laddr = nc.RemoteAddr().String(), nc.LocalAddr().String()
		s.addConn(c)
	}
	return c
}

func (s *Server) initConn(c *Conn, src io.Reader) *Conn {
	c.srv, c.id, c.created = s, s.nextID.Add(1), time.Now()
	if src != nil {
		c.in = &countingReader{r: src, n: &s.stats.netIn}
		src = c.in
	}
	c.rd = resp.NewReader(src)
	c.rd.Limits.MaxBulk = int(s.maxBulk.Load())
	var out io.Writer // an event loop's connection writes its socket itself (loop.write)
	if c.nc != nil {
		out = &countingWriter{c.nc, &s.stats.netOut}
	}
	c.w = resp.NewWriter(out)
	c.w.Proto = 2
	c.w.OnError = c.onError
	c.proto.Store(2)
	c.lastActive.Store(c.created.UnixMilli())
	c.acct.Store(s.acl.users.Default())
	c.authed = s.defaultAuthed()
	c.rd.Unauthenticated = !c.authed
	return c
}

// countingReader adds the bytes of each read to a server total (INFO total_net_input_bytes):
// one atomic add per read system call, whatever the number of commands it brings.
type countingReader struct {
	r     io.Reader
	n     *atomic.Int64
	ahead []byte // read (and counted) already, while the connection waited (see watchPeer)
}

func (r *countingReader) Read(p []byte) (int, error) {
	if len(r.ahead) > 0 {
		n := copy(p, r.ahead)
		r.ahead = r.ahead[n:]
		return n, nil
	}
	n, err := r.r.Read(p)
	if n > 0 {
		r.n.Add(int64(n))
	}
	return n, err
}

// countingWriter adds the bytes of each write, a flush of a batch's replies, to a server total
// (INFO total_net_output_bytes).
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if n > 0 {
		w.n.Add(int64(n))
	}
	return n, err
}

// serve reads and runs commands until the client leaves, breaks the protocol, or is stopped.
func (c *Conn) serve() {
	defer c.close()
	defer func() {
		if r := recover(); r != nil {
			c.srv.recovered(c, r)
		}
	}()
	for {
		args, err := c.rd.ReadCommand()
		if err != nil {
			c.readFailed(err)
			return
		}
		c.execute(args)
		if c.hijack != nil {
			if c.flush() == nil {
				c.handOver(c.nc)
			}
			return
		}
		if c.quit {
			c.flush()
			return
		}
		if c.w.Buffered() >= flushAt && c.flush() != nil {
			return
		}
	}
}

// beforeRead runs each time the connection has run every complete command it received: it
// flushes the batch's replies, then arms the idle timeout for the read that follows.
func (c *Conn) beforeRead() error {
	if err := c.flush(); err != nil {
		return err
	}
	now := time.Now()
	c.lastActive.Store(now.UnixMilli())
	switch {
	case c.nc == nil:
	case c.stopping.Load():
		// Shutting down: read on while the client's commands keep coming (they were sent
		// before it could know), and stop after drainWindow without any.
		c.nc.SetReadDeadline(now.Add(drainWindow))
	case c.srv.timeout.Load() > 0:
		c.nc.SetReadDeadline(now.Add(time.Duration(c.srv.timeout.Load())))
		if c.stopping.Load() { // stop ran meanwhile: keep to its window
			c.nc.SetReadDeadline(now.Add(drainWindow))
		}
	}
	return nil
}

func (c *Conn) readFailed(err error) {
	var pe *resp.ProtocolError
	var ne net.Error
	switch {
	case errors.As(err, &pe):
		c.w.Error("ERR " + pe.Msg)
		c.flush()
		c.srv.log.Debug("protocol error; closing client", "client", c.addr, "err", pe.Msg)
	case errors.As(err, &ne) && ne.Timeout() && !c.stopping.Load():
		c.srv.log.Debug("closing idle client", "client", c.addr)
	case err == io.EOF || errors.Is(err, net.ErrClosed) || c.stopping.Load():
	default:
		c.srv.log.Debug("client read failed", "client", c.addr, "err", err)
	}
}

// flush waits for the journal to make this batch's writes durable, then writes the replies.
// If the journal fails, the replies are dropped and the connection closed: a write is never
// acknowledged unless it is durable.
// publish makes the batch's statistics visible to other connections.
func (c *Conn) publish() {
	c.flushStats()
	if c.pendingCmds > 0 {
		c.ncmds.Add(c.pendingCmds)
		c.cur.Store(c.lastRun)
		c.bufMem.Store(int64(c.rd.BufferSize() + c.w.Cap()))
		c.pendingCmds = 0
	}
}

func (c *Conn) flush() error {
	c.leaveGate()
	c.publish()
	if c.wait != nil {
		w := c.wait
		c.wait = nil
		if err := w(); err != nil {
			c.srv.log.Error("journal failed; closing the client without acknowledging its writes", "client", c.addr, "err", err)
			c.w.Truncate(0)
			if c.nc != nil {
				c.nc.Close()
			}
			return err
		}
	}
	if c.nc == nil {
		return nil
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if n := int64(c.w.Buffered()); n >= flushAt {
		return c.flushLarge(n)
	}
	return c.w.Flush()
}

// flushLarge writes a batch of replies of n bytes, at least flushAt, which counts against the
// client's output limit while the socket takes it (see outbuf.go); outMu is held.
func (c *Conn) flushLarge(n int64) error {
	if c.outputOver(c.omem() + n) {
		c.outputLimitReached(true)
		c.w.Truncate(0)
		c.nc.Close()
		return errOutputLimit
	}
	c.outLen.Add(n)
	err := c.w.Flush()
	c.outLen.Add(-n)
	return err
}

func (c *Conn) close() {
	c.leaveGate()
	c.publish()
	c.closePubSub()
	c.dropOutput()
	if c.hijacked {
		c.srv.removeConn(c)
	} else if c.nc != nil {
		c.nc.Close()
		c.srv.removeConn(c)
	}
	c.srv.gate.unregister(c.gs.slot)
}

// drainWindow is how long a stopping connection waits for more commands: those that the client
// sent before the shutdown, still in flight or in the socket's buffer, are answered.
const drainWindow = 100 * time.Millisecond

// stop asks the connection to answer what its client has sent and close.
func (c *Conn) stop() {
	c.stopping.Store(true)
	if c.lp != nil {
		c.lp.stop()
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(drainWindow))
}

// kill closes the connection at once. For a connection in an event loop it shuts the socket
// down, which the loop sees and closes it.
func (c *Conn) kill() {
	c.killed.Store(true)
	if c.lp == nil {
		c.nc.Close()
		return
	}
	c.fdMu.Lock()
	if !c.fdClosed {
		shutdownFD(c.fd)
	}
	c.fdMu.Unlock()
}

// entry returns the live entry for key, as keyspace.get does, remembering the last one: a
// connection that works on one filter finds it without hashing, locking or a map lookup. The
// memory is valid while no key has been removed since (removals count in keyspace.gen, and
// happen only while no command runs).
func (c *Conn) entry(key []byte) *entry {
	ks := c.srv.ks
	gen := ks.gen.Load()
	if e := c.cacheEnt; e != nil && gen == c.cacheGen && string(key) == string(c.cacheKey) {
		if e.expire.Load() == 0 || !c.expired(e, -1) {
			return e
		}
	}
	e := c.get(key)
	if e != nil && len(key) <= 256 {
		c.cacheKey = append(c.cacheKey[:0], key...)
		c.cacheEnt, c.cacheGen = e, gen
	}
	return e
}

// get is keyspace.get for the command c runs: the primary's stream on a replica (and a
// journal's replay) finds every key until it is deleted, whatever its expiry time.
func (c *Conn) get(key []byte) *entry {
	e := c.srv.ks.lookup(key)
	if e == nil || c.expired(e, -1) {
		return nil
	}
	return e
}

// expired is keyspace.expired for the command c runs (see get).
func (c *Conn) expired(e *entry, now int64) bool {
	if c.replApplier && c.srv.ks.loading.Load() {
		return false
	}
	return c.srv.ks.expired(e, now)
}

// lookup finds the command for name, trying the previous command first.
func (c *Conn) lookup(name []byte) *Command {
	if c.lastCmd != nil && equalFold(name, c.lastCmd.Name) {
		return c.lastCmd
	}
	cmd := c.srv.mux.Lookup(name)
	if cmd != nil && cmd.Subcommands == nil {
		c.lastCmd = cmd
	}
	return cmd
}

// execute checks a command against the table (existence, arity, authentication), queues it
// inside MULTI, and otherwise runs it.
func (c *Conn) execute(args [][]byte) {
	if equalFold(args[0], "post") || equalFold(args[0], "host:") {
		// A browser tricked into posting to bloomd's port (cross-protocol scripting): close
		// without an answer, as Redis does.
		c.srv.log.Warn("possible SECURITY ATTACK detected: a client sent an HTTP request; connection aborted", "client", c.addr)
		c.quit = true
		return
	}
	cmd := c.lookup(args[0])
	if cmd == nil {
		c.srv.mstats.Rejected()
		c.reject(unknownCommand(args))
		return
	}
	if cmd.Subcommands != nil && (len(args) >= 2 || cmd.Handler == nil) {
		if len(args) < 2 {
			c.rejectCmd(cmd, arityError(cmd.Name))
			return
		}
		sub := cmd.Subcommands[strings.ToLower(string(args[1]))]
		if sub == nil {
			c.rejectCmd(cmd, "ERR unknown subcommand '"+cString(args[1], 128)+"'. Try "+strings.ToUpper(cmd.Name)+" HELP.")
			return
		}
		cmd = sub
	}
	if cmd.Flags&FlagModule == 0 && !cmd.arityOK(len(args)) {
		c.rejectCmd(cmd, arityError(cmd.Name))
		return
	}
	if !c.authed && cmd.Flags&FlagNoAuth == 0 {
		c.rejectCmd(cmd, errNoAuth)
		return
	}
	if r, i := c.aclAllows(cmd, args); r != acl.Allowed {
		c.aclDenied(cmd, args, r, i)
		return
	}
	if c.srv.cluster != nil && !c.replApplier {
		// ASKING holds for the next command only, or from MULTI to EXEC (or DISCARD) for a
		// transaction's commands, as Redis clears it after each command outside MULTI.
		asking := c.asking
		if asking && (c.multi == nil && cmd.Name != "multi" || cmd.Name == "exec" || cmd.Name == "discard") {
			c.asking = false
		}
		c.clusterSlot, c.clusterAsking = -1, asking
		if clusterKeyed(cmd) && c.clusterCheck(cmd, args, asking) {
			return
		}
	}
	if c.ps != nil && c.subs.Load() > 0 && c.w.Proto == 2 && !subscribedOK(cmd) {
		c.reject(errSubscribed(cmd))
		return
	}
	if msg := c.replCheck(cmd); msg != "" {
		c.reject(msg)
		return
	}
	if c.srv.gate.busy.Load() && cmd.Flags&FlagAllowBusy == 0 && !c.replApplier {
		// The primary's stream and the log wait for a busy script instead, as Redis's
		// replicas do.
		c.rejectCmd(cmd, errBusyScript)
		return
	}
	if c.multi != nil && cmd.Flags&FlagNoMulti == 0 {
		c.queue(cmd, args)
		return
	}
	c.call(cmd, args)
}

// rejectCmd is reject for a known command, counted in its rejected_calls.
func (c *Conn) rejectCmd(cmd *Command, msg string) {
	cmd.stats.Reject()
	c.srv.mstats.Rejected()
	if cmd.Name == "exec" {
		// As Redis: a refused EXEC discards the transaction and says why.
		c.multi = nil
		c.w.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR "))
		return
	}
	c.reject(msg)
}

// onError counts an error reply (Writer.OnError).
func (c *Conn) onError(msg string) {
	c.errs++
	c.srv.mstats.Error(msg)
}

// sampleEvery is how often a run of one command on a connection is timed: reading the clock
// twice costs more than the rest of the bookkeeping (hundreds of ns on a virtual machine's
// clock), so a run of BF.ADDs times one call in sampleEvery and counts the others at that
// call's duration. A command that differs from the connection's previous one is always timed,
// so rare and slow commands (SCAN, BF.RESERVE, FLUSHALL, BF.LOADCHUNK) are always measured.
const sampleEvery = 16

// account records a call of cmd, started at start if it was timed, when the connection had
// written errs error replies: the call in the connection's sums, its failure, and if timed its
// duration, weighted by the untimed calls before it, in the sums and the command's histogram,
// and in the slow log and latency monitor when it was slow. The sums reach the command's shared
// counters in flushStats, so a run of one command costs no atomic operation per call but the
// timed calls' histogram add.
func (c *Conn) account(cmd *Command, args [][]byte, timed bool, start time.Time, errs int64) {
	if c.uncounted {
		return
	}
	if cmd != c.statCmd {
		c.flushStats()
		c.statCmd, c.lastNs = cmd, 0
	}
	c.statCalls++
	st := cmd.stats
	if c.errs != errs {
		st.Fail()
	}
	if !timed {
		c.untimed++
		return
	}
	ns := int64(time.Since(start))
	w := c.untimed + 1
	c.untimed, c.lastNs = 0, ns
	c.statNs += ns * w
	st.ObserveN(ns, w)
	m := c.srv.mstats
	if m.SlowLog.Slow(ns) && cmd.Flags&FlagNoSlowlog == 0 {
		c.infoMu.Lock()
		name := c.name
		c.infoMu.Unlock()
		m.SlowLog.Add(ns, cmd.shown(args), c.addr, name)
	}
	if m.Latency.Spike(ns) {
		event := "command"
		if cmd.Flags&FlagFast != 0 {
			event = "fast-command"
		}
		m.Latency.Add(event, ns)
	}
}

// flushStats adds the connection's sums for its current command to the command's statistics;
// calls not timed yet count at the duration of the last timed one.
func (c *Conn) flushStats() {
	if c.statCalls == 0 {
		return
	}
	st := c.statCmd.stats
	if c.untimed > 0 && c.lastNs > 0 {
		c.statNs += c.lastNs * c.untimed
		st.ObserveN(c.lastNs, c.untimed)
	}
	st.Add(c.statCalls, c.statNs)
	c.statCalls, c.statNs, c.untimed = 0, 0, 0
}

// reject answers an error for a command that was not run, and spoils an open transaction, as
// Redis does.
func (c *Conn) reject(msg string) {
	c.w.Error(msg)
	if c.multi != nil {
		c.multi.aborted = true
	}
}

// call runs a command that passed the table's checks.
func (c *Conn) call(cmd *Command, args [][]byte) {
	if cmd.Flags&FlagModule != 0 && !cmd.arityOK(len(args)) {
		cmd.stats.Reject()
		c.srv.mstats.Rejected()
		c.w.Error(arityError(cmd.Name))
		return
	}
	if cmd.Flags&FlagLoading == 0 && c.srv.dataLoading.Load() && !c.replApplier {
		c.rejectCmd(cmd, errLoading)
		return
	}
	if cmd.Flags&FlagDenyOOM != 0 && c.script == nil { // a script's commands: checked by the script (cmd_script.go)
		if m := c.srv.maxmemory.Load(); m > 0 && c.srv.ks.used.Load() > m && !c.srv.ks.loading.Load() {
			c.srv.stats.oom.Add(1)
			cmd.stats.Reject()
			c.srv.mstats.Rejected()
			c.w.Error(errOOM)
			return
		}
	}
	c.lastRun = cmd
	c.pendingCmds++
	if c.srv.monitors.Load() > 0 && !c.rerun && cmd.Flags&(FlagAdmin|FlagNoMonitor) == 0 {
		// As Redis: administrative commands are not shown, and secrets are redacted. A
		// command held by a migration is shown once, not again when it runs.
		c.srv.feedMonitors(c, cmd.shown(args))
	}
	c.rerun = false
	// Time the call unless it repeats the connection's previous command and is not the
	// sampleEvery-th of the run (see account).
	timed := cmd != c.statCmd || c.untimed >= sampleEvery-1
	var start time.Time
	if timed {
		start = time.Now()
	}
	errs := c.errs
	c.newKey = nil
	var held <-chan struct{} // a write to a key MIGRATE is moving (migrating.go)
	switch {
	case c.inExclusive:
		cmd.Handler(c, args)
	case cmd.Flags&FlagExclusive != 0:
		c.leaveGate()
		alone := func() {
			c.inExclusive = true
			defer func() { c.inExclusive = false }()
			if held = c.migrationHold(cmd, args); held == nil {
				cmd.Handler(c, args)
			}
		}
		if c.replApplier {
			c.srv.gate.exclusive(alone)
		} else if !c.srv.gate.tryExclusive(alone) {
			c.rejectCmd(cmd, errBusyScript)
			return
		}
	case c.gs.entered || c.srv.gate.tryEnter(c.gs.slot) || c.replApplier && c.enterGate():
		c.gs.entered = true
		if held = c.migrationHold(cmd, args); held == nil {
			cmd.Handler(c, args)
		}
	case cmd.Flags&FlagAllowBusy != 0:
		cmd.Handler(c, args) // touches no key: runs beside the busy script
	default:
		c.rejectCmd(cmd, errBusyScript)
		return
	}
	if c.busied {
		// Refused midway, before it changed anything: counted as refused, as at its start.
		c.busied = false
		cmd.stats.Reject()
		c.srv.mstats.Rejected()
		return
	}
	if held != nil {
		c.pendingCmds-- // counted when it runs
		c.hold(held, cmd, args)
		return
	}
	c.account(cmd, args, timed, start, errs)
}

// enterGate marks the connection as running commands, so that removals of keys wait for it. A
// connection enters once per pipelined batch and leaves before it flushes or reads.
func (c *Conn) enterGate() bool {
	if !c.gs.entered {
		c.srv.gate.enter(c.gs.slot)
		c.gs.entered = true
	}
	return true
}

func (c *Conn) leaveGate() {
	if c.gs.entered {
		c.srv.gate.exit(c.gs.slot)
		c.gs.entered = false
	}
}

// runExclusive runs fn while no other command runs: for removing keys and for writes that do not
// commute with adds (see keyspace). Called inside a command, it leaves the gate while it waits
// for the others, and takes its place in the gate again before the others may go on, so that no
// exclusive run (a script) can come between fn and the rest of the command. Like a command that
// waits at its start, it gives up when the server is held by a script past busy-reply-threshold:
// it then answers -BUSY for the command, which must stop, and reports false; fn has not run.
func (c *Conn) runExclusive(fn func()) bool {
	if c.inExclusive {
		fn()
		return true
	}
	was := c.gs.entered
	c.leaveGate()
	if h := upgradeHook.Load(); h != nil {
		(*h)()
	}
	alone := func() {
		c.inExclusive = true
		defer func() { c.inExclusive = false }()
		fn()
		if was {
			// Entered again while still alone: the next exclusive run waits for the command's end.
			c.srv.gate.mark(c.gs.slot)
			c.gs.entered = true
		}
	}
	if c.replApplier {
		c.srv.gate.exclusive(alone)
		return true
	}
	if !c.srv.gate.tryExclusive(alone) {
		c.busied = true
		c.w.Error(errBusyScript)
		return false
	}
	return true
}

// upgradeHook, when set (by tests), runs in runExclusive between a command's leaving the gate and
// its asking to run alone: the instant in which a script may take the gate first.
var upgradeHook atomic.Pointer[func()]

// outsideGate runs fn from inside a command with the connection out of the gate, so that fn may
// wait for every other command to end: pausing every command for a snapshot's start (SAVE,
// SHUTDOWN), or waiting for a blocking command's reply. The command does not enter the gate
// again (which could wait behind a script): after fn it touches no key, only replies.
func (c *Conn) outsideGate(fn func()) {
	c.leaveGate()
	fn()
}

// recovered logs a panic caught while serving c, which is then closed. It is the last line of
// defence: the server keeps serving the other connections.
func (s *Server) recovered(c *Conn, r any) {
	s.stats.panics.Add(1)
	s.log.Error("panic while serving a client; closing its connection", "client", c.addr, "panic", r, "stack", string(debug.Stack()))
}

func arityError(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// unknownCommand formats Redis's error for an unknown command, quoting the first arguments.
func unknownCommand(args [][]byte) string {
	var sb strings.Builder
	sb.WriteString("ERR unknown command '")
	sb.WriteString(cString(args[0], 128))
	sb.WriteString("', with args beginning with: ")
	n := 0
	for _, a := range args[1:] {
		if n >= 128 {
			break
		}
		s := cString(a, 128-n)
		sb.WriteString("'" + s + "' ")
		n += len(s) + 3
	}
	return sb.String()
}

// cString renders b as C's "%.*s" would: up to the first NUL, at most n bytes.
func cString(b []byte, n int) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// setProto switches the reply protocol.
func (c *Conn) setProto(p int) {
	c.w.Proto = p
	c.proto.Store(int32(p))
}

// setAuthed records a successful (or reset) authentication.
func (c *Conn) setAuthed(ok bool) {
	c.authed = ok
	c.rd.Unauthenticated = !ok
}
