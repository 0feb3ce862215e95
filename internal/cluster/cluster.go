package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Node flags, as the bus carries them and CLUSTER NODES names them.
const (
	FlagMaster     = 1 << 0 // "master"
	FlagSlave      = 1 << 1 // "slave"
	FlagPFail      = 1 << 2 // "fail?": not answering, as this node sees it
	FlagFail       = 1 << 3 // "fail": failing, as a majority of primaries agreed
	FlagMyself     = 1 << 4 // "myself"
	FlagHandshake  = 1 << 5 // "handshake": met, not yet answered
	FlagNoAddr     = 1 << 6 // "noaddr"
	FlagMeet       = 1 << 7 // send MEET rather than PING
	FlagMigrateTo  = 1 << 8 // a primary that replicas may migrate to
	FlagNoFailover = 1 << 9 // "nofailover": a replica that will not fail over
)

// Timings of Redis 7.0 (cluster.h), in milliseconds or as multiples of the node timeout.
const (
	failReportValidityMult = 2
	failUndoTimeMult       = 2
	mfTimeout              = 5000
	mfPauseMult            = 2
	replicaMigrationDelay  = 5000
	blacklistTTL           = 60 // seconds
	maxRejoinDelay         = 5000
	minRejoinDelay         = 500
	writableDelay          = 2000
	cantFailoverRelog      = 5 * 60 * 1000
	replPingPeriod         = 10 // seconds between the primary's pings in the replication stream
)

// Things to do before the current event ends (CLUSTER_TODO_*).
const (
	todoHandleFailover = 1 << iota
	todoUpdateState
	todoSaveConfig
	todoFsyncConfig
	todoHandleManualFailover
)

// Why a replica cannot fail over (CLUSTER_CANT_FAILOVER_*).
const (
	cantFailoverNone = iota
	cantFailoverDataAge
	cantFailoverWaitingDelay
	cantFailoverExpired
	cantFailoverWaitingVotes
)

// Cluster states.
const (
	stateOK   = 0
	stateFail = 1
)

// Env is the world the state machine runs in: a clock, chance and the network. Bus is the real
// one; the tests simulate one, so that many nodes, failures and timeouts run in a moment.
type Env interface {
	// Now returns the time in unix milliseconds.
	Now() int64
	// Intn returns a random number in [0, n).
	Intn(n int) int
	// Dial starts connecting l to ip:port and returns the connection at once; the outcome is
	// reported later by Cluster.Connected or Cluster.LinkLost.
	Dial(l *Link, ip string, port int) Conn
}

// A Conn is one bus connection as the state machine uses it.
type Conn interface {
	// Send queues b to be written; it never blocks. b is not changed afterwards.
	Send(b []byte)
	// Close closes the connection; nothing more is reported about it.
	Close()
	// LocalIP and RemoteIP are the connection's two addresses ("" if unknown).
	LocalIP() string
	RemoteIP() string
	// Pending returns the bytes queued and not yet written.
	Pending() int
}

// Host is the server as the cluster uses it: its keys, its replication and its clients. The
// Cluster calls it with its lock held, so Host's methods must not call the Cluster; those that
// wait for the server's commands to finish (DeleteKeysInSlot) run later, in order, from another
// goroutine.
type Host interface {
	// CountKeysInSlot returns the number of keys in slot.
	CountKeysInSlot(slot int) int
	// KeysInSlot returns up to n keys of slot.
	KeysInSlot(slot, n int) [][]byte
	// DBSize returns the number of keys.
	DBSize() int
	// DeleteKeysInSlot removes every key of slot (a slot this node no longer serves).
	DeleteKeysInSlot(slot int)
	// ReplicaOf makes the server replicate the primary at ip:port (REPLICAOF ip port).
	ReplicaOf(ip string, port int)
	// StopReplication makes the server a primary (REPLICAOF NO ONE).
	StopReplication()
	// Replicating reports whether the server follows a primary.
	Replicating() bool
	// ReplOffset returns the replication offset: a primary's master_repl_offset, the offset a
	// replica has processed.
	ReplOffset() int64
	// ReplLink reports a replica's link to its primary: whether it is up, and the unix ms of
	// its last traffic (up) or of when it went down.
	ReplLink() (up bool, since int64)
	// PauseWrites holds clients' writes until the unix ms until (0 lifts the pause), for a
	// manual failover.
	PauseWrites(until int64)
	// Publish delivers a message published on another node to this node's subscribers.
	Publish(channel, message []byte, shard bool)
}

// Options are what New needs besides the settings.
type Options struct {
	Dir     string // the data directory, where ConfigFile lives
	Port    int    // the client port
	TLSPort int
	Env     Env
	Host    Host
	Log     *slog.Logger
}

// A Cluster is the Redis Cluster as one node sees it: the nodes it knows, who serves which
// slot, the epochs, failure detection and failover. It reacts to events (messages, connections,
// a tick ten times a second, commands) and is safe for concurrent use: each event runs under
// one lock, as Redis runs them on its one thread.
type Cluster struct {
	mu   sync.Mutex
	cfg  Config
	opt  Options
	env  Env
	host Host
	log  *slog.Logger
	file string // the nodes file's path
	lock io.Closer

	myself       *node
	currentEpoch uint64
	state        int
	size         int
	nodes        map[NodeID]*node
	order        []*node // the nodes in the order they were added
	blacklist    map[NodeID]int64

	migratingTo   [Slots]*node
	importingFrom [Slots]*node
	slots         [Slots]*node
	notClaiming   SlotBitmap // slots whose owner stopped claiming them

	// Elections, as a replica.
	authTime           int64
	authCount          int
	authSent           bool
	authRank           int
	authEpoch          uint64
	cantFailoverReason int
	cantFailoverLogged int64
	// Manual failover.
	mfEnd           int64
	mfReplica       *node // as a primary: the replica taking over
	mfPrimaryOffset int64 // as a replica: the paused primary's offset, -1 before it is known
	mfCanStart      bool
	lastVoteEpoch   uint64 // as a primary
	todo            int

	statsSent, statsReceived [msgTypes]int64
	pfailNodes               int
	linksFreed               int64 // total_cluster_links_buffer_limit_exceeded
	pingsSent                uint64
	iteration                uint64
	firstStateCall           int64
	amongMinority            int64

	outbox     []outMsg
	routeDirty bool
	route      atomic.Pointer[Route]
	work       chan func() // host actions run in order outside the lock
	deferred   []func()    // host actions of the current event, handed to work as it ends
	closed     bool
	saveErr    error // the last failure to save the nodes file
}

type outMsg struct {
	l *Link
	b []byte
}

// New makes the cluster state of a node: it locks the nodes file and loads it, or starts as a
// new node with a random ID and writes the file. It fails with a clear error when the file is
// used by another node or damaged.
func New(cfg Config, opt Options) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opt.Env == nil || opt.Host == nil {
		return nil, errors.New("cluster: New needs an Env and a Host")
	}
	if cfg.Port == 0 && opt.Port > 65535-portIncr {
		return nil, fmt.Errorf("cluster: the port %d is too high for the bus port (port + 10000); use 55535 or less, or set cluster-port", opt.Port)
	}
	c := &Cluster{
		cfg: cfg, opt: opt, env: opt.Env, host: opt.Host, log: opt.Log,
		state:           stateFail,
		size:            1,
		nodes:           map[NodeID]*node{},
		blacklist:       map[NodeID]int64{},
		mfPrimaryOffset: -1,
		work:            make(chan func(), 1024),
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.file = cfg.ConfigFile
	if !filepath.IsAbs(c.file) {
		c.file = filepath.Join(opt.Dir, c.file)
	}
	lock, err := lockFile(c.file)
	if err != nil {
		return nil, err
	}
	c.lock = lock
	loaded, err := c.loadConfig()
	if err != nil {
		lock.Close()
		return nil, err
	}
	if !loaded {
		c.myself = c.createNode(nil, FlagMyself|FlagMaster)
		c.addNode(c.myself)
		c.log.Info("no cluster configuration found; this node is new", "node", c.myself.name.String())
		if err := c.saveConfig(); err != nil {
			lock.Close()
			return nil, fmt.Errorf("cluster: cannot write %s: %w", c.file, err)
		}
	}
	c.myself.port, c.myself.pport, c.myself.cport = c.announcedPorts()
	c.updateMyselfFlags()
	c.updateMyselfIP("")
	c.myself.hostname = cfg.AnnounceHostname
	c.routeDirty = true
	c.publishRoute()
	go c.worker()
	return c, nil
}

// worker runs the host actions that must wait for the server's commands, in order.
func (c *Cluster) worker() {
	for fn := range c.work {
		fn()
	}
}

// Close stops the worker and releases the nodes file's lock. The Bus must be stopped first.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.work)
	c.mu.Unlock()
	return c.lock.Close()
}

// Myself returns this node's ID.
func (c *Cluster) Myself() NodeID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.myself.name
}

// Connections returns the number of bus connections Redis counts for INFO: two per other node.
func (c *Cluster) Connections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (len(c.nodes) - 1) * 2
}

// BusPort returns the port the bus listens on.
func (c *Cluster) BusPort() int { return c.cfg.BusPort(c.opt.Port) }

// lockEvent takes the lock for an event.
func (c *Cluster) lockEvent() { c.mu.Lock() }

// unlockEvent ends an event as Redis ends an iteration of its event loop (clusterBeforeSleep):
// a pending failover step, the cluster state and the nodes file are brought up to date, then
// the messages queued during the event are handed to their connections and the routing table
// is republished if it changed.
func (c *Cluster) unlockEvent() {
	c.beforeSleep()
	for _, o := range c.outbox {
		if !o.l.freed {
			o.l.conn.Send(o.b)
		}
	}
	clear(c.outbox)
	c.outbox = c.outbox[:0]
	c.publishRoute()
	// Host actions start only once the routing table they follow is published: a slot's keys
	// are deleted after the slot routes elsewhere, so a client is told -MOVED rather than
	// finding the key missing (Redis's clusterUpdateSlotsConfigWith has the same order).
	for _, fn := range c.deferred {
		if c.closed {
			break
		}
		select {
		case c.work <- fn:
		default:
			go func() { c.work <- fn }() // a burst: keep the order as far as possible, never block
		}
	}
	clear(c.deferred)
	c.deferred = c.deferred[:0]
	c.mu.Unlock()
}

// later runs fn after the event, from the worker goroutine, once the event's routing table is
// published (see unlockEvent). It is called during an event, under the lock.
func (c *Cluster) later(fn func()) {
	if c.closed {
		return
	}
	c.deferred = append(c.deferred, fn)
}

// Tick runs the cluster's periodic work (clusterCron); the Bus calls it ten times a second.
func (c *Cluster) Tick() {
	c.lockEvent()
	defer c.unlockEvent()
	c.cron()
}

// SetConfig applies changed settings (CONFIG SET). The settings that cannot change at run time
// (cluster-enabled, cluster-config-file, cluster-port) keep their values.
func (c *Cluster) SetConfig(cfg Config) {
	c.lockEvent()
	defer c.unlockEvent()
	cfg.Enabled, cfg.ConfigFile, cfg.Port = c.cfg.Enabled, c.cfg.ConfigFile, c.cfg.Port
	prev := c.cfg.AnnounceIP
	c.cfg = cfg
	c.myself.port, c.myself.pport, c.myself.cport = c.announcedPorts()
	c.updateMyselfFlags()
	c.updateMyselfIP(prev)
	c.myself.hostname = cfg.AnnounceHostname
	c.routeDirty = true
}

func (c *Cluster) now() int64 { return c.env.Now() }

// announcedPorts returns the client, plaintext and bus ports this node announces
// (deriveAnnouncedPorts, without TLS on the bus).
func (c *Cluster) announcedPorts() (port, pport, cport int) {
	port, cport = c.opt.Port, c.cfg.BusPort(c.opt.Port)
	if c.cfg.AnnouncePort != 0 {
		port = c.cfg.AnnouncePort
	}
	if c.cfg.AnnounceBusPort != 0 {
		cport = c.cfg.AnnounceBusPort
	}
	return port, 0, cport
}

func (c *Cluster) updateMyselfFlags() {
	old := c.myself.flags
	c.myself.flags &^= FlagNoFailover
	if c.cfg.ReplicaNoFailover {
		c.myself.flags |= FlagNoFailover
	}
	if c.myself.flags != old {
		c.todo |= todoSaveConfig | todoUpdateState
	}
}

// updateMyselfIP applies cluster-announce-ip, whose previous value was prev: a new address is
// this node's; removing it leaves the address to be found again from the next MEET or PING.
func (c *Cluster) updateMyselfIP(prev string) {
	switch {
	case c.cfg.AnnounceIP != "":
		c.myself.ip = cut(c.cfg.AnnounceIP, ipLen-1)
	case prev != "":
		c.myself.ip = ""
	}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// randomName returns a new random node ID (getRandomHexChars), drawn from the Env so that a
// simulation is repeatable.
func (c *Cluster) randomName() NodeID {
	const digits = "0123456789abcdef"
	var id NodeID
	for i := range id {
		id[i] = digits[c.env.Intn(16)]
	}
	return id
}
