package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bloomd/bloom/internal/cluster"
	"github.com/bloomd/bloom/internal/filterconf"
	"github.com/bloomd/bloom/internal/memlimit"
	"github.com/bloomd/bloom/internal/metrics"
	"github.com/bloomd/bloom/internal/migrate"
	"github.com/bloomd/bloom/internal/outbuf"
	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/protected"
	"github.com/bloomd/bloom/internal/pubsub"
	"github.com/bloomd/bloom/internal/repl"
	"github.com/bloomd/bloom/internal/script"
)

// A Server is bloomd: it accepts RESP connections and runs their commands against one keyspace.
// Create it with New, start it with Listen and Serve (or ListenAndServe), stop it with Shutdown.
type Server struct {
	mux     *Mux
	hub     *pubsub.Hub
	ks      *keyspace
	gate    *gate
	journal Journal
	store   *persist.Store // the data files, when Run opened them (see persistence.go)
	log     *slog.Logger
	level   *slog.LevelVar

	cfgMu sync.Mutex
	cfg   Config // under cfgMu; the fields below mirror the mutable settings for the hot path

	requirepass atomic.Pointer[string]
	acl         aclState
	protected   atomic.Bool  // protected-mode
	maxmemory   atomic.Int64 // the configured limit, 0 if none
	maxclients  atomic.Int64
	timeout     atomic.Int64 // nanoseconds, 0 if none
	keepalive   atomic.Int64 // tcp-keepalive, seconds
	maxBulk     atomic.Int64
	notifyOn    atomic.Uint32   // notify-keyspace-events, a pubsub.Classes (notify.go)
	ceiling     ceiling         // the most the keyspace may hold, found at start (memory.go)
	filters     filterconf.Live // defaults of new filters and the size limits (config_filters.go)

	lnMu      sync.Mutex
	listeners []net.Listener
	closing   bool // under lnMu

	connsMu sync.Mutex
	conns   map[*Conn]struct{}
	nextID  atomic.Int64
	clients atomic.Int64

	stats struct {
		conns, rejected, commands, expired, oom, panics atomic.Int64
		netIn, netOut                                   atomic.Int64      // bytes read from and written to clients
		fsyncNs                                         atomic.Int64      // total time of the log's fsyncs
		fsyncs                                          metrics.Histogram // each fsync's duration
		obufDisconnects                                 atomic.Int64      // clients closed for their output (outbuf.go)
		blocked                                         atomic.Int64      // clients waiting in WAIT: INFO's blocked_clients
	}
	obufLimits atomic.Pointer[outbuf.Limits] // client-output-buffer-limit
	obufPeak   peakRing                      // client_recent_max_output_buffer

	mstats   *metrics.Stats // per command and error, slow log, latency monitor (cmd_stats.go)
	monitors atomic.Int32   // connections in MONITOR mode
	monMu    sync.Mutex
	monList  []*monitor
	peakMem  atomic.Int64
	opsRing  opsSampler
	loops    []*loop       // event loops for plain TCP connections (Linux)
	nextLoop atomic.Uint32 // round robin over loops
	started  time.Time
	done     chan struct{}
	internal *Conn // the client of Exec

	// Cluster mode (cluster.go): the node's cluster state, its bus, and the unix ms until
	// which a manual failover pauses writes (0 for none).
	cluster      *cluster.Cluster
	bus          *cluster.Bus
	clusterStart sync.Once
	clusterPause atomic.Int64

	repl         *repl.Repl  // replication (replication.go)
	applier      *Conn       // the client that applies a primary's stream
	minReplicas  atomic.Bool // min-replicas-to-write is set
	applierStale atomic.Bool // the applier's open transaction belongs to a former primary
	// replAddsNew makes the applier add a primary's Bloom filter items as new (see addItems and
	// repl.Host.SetAddsAsNew); otherwise it adds them as a client's adds.
	replAddsNew atomic.Bool
	configFile  string // the file the settings came from, for CONFIG REWRITE
	runID       string

	mig         migrations    // keys MIGRATE is moving, whose writes wait (migrating.go)
	migratePool *migrate.Pool // MIGRATE's cached connections (cmd_migrate.go)

	// dataLoading is set while the data files load: commands that may not run then are
	// answered -LOADING.
	dataLoading atomic.Bool
	// Scripting (cmd_script.go).
	scripts    *script.Engine
	scriptConn *Conn // the client scripts run their commands through
	scriptMu   sync.Mutex
	scriptRun  atomic.Pointer[scriptRun] // the running script, under scriptMu for changes
	busyMs     atomic.Int64              // busy-reply-threshold

	shutdownReq chan bool      // SHUTDOWN's requests to Run, with whether to save
	wg          sync.WaitGroup // connections and the cron goroutine
}

// New returns a Server for cfg, with every command registered. It does not listen yet.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		mux:     NewMux(),
		hub:     pubsub.New(globMatch),
		ks:      newKeyspace(),
		gate:    newGate(),
		journal: cfg.Journal,
		level:   new(slog.LevelVar),
		conns:   make(map[*Conn]struct{}),
		started: time.Now(),
		done:    make(chan struct{}),
		mstats:  metrics.NewStats(),

		shutdownReq: make(chan bool, 1),
	}
	s.cfg = cfg
	s.applyConfig(&cfg)
	s.log = cfg.Logger
	if s.log == nil {
		var w io.Writer = os.Stderr
		if cfg.LogFile != "" {
			f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, fmt.Errorf("server: logfile: %w", err)
			}
			w = f
		}
		s.log = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: s.level}))
	}
	s.ks.exclusive = s.gate.excl.Load
	if cfg.Cluster.Enabled {
		s.ks.slots = &slotIndex{}
	}
	registerCommands(s.mux)
	registerCluster(s.mux)
	registerPubSub(s.mux)
	registerReplication(s.mux)
	s.runID = newRunID()
	registerStatsCommands(s.mux)
	registerACL(s.mux)
	registerScripting(s.mux)
	s.initScripting()
	s.attachStats()
	if err := s.initACL(&cfg); err != nil {
		return nil, err
	}
	s.startRepl(&cfg)
	s.migratePool = migrate.NewPool(s.repl.Dial)
	if loopsSupported {
		if err := s.startLoops(cfg.EventLoops); err != nil {
			return nil, fmt.Errorf("server: event loops: %w", err)
		}
	}
	probe := memlimit.Probe{}
	if cfg.MemoryProbe != nil {
		probe = *cfg.MemoryProbe
	}
	s.ceiling = newCeiling(probe) // after the event loops: their threads count as used
	s.wg.Add(1)
	go s.cron()
	return s, nil
}

// applyConfig copies the mutable settings to the hot-path mirrors. cfgMu must be held (or the
// server not yet shared).
func (s *Server) applyConfig(c *Config) {
	pass := c.Requirepass
	if old := s.requirepass.Load(); old != nil && *old != pass && s.acl.users != nil {
		s.acl.users.SetDefaultPassword(pass) // requirepass is the default user's password
	}
	s.requirepass.Store(&pass)
	if s.acl.log != nil {
		s.acl.log.SetMaxLen(c.ACLLogMaxLen)
	}
	s.protected.Store(c.ProtectedMode)
	s.maxmemory.Store(c.MaxMemory)
	s.maxclients.Store(int64(c.MaxClients))
	s.timeout.Store(int64(c.Timeout) * int64(time.Second))
	s.keepalive.Store(int64(c.TCPKeepAlive))
	s.maxBulk.Store(c.ProtoMaxBulkLen)
	s.notifyOn.Store(uint32(c.NotifyKeyspaceEvents))
	s.level.Set(logLevels[c.LogLevel])
	s.mstats.SlowLog.SetThreshold(c.SlowlogLogSlowerThan)
	s.mstats.SlowLog.SetMaxLen(int64(c.SlowlogMaxLen))
	s.mstats.Latency.SetThreshold(c.LatencyMonitorThreshold)
	s.filters.Store(*c.filterSettings())
	limits := c.ClientOutputBufferLimit
	s.obufLimits.Store(&limits)
	s.busyMs.Store(c.BusyReplyThreshold)
}

// config returns a copy of the current settings.
func (s *Server) config() Config {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.cfg
}

// Listen opens the listeners the settings ask for: port (and tls-port) on every bind address.
// An address in use is reported naming the setting to change.
func (s *Server) Listen() error {
	cfg := s.config()
	var tlsConf *tls.Config
	if cfg.TLSPort != 0 {
		var err error
		if tlsConf, err = serverTLS(&cfg); err != nil {
			return err
		}
	}
	var lns []net.Listener
	fail := func(err error) error {
		for _, ln := range lns {
			ln.Close()
		}
		return err
	}
	for _, port := range []struct {
		n    int
		flag string
		tls  bool
	}{{cfg.Port, "--port", false}, {cfg.TLSPort, "--tls-port", true}} {
		if port.n == 0 {
			continue
		}
		for _, b := range cfg.Bind {
			optional := len(b) > 1 && b[0] == '-' // redis.conf: "-::1" may be unavailable
			host := b
			if optional {
				host = b[1:]
			}
			switch host {
			case "*":
				host = ""
			case "::*":
				host = "::"
			}
			addr := net.JoinHostPort(host, strconv.Itoa(port.n))
			ln, err := net.Listen(bindNetwork(host), addr)
			if err != nil {
				if optional {
					continue
				}
				if errors.Is(err, syscall.EADDRINUSE) {
					return fail(fmt.Errorf("server: cannot listen on %s: address already in use; choose another port with %s (or another address with --bind)", addr, port.flag))
				}
				return fail(fmt.Errorf("server: cannot listen on %s (%s %d): %w", addr, port.flag, port.n, err))
			}
			if port.tls {
				ln = tls.NewListener(ln, tlsConf)
			}
			lns = append(lns, ln)
		}
	}
	if len(lns) == 0 {
		return errors.New("server: no address to listen on")
	}
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.closing {
		return fail(errors.New("server: shut down"))
	}
	s.listeners = append(s.listeners, lns...)
	return nil
}

// Addrs returns the addresses the server listens on, plain TCP first.
func (s *Server) Addrs() []net.Addr {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	var addrs []net.Addr
	for _, ln := range s.listeners {
		addrs = append(addrs, ln.Addr())
	}
	return addrs
}

// Serve accepts connections on the listeners opened by Listen until Shutdown, and returns nil
// after a Shutdown.
func (s *Server) Serve() error {
	s.lnMu.Lock()
	lns := s.listeners
	s.lnMu.Unlock()
	if len(lns) == 0 {
		return errors.New("server: Serve called before Listen")
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- s.acceptLoop(ln) }()
	}
	var first error
	for range lns {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// bindNetwork returns the network to listen on for a bind host: "tcp6" for an IPv6 address,
// which makes the socket IPv6-only as Redis's are (so "0.0.0.0" and "::" can both be bound on
// one port), "tcp4" for an IPv4 address, and "tcp" otherwise ("*", "localhost"). It maps Redis's
// "::*", the IPv6 wildcard, to "::".
func bindNetwork(host string) string {
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return "tcp"
	case ip.To4() == nil:
		return "tcp6"
	}
	return "tcp4"
}

// ServeListener serves connections accepted from ln (which the server closes at Shutdown) until
// Shutdown. It lets a caller choose the listener, such as one on a free port in tests.
func (s *Server) ServeListener(ln net.Listener) error {
	if err := s.addListener(ln); err != nil {
		return err
	}
	if err := s.initCluster(); err != nil {
		return err
	}
	s.startCluster()
	return s.acceptLoop(ln)
}

func (s *Server) addListener(ln net.Listener) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.closing {
		ln.Close()
		return errors.New("server: shut down")
	}
	s.listeners = append(s.listeners, ln)
	return nil
}

// ListenAndServe calls Listen, then Serve.
func (s *Server) ListenAndServe() error {
	if err := s.Listen(); err != nil {
		return err
	}
	return s.Serve()
}

func (s *Server) acceptLoop(ln net.Listener) error {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors or a transient failure: back off, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	s.lnMu.Lock()
	closing := s.closing
	if !closing {
		s.wg.Add(1)
	}
	s.lnMu.Unlock()
	if closing {
		nc.Close()
		return
	}
	s.stats.conns.Add(1)
	if protected.Refuse(nc.RemoteAddr(), s.protected.Load(), !s.acl.users.Default().User().NoPass()) {
		s.stats.rejected.Add(1)
		go func() {
			defer s.wg.Done()
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(nc, protected.Denied)
			nc.Close()
		}()
		return
	}
	if s.clients.Add(1) > s.maxclients.Load() {
		s.clients.Add(-1)
		s.stats.rejected.Add(1)
		go func() {
			defer s.wg.Done()
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(nc, "-ERR max number of clients reached\r\n")
			nc.Close()
		}()
		return
	}
	s.keepAlive(nc)
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		if len(s.loops) > 0 {
			addr, laddr := tc.RemoteAddr().String(), tc.LocalAddr().String()
			fd, err := adopt(tc)
			if err != nil {
				s.log.Warn("cannot take over a new connection; closing it", "client", addr, "err", err)
				tc.Close()
				s.clients.Add(-1)
				s.wg.Done()
				return
			}
			lp := s.loops[s.nextLoop.Add(1)%uint32(len(s.loops))]
			lp.add(s.newLoopConn(lp, fd, addr, laddr))
			return
		}
	}
	c := s.newConn(nc)
	go func() {
		defer s.wg.Done()
		defer s.clients.Add(-1)
		c.serve()
	}()
}

// Shutdown stops accepting connections, lets every connection finish the commands it has
// received and flush their replies, then closes it. If ctx ends first, the remaining
// connections are closed at once. Shutdown returns when every connection is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.lnMu.Lock()
	already := s.closing
	s.closing = true
	lns := s.listeners
	s.lnMu.Unlock()
	if !already {
		close(s.done)
		for _, ln := range lns {
			ln.Close()
		}
		s.stopCluster()
		s.repl.Close()
		s.migratePool.Close()
	}
	s.connsMu.Lock()
	for c := range s.conns {
		c.stop()
	}
	s.connsMu.Unlock()
	for _, lp := range s.loops {
		lp.stop()
	}
	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		s.connsMu.Lock()
		for c := range s.conns {
			c.kill()
		}
		s.connsMu.Unlock()
		<-finished
		return ctx.Err()
	}
}

// cron runs the background work: active expiry, ten times a second.
func (s *Server) cron() {
	defer s.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	next := randomShard()
	var dead []*entry
	var lastSec int64
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		now := time.Now()
		s.statsTick(now)
		if sec := now.Unix(); sec != lastSec {
			lastSec = sec
			s.checkOutputLimits(now)
			s.migratePool.CloseIdle() // as Redis's serverCron, once a second
		}
		if s.repl.IsReplica() {
			continue // a replica's keys expire when its primary says so (DEL in the stream)
		}
		// Like Redis's active expiry: sample 20 keys with an expiry per shard, and go on
		// while a quarter of a sample was expired, for at most 25 ms; then remove what was
		// found, in one exclusive section.
		deadline := time.Now().Add(25 * time.Millisecond)
		dead = dead[:0]
		for range numShards {
			i := next
			next = (next + 1) % numShards
			for {
				var looked, before = 0, len(dead)
				looked, dead = s.ks.expiredSample(i, 20, dead)
				if looked == 0 || (len(dead)-before)*4 < looked || time.Now().After(deadline) {
					break
				}
			}
			if time.Now().After(deadline) || len(dead) > 10000 {
				break
			}
		}
		if len(dead) > 0 {
			s.gate.exclusive(func() {
				now := nowMs()
				for _, e := range dead {
					sh, cur := s.ks.lockShard([]byte(e.key))
					if cur == e && s.ks.expired(e, now) {
						s.removeExpired(nil, sh, e)
					}
					sh.mu.Unlock()
				}
			})
		}
	}
}

// removeExpired removes an expired entry while the server runs nothing else, journaling a DEL
// as Redis propagates one: through c (nil for the expiry cycle) so that c's reply waits for it.
func (s *Server) removeExpired(c *Conn, sh *shard, e *entry) {
	s.ks.removeLocked(sh, e)
	s.stats.expired.Add(1)
	if c != nil {
		c.propagateCmd([]byte("DEL"), []byte(e.key))
		c.notify(evExpired, "expired", []byte(e.key))
		return
	}
	s.notify(evExpired, "expired", []byte(e.key))
	del := [][]byte{[]byte("DEL"), []byte(e.key)}
	if s.journal != nil {
		s.journal.Append(del)
	}
	s.repl.Feed(del)
}

// SetLoading switches loading mode on or off, for replaying journal records with Exec. While
// loading, keys do not expire (an expiry time in the past is kept rather than applied, as Redis
// does while it reads its append-only file), maxmemory does not apply (the machine's memory
// still does), and the items of BF.ADD, BF.MADD and BF.INSERT, which the journal holds only when
// they were new, are added as new (redisbloom.Chain.AddNew): counted, and growing the filter,
// as the original was, even where the bits already hold them. So the records rebuild exactly
// the keyspace that wrote them. When loading ends, keys whose time has passed expire as usual
// (and their DELs are journaled).
func (s *Server) SetLoading(on bool) { s.ks.loading.Store(on) }

// rearmTimeouts applies a changed timeout setting: to the connections that have their own
// goroutine, waiting in a read armed with the old one, and to the event loops, which check the
// setting as it is once woken.
func (s *Server) rearmTimeouts() {
	for _, lp := range s.loops {
		lp.wake() // an idle loop then looks at the setting
	}
	t := time.Duration(s.timeout.Load())
	for _, c := range s.clientList() {
		if c.nc == nil || c.stopping.Load() {
			continue
		}
		if t > 0 {
			c.nc.SetReadDeadline(time.UnixMilli(c.lastActive.Load()).Add(t))
		} else {
			c.nc.SetReadDeadline(time.Time{})
		}
	}
}

// Pause runs fn while no command runs, with every reply of the commands before it written to
// the connections' buffers (and journaled). It is for the durability layer to take a consistent
// point, such as the start of a snapshot and of a new log. It must not be called from a command.
func (s *Server) Pause(fn func()) { s.gate.exclusive(fn) }

func (s *Server) addConn(c *Conn) {
	s.connsMu.Lock()
	s.conns[c] = struct{}{}
	s.connsMu.Unlock()
}

func (s *Server) removeConn(c *Conn) {
	s.connsMu.Lock()
	delete(s.conns, c)
	s.connsMu.Unlock()
	s.stopMonitor(c)
	s.stats.commands.Add(c.ncmds.Load())
}

// Exec runs one command as a privileged internal client (authenticated, RESP2, no journal wait)
// and returns its reply. It serves loading a journal at start-up and tests; it must not be
// called concurrently with itself. Its calls are not counted in any statistic (INFO
// commandstats, latencystats, errorstats, total_commands_processed, the slow log).
func (s *Server) Exec(args ...[]byte) []byte {
	c := s.internalConn()
	c.execute(args)
	c.leaveGate()
	out := append([]byte(nil), c.w.Bytes()...)
	c.w.Truncate(0)
	return out
}

var internalMu sync.Mutex

func (s *Server) internalConn() *Conn {
	internalMu.Lock()
	defer internalMu.Unlock()
	if s.internal == nil {
		c := s.newConn(nil)
		c.authed = true
		c.acct.Store(nil)    // no user: may run anything, as Redis's internal clients
		c.replApplier = true // loads data files: exempt from replication's rules, like the stream
		// Loading the data files counts nowhere, as Redis's loading of its AOF runs each
		// command without call(): no commandstats, latency, slow log or error counts, and
		// not in total_commands_processed.
		c.uncounted = true
		c.w.OnError = nil
		s.internal = c
	}
	return s.internal
}
