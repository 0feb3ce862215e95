package server

import (
	"fmt"
	"net"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/cluster"
	"github.com/bloomd/bloom/internal/resp"
)

// This file connects internal/cluster to the server: the CLUSTER command and ASKING, READONLY
// and READWRITE, the routing of every command's keys (-MOVED, -ASK, -TRYAGAIN, -CROSSSLOT,
// -CLUSTERDOWN), the pause of writes during a manual failover, PUBLISH across the cluster, and
// clusterHost, through which the cluster reads the keys of a slot and drives replication.

const errClusterDisabled = "ERR This instance has cluster support disabled"

// clusterHost is the server as internal/cluster sees it. Its methods run with the cluster's
// lock held, so none of them takes the server's settings lock (CONFIG SET holds it while it
// calls the cluster) or waits for commands, except DeleteKeysInSlot, which the cluster runs
// outside its lock.
type clusterHost struct{ s *Server }

func (h clusterHost) CountKeysInSlot(slot int) int { return h.s.ks.slots.countIn(slot) }

func (h clusterHost) KeysInSlot(slot, n int) [][]byte {
	keys := h.s.ks.slots.keysIn(slot, n)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

func (h clusterHost) DBSize() int {
	n, _ := h.s.ks.count()
	return n
}

// DeleteKeysInSlot removes the keys of a slot this node lost while it still held keys there
// (delKeysInSlot), journaling a DEL for each, as Redis propagates them.
func (h clusterHost) DeleteKeysInSlot(slot int) {
	s := h.s
	s.gate.exclusive(func() {
		for _, k := range s.ks.slots.keysIn(slot, 1<<30) {
			sh, e := s.ks.lockShard([]byte(k))
			if e != nil {
				s.ks.removeLocked(sh, e)
			}
			sh.mu.Unlock()
			if e != nil {
				del := [][]byte{[]byte("DEL"), []byte(k)}
				if s.journal != nil {
					s.journal.Append(del)
				}
				s.repl.Feed(del)
			}
		}
	})
}

func (h clusterHost) ReplicaOf(ip string, port int) { h.s.repl.ReplicaOf(ip, port) }
func (h clusterHost) StopReplication()              { h.s.repl.NoOne() }
func (h clusterHost) Replicating() bool             { return h.s.repl.IsReplica() }
func (h clusterHost) ReplOffset() int64             { return h.s.repl.Offset() }

func (h clusterHost) ReplLink() (bool, int64) {
	up, since := h.s.repl.PrimaryLink()
	return up, since.UnixMilli()
}

func (h clusterHost) PauseWrites(until int64) { h.s.clusterPause.Store(until) }

func (h clusterHost) Publish(channel, message []byte, shard bool) {
	h.s.hub.Publish(channel, message, nil)
}

// initCluster makes the node's cluster state from the nodes file and opens the bus port; the
// node serves no key until startCluster. It is called once the client port is known (Run,
// after Listen).
func (s *Server) initCluster() error {
	cfg := s.config()
	if !cfg.Cluster.Enabled || s.cluster != nil {
		return nil
	}
	port := cfg.Port
	for _, a := range s.Addrs() {
		if ta, ok := a.(*net.TCPAddr); ok && cfg.TLSPort != ta.Port {
			port = ta.Port
			break
		}
	}
	bus := &cluster.Bus{DialFunc: s.repl.Dial, Log: s.log}
	c, err := cluster.New(cfg.Cluster, cluster.Options{Dir: cfg.Dir, Port: port, TLSPort: cfg.TLSPort, Env: bus, Host: clusterHost{s}, Log: s.log})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	bus.Attach(c)
	if err := bus.Listen(cfg.Bind, c.BusPort()); err != nil {
		c.Close()
		return fmt.Errorf("server: cannot listen on the cluster bus port %d (cluster-port, or port + 10000): %w", c.BusPort(), err)
	}
	s.cluster, s.bus = c, bus
	return nil
}

// startCluster reconciles the slots with the keys loaded and starts the bus (Run calls it
// once the data files are loaded).
func (s *Server) startCluster() {
	if s.cluster == nil {
		return
	}
	s.clusterStart.Do(func() {
		s.cluster.VerifyData()
		s.bus.Start()
		for _, a := range s.bus.Addrs() {
			s.log.Info("cluster bus listening", "addr", a.String(), "node", s.cluster.Myself().String())
		}
	})
}

// stopCluster closes the bus and the cluster state.
func (s *Server) stopCluster() {
	if s.cluster != nil {
		s.bus.Close()
		s.cluster.Close()
	}
}

// clusterKeyed reports whether the cluster checks cmd's keys: it has some, or is EXEC.
func clusterKeyed(cmd *Command) bool {
	return cmd.acl != nil && len(cmd.acl.KeySpecs) > 0 || cmd.Name == "exec"
}

// addKeys adds the keys of a command to q, as its key specs locate them.
func addKeys(q *cluster.Query, cmd *Command, args [][]byte) {
	if cmd.acl == nil {
		return
	}
	if cmd.Name == "migrate" { // MIGRATE's keys are found as Redis's migrateGetKeys finds them
		first, n := acl.MigrateKeys(args)
		for k := first; k < first+n; k++ {
			q.Add(args[k])
		}
		return
	}
	for i := range cmd.acl.KeySpecs {
		first, last, step := cmd.acl.KeySpecs[i].Range(args)
		for k := first; k <= last; k += step {
			q.Add(args[k])
		}
	}
}

func isWrite(cmd *Command) bool { return cmd.Flags&(FlagWrite|FlagChangesData) != 0 }

// clusterRoute returns the error a command gets when this node does not serve its keys
// (getNodeByQuery), or "". For EXEC, the keys are those of every queued command.
func (c *Conn) clusterRoute(cmd *Command, args [][]byte, asking bool) string {
	q := &c.cq
	q.Reset()
	// RESTORE-ASKING, which a migrating node sends, counts as asked (Redis's CMD_ASKING).
	kind := cluster.CommandKind{Asking: asking || cmd.Name == "restore-asking", ReadOnly: c.readonlyCluster}
	if cmd.Name == "exec" {
		if c.multi == nil {
			return ""
		}
		for _, qc := range c.multi.cmds {
			addKeys(q, qc.cmd, qc.args)
			kind.Write = kind.Write || isWrite(qc.cmd)
		}
	} else {
		addKeys(q, cmd, args)
		kind.Write = isWrite(cmd)
		kind.Migrate = cmd.Name == "migrate"
	}
	msg := c.srv.cluster.Route().Check(q, kind, c.keyHere)
	if q.Len() > 0 {
		c.clusterSlot = q.Slot()
	}
	q.Reset() // the keys alias args
	return msg
}

// keyHere reports whether key is here and not expired.
func (c *Conn) keyHere(key []byte) bool {
	e := c.srv.ks.lookup(key)
	return e != nil && !c.srv.ks.expired(e, -1)
}

// clusterCheck applies the cluster to a command before it runs or is queued: the routing of
// its keys, then the pause of writes during a manual failover. It reports whether the command
// was answered (refused, or held by the pause).
func (c *Conn) clusterCheck(cmd *Command, args [][]byte, asking bool) bool {
	s := c.srv
	if msg := c.clusterRoute(cmd, args, asking); msg != "" {
		cmd.stats.Reject()
		s.mstats.Rejected()
		if cmd.Name == "exec" {
			c.multi = nil // Redis discards the transaction and answers the redirection
			c.w.Error(msg)
		} else {
			c.reject(msg)
		}
		return true
	}
	until := s.clusterPause.Load()
	if until == 0 || c.multi != nil && cmd.Name != "exec" {
		return false
	}
	write := isWrite(cmd)
	if cmd.Name == "exec" && c.multi != nil {
		for _, qc := range c.multi.cmds {
			write = write || isWrite(qc.cmd)
		}
	}
	if !write || nowMs() >= until {
		return false
	}
	// A manual failover pauses writes on the primary until the replica took over (or the
	// pause ends). Redis runs the command then; bloomd answers it then with where its keys
	// are served now: -MOVED to the new primary, or -TRYAGAIN if the failover did not happen,
	// which cluster clients retry. The event loop is never blocked.
	argsCopy := make([][]byte, len(args)) // args alias the read buffer
	for i, a := range args {
		argsCopy[i] = append([]byte(nil), a...)
	}
	c.multi = nil
	c.block(func(gone <-chan struct{}) []byte {
		for {
			until := s.clusterPause.Load()
			if until == 0 || nowMs() >= until {
				break
			}
			select {
			case <-s.done:
				return resp.AppendError(nil, "TRYAGAIN The server is shutting down")
			case <-gone:
				return nil
			case <-time.After(10 * time.Millisecond):
			}
		}
		var q cluster.Query
		addKeys(&q, cmd, argsCopy)
		if msg := s.cluster.Route().Check(&q, cluster.CommandKind{Write: true}, func([]byte) bool { return true }); msg != "" {
			return resp.AppendError(nil, msg)
		}
		return resp.AppendError(nil, "TRYAGAIN Writes were paused for a manual failover that did not complete; try again")
	})
	return true
}

// scriptRoute checks a command that a script runs on a cluster node (Redis 7.0's
// scriptVerifyClusterState): its keys must be served here, as the calling client's ASKING and
// READONLY allow, and, unless the script allows cross-slot keys, in one slot with every other
// key the script touched (slot, -1 until the first). It returns the error, without "ERR ", or
// "". The script engine calls it for each redis.call when the server is a cluster node and the
// caller is not the primary's stream or the data files.
func (s *Server) scriptRoute(cmd *Command, args [][]byte, asking, readOnly, allowCrossSlot bool, slot *int) string {
	var q cluster.Query
	addKeys(&q, cmd, args)
	kind := cluster.CommandKind{Write: isWrite(cmd), Asking: asking, ReadOnly: readOnly}
	msg := s.cluster.Route().Check(&q, kind, func(key []byte) bool {
		e := s.ks.lookup(key)
		return e != nil && !s.ks.expired(e, -1)
	})
	switch {
	case msg == "CLUSTERDOWN The cluster is down and only accepts read commands":
		return "Script attempted to execute a write command while the cluster is down and readonly"
	case msg == "CLUSTERDOWN The cluster is down":
		return "Script attempted to execute a command while the cluster is down"
	case msg != "":
		return "Script attempted to access a non local key in a cluster node"
	}
	if q.Len() > 0 && !allowCrossSlot {
		if *slot == -1 {
			*slot = q.Slot()
		} else if *slot != q.Slot() {
			return "Script attempted to access keys that do not hash to the same slot"
		}
	}
	return ""
}

// scriptClusterCheck is scriptRoute for a command that a script called by c runs (the script
// engine's hook, before it runs each command of a script): nothing to check for the primary's
// stream or the data files, or outside cluster mode. slot is the script's slot so far: start it
// at c.clusterSlot (its declared keys' slot, -1 if none). allowCrossSlot is the script's
// allow-cross-slot-keys flag, and is set for scripts without a shebang, as Redis sets it. It
// returns Redis's error reply ("ERR Script attempted ...") or "".
func (c *Conn) scriptClusterCheck(cmd *Command, args [][]byte, allowCrossSlot bool, slot *int) string {
	if c.srv.cluster == nil || c.replApplier {
		return ""
	}
	if msg := c.srv.scriptRoute(cmd, args, c.clusterAsking, c.readonlyCluster, allowCrossSlot, slot); msg != "" {
		return "ERR " + msg
	}
	return ""
}

func registerCluster(mx *Mux) {
	container := &Command{Name: "cluster", Arity: -2, Since: "3.0.0", Group: "cluster", Summary: "A container for cluster commands", Subcommands: map[string]*Command{}}
	mx.Handle(container)
	since := map[string]string{"addslotsrange": "7.0.0", "delslotsrange": "7.0.0", "links": "7.0.0", "shards": "7.0.0", "replicas": "5.0.0", "help": "5.0.0"}
	sub := func(name string, arity int, flags Flags, summary string) *Command {
		c := &Command{Name: "cluster|" + name, Arity: arity, Flags: flags | FlagStale, Since: "3.0.0", Group: "cluster", Summary: summary, Handler: clusterCmd}
		if v, ok := since[name]; ok {
			c.Since = v
		}
		container.Subcommands[name] = c
		return c
	}
	admin := FlagAdmin
	sub("addslots", -3, admin, "Assign new hash slots to receiving node")
	sub("addslotsrange", -4, admin, "Assign new hash slots to receiving node")
	sub("bumpepoch", 2, admin, "Advance the cluster config epoch")
	sub("count-failure-reports", 3, admin, "Return the number of failure reports active for a given node")
	sub("countkeysinslot", 3, 0, "Return the number of local keys in the specified hash slot")
	sub("delslots", -3, admin, "Set hash slots as unbound in receiving node")
	sub("delslotsrange", -4, admin, "Set hash slots as unbound in receiving node")
	sub("failover", -2, admin, "Forces a replica to perform a manual failover of its master.")
	sub("flushslots", 2, admin, "Delete a node's own slots information")
	sub("forget", 3, admin, "Remove a node from the nodes table")
	sub("getkeysinslot", 4, 0, "Return local key names in the specified hash slot")
	sub("info", 2, 0, "Provides info about Redis Cluster node state")
	sub("keyslot", 3, 0, "Returns the hash slot of the specified key")
	sub("links", 2, 0, "Returns a list of all TCP links to and from peer nodes in cluster")
	sub("meet", -4, admin, "Force a node cluster to handshake with another node")
	sub("myid", 2, 0, "Return the node id")
	sub("nodes", 2, 0, "Get Cluster config for the node")
	sub("replicate", 3, admin, "Reconfigure a node as a replica of the specified master node")
	sub("reset", -2, admin|FlagExclusive, "Reset a Redis Cluster node")
	sub("saveconfig", 2, admin, "Forces the node to save cluster state on disk")
	sub("set-config-epoch", 3, admin, "Set the configuration epoch in a new node")
	sub("setslot", -4, admin, "Bind a hash slot to a specific node")
	sub("shards", 2, 0, "Get array of cluster slots to node mappings")
	sub("replicas", 3, admin, "List replica nodes of the specified master node")
	sub("slaves", 3, admin, "List replica nodes of the specified master node")
	sub("slots", 2, 0, "Get array of Cluster slot to node mappings")
	h := sub("help", 2, FlagLoading, "Show helpful text about the different subcommands")
	h.Handler = helpCmd("CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ADDSLOTS <slot> [<slot> ...]", "    Assign slots to current node.",
		"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]", "    Assign slots which are between <start-slot> and <end-slot> to current node.",
		"BUMPEPOCH", "    Advance the cluster config epoch.",
		"COUNT-FAILURE-REPORTS <node-id>", "    Return number of failure reports for <node-id>.",
		"COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
		"DELSLOTS <slot> [<slot> ...]", "    Delete slots information from current node.",
		"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]", "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
		"FAILOVER [FORCE|TAKEOVER]", "    Promote current replica node to being a master.",
		"FORGET <node-id>", "    Remove a node from the cluster.",
		"GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
		"FLUSHSLOTS", "    Delete current node own slots information.",
		"INFO", "    Return information about the cluster.",
		"KEYSLOT <key>", "    Return the hash slot for <key>.",
		"MEET <ip> <port> [<bus-port>]", "    Connect nodes into a working cluster.",
		"MYID", "    Return the node id.",
		"NODES", "    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...", "",
		"REPLICATE <node-id>", "    Configure current node as replica to <node-id>.",
		"RESET [HARD|SOFT]", "    Reset current node (default: soft).",
		"SET-CONFIG-EPOCH <epoch>", "    Set config epoch of current node.",
		"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)", "    Set slot state.",
		"REPLICAS <node-id>", "    Return <node-id> replicas.",
		"SAVECONFIG", "    Force saving cluster configuration on disk.",
		"SLOTS", "    Return information about slots range mappings. Each range is made of:",
		"    start, end, master and replicas IP addresses, ports and ids", "",
		"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
		"LINKS", "    Return information about all network links between this node and its peers.",
		"    Output format is an array where each array element is a map containing attributes of a link", "")

	conn := FlagFast
	mx.Handle(&Command{Name: "asking", Arity: 1, Flags: conn, Since: "3.0.0", Group: "cluster", Summary: "Sent by cluster clients after an -ASK redirect", Handler: askingCmd})
	mx.Handle(&Command{Name: "readonly", Arity: 1, Flags: conn | FlagLoading | FlagStale, Since: "3.0.0", Group: "cluster", Summary: "Enables read queries for a connection to a cluster replica node", Handler: readonlyCmd})
	mx.Handle(&Command{Name: "readwrite", Arity: 1, Flags: conn | FlagLoading | FlagStale, Since: "3.0.0", Group: "cluster", Summary: "Disables read queries for a connection to a cluster replica node", Handler: readwriteCmd})
}

func clusterCmd(c *Conn, args [][]byte) {
	s := c.srv
	if s.cluster == nil {
		c.w.Error(errClusterDisabled)
		return
	}
	s.cluster.Command(c.w, args, func() {
		// CLUSTER RESET of a replica: its data was its primary's (the command runs alone).
		ks := s.ks
		for i := range ks.shards {
			sh := &ks.shards[i]
			sh.mu.Lock()
			for _, e := range sh.m {
				ks.removeLocked(sh, e)
			}
			sh.mu.Unlock()
		}
		c.propagateCmd([]byte("FLUSHALL"))
	})
}

func askingCmd(c *Conn, args [][]byte) {
	if c.srv.cluster == nil {
		c.w.Error(errClusterDisabled)
		return
	}
	c.asking = true
	c.w.OK()
}

func readonlyCmd(c *Conn, args [][]byte) {
	if c.srv.cluster == nil {
		c.w.Error(errClusterDisabled)
		return
	}
	c.readonlyCluster = true
	c.w.OK()
}

func readwriteCmd(c *Conn, args [][]byte) {
	if c.srv.cluster == nil {
		c.w.Error(errClusterDisabled)
		return
	}
	c.readonlyCluster = false
	c.w.OK()
}

// clusterConnections returns INFO's cluster_connections: two bus connections for each other
// node, as Redis counts them.
func (s *Server) clusterConnections() int {
	if s.cluster == nil {
		return 0
	}
	return s.cluster.Connections()
}

// appendClusterInfo appends INFO's cluster section.
func (s *Server) appendClusterInfo(b []byte) []byte {
	b = append(b, "# Cluster\r\n"...)
	return field(b, "cluster_enabled", boolInt(s.cluster != nil))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
