package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomd/bloom/internal/outbuf"
	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/repl"
	"github.com/bloomd/bloom/internal/resp"
)

// This file connects internal/repl to the server: the replication settings (redis.conf's
// names), the commands (REPLICAOF/SLAVEOF, PSYNC, REPLCONF, WAIT, ROLE), CONFIG REWRITE and
// SCRIPT KILL that Sentinel sends, and replHost, through which the replication package takes
// snapshots, loads them and applies the primary's stream. Writes reach replicas through the same
// place as the journal (Conn.propagate): one stream of records, two consumers.

const (
	errReadOnly   = "READONLY You can't write against a read only replica."
	errNoReplicas = "NOREPLICAS Not enough good replicas to write."
	errMasterDown = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
)

func init() {
	rc := func(c *Config) *repl.Config { return &c.Replication }
	params = append(params,
		param{"replicaof", false, func(c *Config) string { return c.ReplicaOf }, func(c *Config, v string) error {
			if v == "" {
				c.ReplicaOf = ""
				return nil
			}
			f := strings.Fields(v)
			if len(f) != 2 {
				return errors.New("replicaof takes a host and a port")
			}
			if n, err := strconv.Atoi(f[1]); err != nil || n < 0 || n > 65535 {
				return errors.New("invalid master port")
			}
			c.ReplicaOf = f[0] + " " + f[1]
			return nil
		}},
		param{"masterauth", true, func(c *Config) string { return rc(c).MasterAuth }, func(c *Config, v string) error { rc(c).MasterAuth = v; return nil }},
		param{"masteruser", true, func(c *Config) string { return rc(c).MasterUser }, func(c *Config, v string) error { rc(c).MasterUser = v; return nil }},
		param{"replica-read-only", true, func(c *Config) string { return yesNo(rc(c).ReplicaReadOnly) }, yesNoParam(func(c *Config) *bool { return &rc(c).ReplicaReadOnly })},
		param{"replica-serve-stale-data", true, func(c *Config) string { return yesNo(rc(c).ServeStaleData) }, yesNoParam(func(c *Config) *bool { return &rc(c).ServeStaleData })},
		param{"replica-priority", true, func(c *Config) string { return strconv.Itoa(rc(c).ReplicaPriority) }, intParam(func(c *Config) *int { return &rc(c).ReplicaPriority }, 0, math.MaxInt32)},
		param{"replica-announce-ip", true, func(c *Config) string { return rc(c).AnnounceIP }, func(c *Config, v string) error { rc(c).AnnounceIP = v; return nil }},
		param{"replica-announce-port", true, func(c *Config) string { return strconv.Itoa(rc(c).AnnouncePort) }, intParam(func(c *Config) *int { return &rc(c).AnnouncePort }, 0, 65535)},
		param{"repl-backlog-size", true, func(c *Config) string { return strconv.FormatInt(rc(c).BacklogSize, 10) }, func(c *Config, v string) error {
			n, err := parseMemory(v)
			if err != nil || n < 1 || n > 1<<40 {
				return errors.New("argument must be a memory value between 1 and 1tb")
			}
			rc(c).BacklogSize = n
			return nil
		}},
		// bind-source-addr is any string, as in Redis: one that is not an address of this host
		// makes outgoing connections fall back to the address the system picks (repl.Dial).
		param{"bind-source-addr", true, func(c *Config) string { return rc(c).BindSourceAddr }, func(c *Config, v string) error { rc(c).BindSourceAddr = v; return nil }},
		// repl-diskless-load: swapdb (a second copy of the data in memory while the snapshot
		// loads) is taken as disabled, which keeps the data as it was until the snapshot is
		// whole too.
		param{"repl-diskless-load", true, func(c *Config) string { return c.ReplDisklessLoad }, func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "disabled", "on-empty-db":
				c.ReplDisklessLoad = strings.ToLower(v)
			case "swapdb":
				c.ReplDisklessLoad = "disabled"
			default:
				return errors.New("argument(s) must be one of the following: disabled, on-empty-db, swapdb")
			}
			return nil
		}},
		param{"repl-timeout", true, func(c *Config) string { return strconv.Itoa(rc(c).Timeout) }, intParam(func(c *Config) *int { return &rc(c).Timeout }, 1, math.MaxInt32)},
		param{"min-replicas-to-write", true, func(c *Config) string { return strconv.Itoa(rc(c).MinReplicasToWrite) }, intParam(func(c *Config) *int { return &rc(c).MinReplicasToWrite }, 0, math.MaxInt32)},
		param{"min-replicas-max-lag", true, func(c *Config) string { return strconv.Itoa(rc(c).MinReplicasMaxLag) }, intParam(func(c *Config) *int { return &rc(c).MinReplicasMaxLag }, 0, math.MaxInt32)},
	)
}

// oneArgument lists the settings that a config file line or the command line must give exactly
// one argument, as Redis requires of them ("wrong number of arguments"): an address with a
// blank in it is an error, not two words joined.
var oneArgument = map[string]bool{"bind-source-addr": true}

// replConfig returns the replication package's settings for c.
func replConfig(c *Config) repl.Config {
	rc := c.Replication
	rc.OutputLimit = c.ClientOutputBufferLimit[outbuf.Replica]
	rc.SkipUnsupported = c.RDBSkipUnknownTypes
	rc.SnapshotRDB = persist.IsRDBName(c.DBFilename)
	return rc
}

// startRepl makes the server's replication state.
func (s *Server) startRepl(cfg *Config) {
	s.repl = repl.New(replHost{s}, replConfig(cfg), s.log)
	s.applier = s.newConn(nil)
	s.applier.authed = true
	s.applier.acct.Store(nil) // no user: the primary's stream runs whatever it sends
	s.applier.replApplier = true
	s.minReplicas.Store(cfg.Replication.MinReplicasToWrite > 0)
}

// StartReplication follows the primary that the replicaof setting names, if any. Run calls it
// once the data files are loaded, so that a replica asks its primary to continue from its data.
func (s *Server) StartReplication() {
	if host, port, ok := strings.Cut(s.config().ReplicaOf, " "); ok {
		p, _ := strconv.Atoi(port)
		s.repl.ReplicaOf(host, p)
	}
}

// replStateFile is where a server stopped cleanly leaves the replication ID and offset of its
// data files, so that after a restart it (or its replicas) can continue with a partial sync.
const replStateFile = "bloomd-replication.state"

// saveReplState records the replication position of the data files after a clean stop that
// left them complete (the log synced, or a last snapshot saved).
func (s *Server) saveReplState(complete bool) {
	cfg := s.config()
	path := filepath.Join(cfg.Dir, replStateFile)
	if !complete {
		os.Remove(path)
		return
	}
	id, off := s.repl.State()
	data := fmt.Sprintf("bloomd-replication 1 %s %d\n", id, off)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		s.log.Warn("cannot record the replication position; a restart will need a full sync", "err", err)
		return
	}
	if f, err := os.Open(tmp); err == nil {
		f.Sync()
		f.Close()
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return
	}
	s.log.Info("replication position recorded", "replid", id, "offset", off)
}

// restoreReplState takes the position that a clean stop recorded, and removes the record: once
// the server writes again, its files are no longer at that position.
func (s *Server) restoreReplState() {
	path := filepath.Join(s.config().Dir, replStateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	os.Remove(path)
	var id string
	var off int64
	if n, err := fmt.Sscanf(string(data), "bloomd-replication 1 %s %d\n", &id, &off); n != 2 || err != nil || len(id) != 40 || off < 0 {
		s.log.Warn("ignoring a damaged replication position file", "file", path)
		return
	}
	s.repl.Restore(id, off)
	s.log.Info("replication position restored from the last clean stop", "replid", id, "offset", off)
}

// applyRepl passes changed replication settings (CONFIG SET) on.
func (s *Server) applyRepl(next *Config) {
	s.repl.SetConfig(replConfig(next))
	s.minReplicas.Store(next.Replication.MinReplicasToWrite > 0)
}

// replCheck returns the error a command gets from replication's rules (-READONLY on a
// read-only replica, -MASTERDOWN on a stale one, -NOREPLICAS without enough good replicas),
// or "". It is called for every command; its cost when nothing applies is two atomic loads.
func (c *Conn) replCheck(cmd *Command) string {
	s := c.srv
	if c.replApplier {
		return ""
	}
	if s.repl.IsReplica() {
		if cmd.Flags&(FlagWrite|FlagChangesData) != 0 && s.repl.ReadOnly() {
			return errReadOnly
		}
		if cmd.Flags&FlagStale == 0 && s.repl.Stale() {
			return errMasterDown
		}
		return ""
	}
	if cmd.Flags&FlagWrite != 0 && s.minReplicas.Load() && !s.repl.EnoughReplicas() {
		return errNoReplicas
	}
	return ""
}

// replHost is the server as internal/repl sees it.
type replHost struct{ s *Server }

// Snapshot takes the snapshot that full syncs share. Its copies of cuckoo filters (and, for an
// exact one, of Bloom filters) are charged to the memory ceiling (with the backlog, apart from
// the keyspace) until it is released, and refused when they do not fit.
func (h replHost) Snapshot(mark func(), exact bool) (repl.Snapshot, error) {
	s := h.s
	var items []persist.Item
	var charged int64
	var err error
	start := time.Now()
	s.Pause(func() {
		items, err = dataKeyspace(h).capture(func(n int64) error {
			if err := s.chargeRepl(n); err != nil {
				what := "its cuckoo filters"
				if exact {
					what = "its filters (a Redis replica needs them as of one instant)"
				}
				return fmt.Errorf("the copies of %s (%d bytes, %s) do not fit under the memory limit: %w", what, n, humanBytes(n), err)
			}
			charged = n
			return nil
		}, exact)
		if err == nil {
			mark()
		}
	})
	if err != nil {
		s.log.Warn("full sync refused", "err", err)
		return repl.Snapshot{}, err
	}
	if exact {
		s.log.Info("exact snapshot for a full sync taken", "copied_bytes", charged, "pause_ms", float64(time.Since(start).Microseconds())/1000)
	}
	release := func() { s.chargeRepl(-charged) }
	size, err := persist.SnapshotSize(items)
	if err != nil {
		release()
		return repl.Snapshot{}, err
	}
	write := func(w io.Writer, rdb bool, window func() int64) error {
		cfg := s.config()
		opts := persist.SyncOptions{RDB: rdb, RDBOptions: cfg.rdbOptions()}
		switch {
		case window == nil:
		case exact:
			opts.Window = window
		default:
			// The bits are read: the adds that follow found them read, once every add in
			// flight now is in the stream.
			opts.Window = func() (w int64) {
				s.Pause(func() { w = window() })
				return w
			}
		}
		_, err := persist.WriteSync(w, items, opts)
		return err
	}
	return repl.Snapshot{Size: size, Exact: exact, Write: write, Release: release}, nil
}

// Charge charges the backlog's chunks to the memory ceiling.
func (h replHost) Charge(n int64) error { return h.s.chargeRepl(n) }

// Load replaces the keyspace with a primary's snapshot. With repl-diskless-load on-empty-db (the
// default) and no key, it loads the snapshot straight from the link as it arrives; otherwise
// (repl-diskless-load disabled, or keys to keep should the transfer be cut short, as Redis's
// on-empty-db decides) it receives it into a file first, and empties the keyspace and loads
// the file only once it is whole. Either way the bytes reach the disk once: with data files,
// the snapshot received becomes the snapshot file (persist.Store.Receive, ReceiveFile) rather
// than being saved again after the load. The FLUSHALL before the load is journaled; the keys
// loaded are not, as the new snapshot file holds them.
func (h replHost) Load(p *repl.Payload) (repl.Loaded, error) {
	s := h.s
	cfg := s.config()
	keys, _ := s.ks.count()
	streamed := cfg.ReplDisklessLoad == "on-empty-db" && keys == 0
	flushed := false
	flush := func() {
		s.dataLoading.Store(true)
		flushed = true
		s.applier.multi = nil // a transaction cut short by the lost link is dropped with the data
		s.applierStale.Store(false)
		s.applyLocal([]byte("FLUSHALL"))
	}
	defer s.dataLoading.Store(false)
	const name = "the primary's snapshot"
	sink := dataKeyspace{s}
	var rc persist.Received
	var err error
	switch {
	case streamed && s.store != nil:
		flush()
		rc, err = s.store.Receive(p.R, p.Size, sink)
	case streamed:
		flush()
		rc, err = persist.ReadSync(p.R, p.Size, name, sink, cfg.rdbOptions())
	case s.store != nil:
		rc, err = s.store.ReceiveFile(p.Copy, sink, flush)
	default:
		rc, err = loadThroughFile(p, cfg, sink, flush)
	}
	if err != nil {
		if flushed {
			s.applyLocal([]byte("FLUSHALL")) // a part of a snapshot is no snapshot
		}
		return repl.Loaded{}, err
	}
	if len(rc.Skipped) > 0 {
		s.log.Warn("the primary's snapshot holds what bloomd does not hold: skipped (rdb-skip-unknown-types yes)", "skipped", fmt.Sprint(rc.Skipped))
	}
	format := "bloomd"
	if rc.RDB {
		format = "RDB"
	}
	s.log.Info("primary's snapshot loaded", "format", format, "keys", rc.Stats.Keys, "bytes", rc.Stats.Bytes,
		"from", map[bool]string{true: "the link", false: "a file"}[streamed], "became_the_snapshot_file", rc.Saved)
	return repl.Loaded{AddsNewUntil: rc.Header.AddsNewUntil, DB: rc.StreamDB}, nil
}

// loadThroughFile receives a snapshot into a temporary file in dir, for a server without data
// files that keeps its keys until the snapshot is whole, and loads it.
func loadThroughFile(p *repl.Payload, cfg Config, sink dataKeyspace, flush func()) (persist.Received, error) {
	f, err := os.CreateTemp(cfg.Dir, "temp-repl-*.snapshot")
	if err != nil {
		return persist.Received{}, fmt.Errorf("cannot create a file for the primary's snapshot: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	n, err := p.Copy(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return persist.Received{}, fmt.Errorf("the snapshot's transfer was cut short after %d bytes (the data is kept as it was): %w", n, err)
	}
	var head [9]byte
	f.ReadAt(head[:], 0)
	if err := persist.CheckSyncFormat(head[:min(n, 9)]); err != nil {
		return persist.Received{}, err
	}
	flush()
	return persist.ReadSync(bufio.NewReaderSize(io.NewSectionReader(f, 0, n), 1<<20), n, "the primary's snapshot", sink, cfg.rdbOptions())
}

// Supports reports whether bloomd has the command a primary's stream holds.
func (h replHost) Supports(name []byte) bool { return h.s.mux.Lookup(name) != nil }

// SetAddsAsNew switches how the applier applies Bloom filter adds (see addItems).
func (h replHost) SetAddsAsNew(on bool) { h.s.replAddsNew.Store(on) }

func (h replHost) Port() int {
	for _, a := range h.s.Addrs() {
		if ta, ok := a.(*net.TCPAddr); ok {
			return ta.Port
		}
	}
	return h.s.config().Port
}

// Apply runs a command of the primary's stream; the applier stays in the gate until EndBatch,
// as an event loop does for a batch of requests.
func (h replHost) Apply(argv [][]byte) {
	s := h.s
	c := s.applier
	if s.applierStale.Swap(false) {
		c.multi = nil
	}
	c.execute(argv)
	c.wait = nil
	if b := c.w.Bytes(); len(b) > 0 && b[0] == '-' {
		s.log.Debug("command from the primary failed", "command", string(argv[0]), "reply", strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	c.w.Truncate(0)
}

// EndBatch ends a batch of the stream as flush ends a client's: the applier leaves the gate and
// publishes its statistics, which count the stream's commands as Redis's replicas count them.
func (h replHost) EndBatch() {
	h.s.applier.leaveGate()
	h.s.applier.publish()
}

func (h replHost) RoleChanged(replica bool) {
	// A replica applies the stream as a log is replayed (adds counted as the primary counted
	// them), keeps keys until the primary deletes them (though its clients see those whose time
	// has passed as gone), and ignores maxmemory, as Redis's replicas do.
	h.s.SetLoading(replica)
	h.s.ks.replica.Store(replica)
	// A transaction of the old primary cut short is not continued by the new one's stream. The
	// applier belongs to the link's goroutine, which drops it on its next command.
	h.s.applierStale.Store(true)
}

// applyLocal runs one command of the primary's stream on the applier connection, which is
// exempt from replication's rules, and drops its reply.
func (s *Server) applyLocal(argv ...[]byte) {
	c := s.applier
	if s.applierStale.Swap(false) {
		c.multi = nil
	}
	c.execute(argv)
	c.leaveGate()
	c.wait = nil
	if b := c.w.Bytes(); len(b) > 0 && b[0] == '-' {
		s.log.Debug("command from the primary failed", "command", string(argv[0]), "reply", strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	c.w.Truncate(0)
}

func registerReplication(mx *Mux) {
	cmd := func(name string, arity int, flags Flags, since, group, summary string, h Handler) *Command {
		c := &Command{Name: name, Arity: arity, Flags: flags, Since: since, Group: group, Summary: summary, Handler: h}
		mx.Handle(c)
		return c
	}
	admin := FlagAdmin | FlagStale | FlagNoMulti
	cmd("replicaof", 3, FlagAdmin|FlagStale, "5.0.0", "server", "Configures a server as replica of another, or promotes it to a primary.", replicaofCmd)
	cmd("slaveof", 3, FlagAdmin|FlagStale, "1.0.0", "server", "Sets a Redis server as a replica of another, or promotes it to being a primary.", replicaofCmd)
	cmd("psync", -3, admin, "2.8.0", "server", "An internal command used in replication.", psyncCmd)
	cmd("sync", 1, admin, "1.0.0", "server", "An internal command used in replication.", syncCmd)
	cmd("replconf", -1, FlagAdmin|FlagStale|FlagLoading, "3.0.0", "server", "An internal command for configuring the replication stream.", replconfCmd)
	cmd("wait", 3, 0, "3.0.0", "generic", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", waitCmd)
	cmd("role", 1, FlagLoading|FlagStale|FlagFast, "2.8.12", "server", "Returns the replication role.", roleCmd)
}

func replicaofCmd(c *Conn, args [][]byte) {
	if c.srv.cluster != nil {
		c.w.Error("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	if equalFold(args[1], "no") && equalFold(args[2], "one") {
		c.srv.repl.NoOne()
		c.srv.setReplicaOf("")
		c.w.OK()
		return
	}
	port, ok := resp.ParseInt(args[2])
	if !ok || port < 0 || port > 65535 {
		c.w.Error("ERR Invalid master port")
		return
	}
	host := string(args[1])
	reply := c.srv.repl.ReplicaOf(host, int(port))
	c.srv.setReplicaOf(host + " " + strconv.Itoa(int(port)))
	c.w.Simple(reply)
}

// setReplicaOf records the replicaof setting, for CONFIG GET and CONFIG REWRITE.
func (s *Server) setReplicaOf(v string) {
	s.cfgMu.Lock()
	s.cfg.ReplicaOf = v
	s.cfgMu.Unlock()
}

func syncCmd(c *Conn, args [][]byte) {
	c.w.Error("ERR bloomd's replicas use PSYNC; SYNC (before Redis 2.8) is not supported")
}

// psyncCmd hands the connection to internal/repl once this command's reply slot is reached.
func psyncCmd(c *Conn, args [][]byte) {
	s := c.srv
	if s.repl.IsReplica() && s.repl.Role().State != "connected" {
		c.w.Error("NOMASTERLINK Can't SYNC while not connected with my master")
		return
	}
	replid := string(args[1])
	offset := bytes.Clone(args[2])
	info := c.replInfo
	info.Addr = c.addr
	c.hijack = func(nc net.Conn, buffered []byte) {
		s.repl.ServeReplica(nc, buffered, replid, offset, info)
	}
}

func replconfCmd(c *Conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.w.Error(errSyntax)
		return
	}
	for i := 1; i < len(args); i += 2 {
		v := args[i+1]
		switch strings.ToLower(string(args[i])) {
		case "listening-port":
			n, ok := resp.ParseInt(v)
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			c.replInfo.ListeningPort = int(n)
		case "ip-address":
			if len(v) >= 46 {
				c.w.Error(fmt.Sprintf("ERR REPLCONF ip-address provided by replica instance is too long: %d bytes", len(v)))
				return
			}
			c.replInfo.IPAddress = string(v)
		case "capa":
			c.replInfo.Capa(string(v))
		case "ack", "getack":
			return // for replica links only, which internal/repl reads; no reply, as Redis
		case "rdb-only", "rdb-filter-only":
		default:
			c.w.Error("ERR Unrecognized REPLCONF option: " + cString(args[i], 128))
			return
		}
	}
	c.w.OK()
}

func waitCmd(c *Conn, args [][]byte) {
	s := c.srv
	if s.repl.IsReplica() {
		c.w.Error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	n, ok := resp.ParseInt(args[1])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	ms, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.w.Error("ERR timeout is negative")
		return
	}
	offset := c.woff
	if got := s.repl.Acked(offset); got >= int(n) || c.inExclusive {
		// Enough replicas already, or inside EXEC, where WAIT does not block: the count at
		// once, as in Redis.
		c.w.Int(int64(got))
		return
	}
	c.block(func(gone <-chan struct{}) []byte {
		return resp.AppendInt(nil, int64(s.repl.Wait(int(n), offset, time.Duration(ms)*time.Millisecond, s.done, gone)))
	})
}

func roleCmd(c *Conn, args [][]byte) {
	ri := c.srv.repl.Role()
	if ri.Replica {
		c.w.Array(5)
		c.w.BulkString("slave")
		c.w.BulkString(ri.Host)
		c.w.Int(int64(ri.Port))
		c.w.BulkString(ri.State)
		c.w.Int(ri.Offset)
		return
	}
	c.w.Array(3)
	c.w.BulkString("master")
	c.w.Int(ri.Offset)
	c.w.Array(len(ri.Replicas))
	for _, r := range ri.Replicas {
		c.w.Array(3)
		c.w.BulkString(r.IP)
		c.w.BulkString(strconv.FormatInt(r.Port, 10))
		c.w.BulkString(strconv.FormatInt(r.Ack, 10))
	}
}

// configRewriteCmd implements CONFIG REWRITE: the config file bloomd started with is rewritten
// with the current settings, keeping its comments, its blank lines and the order of its lines;
// settings it lacks that differ from the defaults are appended.
func configRewriteCmd(c *Conn, args [][]byte) {
	s := c.srv
	if s.configFile == "" {
		c.w.Error("ERR The server is running without a config file")
		return
	}
	if err := s.rewriteConfig(); err != nil {
		s.log.Warn("CONFIG REWRITE failed", "err", err)
		c.w.Error("ERR Rewriting config file: " + oneLine(err.Error()))
		return
	}
	s.log.Info("CONFIG REWRITE executed with success")
	c.w.OK()
}

func (s *Server) rewriteConfig() error {
	old, err := os.ReadFile(s.configFile)
	if err != nil {
		return err
	}
	cur, def := s.config(), DefaultConfig()
	done := map[string]bool{}
	var out []string
	lines := strings.Split(strings.TrimRight(string(old), "\n"), "\n")
	if len(old) == 0 {
		lines = nil
	}
	const generated = "# Generated by CONFIG REWRITE"
	marked := false
	users, usersDone := s.configUserLines(), false
	obufLines := cur.ClientOutputBufferLimit.Lines(def.ClientOutputBufferLimit)
	for _, line := range lines {
		t := strings.TrimSpace(line)
		marked = marked || t == generated
		words, ok := splitConfigLine(t)
		if t == "" || t[0] == '#' || !ok || len(words) == 0 {
			out = append(out, line)
			continue
		}
		if strings.EqualFold(words[0], "user") && users != nil {
			// The users are rewritten from ACL LIST, in place of the first user line.
			if !usersDone {
				out = append(out, users...)
				usersDone = true
			}
			continue
		}
		p := findParam(words[0])
		if _, only := isRedisOnly(words[0]); p == nil || only {
			out = append(out, line) // a Redis setting bloomd ignores keeps its value for Redis
			continue
		}
		if p.name == obufParam {
			// One line per class, as Redis writes them: the file's lines of the setting take
			// the classes in order; classes left over are appended below if not defaults.
			if len(obufLines) > 0 {
				out = append(out, p.name+" "+obufLines[0].Text)
				obufLines = obufLines[1:]
			}
			done[p.name] = true
			continue
		}
		if done[p.name] {
			continue // a later line of a setting given twice (save): the first holds it all
		}
		done[p.name] = true
		if v := p.get(&cur); v != "" || p.name == "save" {
			out = append(out, p.name+" "+quoteConfig(v))
		}
	}
	var added []string
	for _, p := range params {
		if p.name == obufParam {
			for _, l := range obufLines {
				if l.Changed {
					added = append(added, p.name+" "+l.Text)
				}
			}
			continue
		}
		if done[p.name] {
			continue
		}
		if v := p.get(&cur); v != p.get(&def) && v != "" {
			added = append(added, p.name+" "+quoteConfig(v))
		}
	}
	if !usersDone {
		added = append(added, users...)
	}
	if len(added) > 0 {
		if !marked {
			out = append(out, generated)
		}
		out = append(out, added...)
	}
	data := []byte(strings.Join(out, "\n") + "\n")
	return replaceFile(s.configFile, data)
}

// replaceFile replaces the contents of the file at path with data, atomically: data goes to a
// new file of a unique name made with O_EXCL beside it (os.CreateTemp), so that nothing planted
// in the directory is followed or overwritten, which is synced and given the file's mode and,
// where the process may, its owner and group, then renamed over it, and the directory synced.
// A path that is a symbolic link stays one: its target is replaced. (Redis writes a new file
// with its umask's mode and renames it over the link.)
func replaceFile(path string, data []byte) (err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode, uid, gid := os.FileMode(0o644), -1, -1
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		uid, gid = fileOwner(fi)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if uid >= 0 {
		f.Chown(uid, gid) // best effort: only root (or the owner, for a group it is in) may
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// quoteConfig quotes a value for a config file when it needs it (empty, or with blanks or
// quotes inside), as Redis's CONFIG REWRITE does.
func quoteConfig(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'\\\r\n") {
		return v
	}
	if f := strings.Fields(v); len(f) > 1 && !strings.ContainsAny(v, "\"'\\") {
		return v // several words (bind, save, replicaof): written as they are read
	}
	return strconv.Quote(v)
}

func newRunID() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// handOver gives a connection served by its own goroutine to the PSYNC that asked for it.
func (c *Conn) handOver(nc net.Conn) {
	fn := c.hijack
	c.hijack = nil
	c.hijacked = true
	buf := bytes.Clone(c.rd.Unread())
	fn(nc, buf)
}
