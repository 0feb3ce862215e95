package cluster

import (
	"fmt"
	"net"
	"strings"

	"github.com/bloomd/bloom/internal/resp"
)

// Command runs a CLUSTER subcommand (args[0] is CLUSTER, args[1] the subcommand, whose arity
// the caller checked) and writes its reply to w, with Redis 7.0's replies and errors. flush is
// called, with the Cluster's lock released, when CLUSTER RESET turns a replica into an empty
// primary: it must remove every key.
func (c *Cluster) Command(w *resp.Writer, args [][]byte, flush func()) {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "keyslot":
		w.Int(int64(KeySlot(args[2])))
		return
	case "countkeysinslot":
		slot, ok := resp.ParseInt(args[2])
		if !ok {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		if slot < 0 || slot >= Slots {
			w.Error("ERR Invalid slot")
			return
		}
		w.Int(int64(c.host.CountKeysInSlot(int(slot))))
		return
	case "getkeysinslot":
		slot, ok1 := resp.ParseInt(args[2])
		n, ok2 := resp.ParseInt(args[3])
		if !ok1 || !ok2 {
			w.Error("ERR value is not an integer or out of range")
			return
		}
		if slot < 0 || slot >= Slots || n < 0 {
			w.Error("ERR Invalid slot or number of keys")
			return
		}
		keys := c.host.KeysInSlot(int(slot), int(min(n, 1<<30)))
		w.Array(len(keys))
		for _, k := range keys {
			w.Bulk(k)
		}
		return
	}
	// The subcommands whose arity is open-ended in the command table take a bounded number of
	// arguments; more is Redis's generic error.
	if n := len(args); sub == "meet" && n > 5 || (sub == "failover" || sub == "reset") && n > 3 {
		w.Error("ERR unknown subcommand or wrong number of arguments for '" + cString(args[1], 128) + "'. Try CLUSTER HELP.")
		return
	}
	c.lockEvent()
	needFlush := false
	defer func() {
		c.unlockEvent()
		if needFlush && flush != nil {
			flush()
		}
	}()
	switch sub {
	case "meet":
		c.cmdMeet(w, args)
	case "nodes":
		w.Verbatim(string(c.nodesDescription(0)))
	case "myid":
		w.Bulk(c.myself.name[:])
	case "slots":
		c.replySlots(w)
	case "shards":
		c.replyShards(w)
	case "flushslots":
		if c.host.DBSize() != 0 {
			w.Error("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
			return
		}
		c.delNodeSlots(c.myself)
		c.todo |= todoUpdateState | todoSaveConfig
		w.OK()
	case "addslots", "delslots":
		var set [Slots]bool
		slots := make([]int, 0, len(args)-2)
		for _, a := range args[2:] {
			s, ok := parseSlot(w, a)
			if !ok {
				return
			}
			slots = append(slots, s)
		}
		del := sub == "delslots"
		for _, s := range slots {
			if !c.checkSlotAssignment(w, &set, del, s, s) {
				return
			}
		}
		c.updateSlots(&set, del)
		w.OK()
	case "addslotsrange", "delslotsrange":
		if len(args)%2 == 1 {
			w.Error("ERR wrong number of arguments for 'cluster|" + sub + "' command")
			return
		}
		var set [Slots]bool
		del := sub == "delslotsrange"
		for j := 2; j < len(args); j += 2 {
			lo, ok := parseSlot(w, args[j])
			if !ok {
				return
			}
			hi, ok := parseSlot(w, args[j+1])
			if !ok {
				return
			}
			if lo > hi {
				w.Error(fmt.Sprintf("ERR start slot number %d is greater than end slot number %d", lo, hi))
				return
			}
			if !c.checkSlotAssignment(w, &set, del, lo, hi) {
				return
			}
		}
		c.updateSlots(&set, del)
		w.OK()
	case "setslot":
		c.cmdSetSlot(w, args)
	case "bumpepoch":
		word := "STILL"
		if c.bumpEpochWithoutConsensus() {
			word = "BUMPED"
		}
		w.Simple(fmt.Sprintf("%s %d", word, c.myself.configEpoch))
	case "info":
		w.Verbatim(c.infoText())
	case "saveconfig":
		if err := c.saveConfig(); err != nil {
			w.Error("ERR error saving the cluster node config: " + err.Error())
			return
		}
		w.OK()
	case "forget":
		n := c.lookup(args[2])
		switch {
		case n == nil:
			w.Error("ERR Unknown node " + string(args[2]))
		case n == c.myself:
			w.Error("ERR I tried hard but I can't forget myself...")
		case c.myself.isReplica() && c.myself.primary == n:
			w.Error("ERR Can't forget my master!")
		default:
			c.blacklistAdd(n)
			c.delNode(n)
			c.todo |= todoUpdateState | todoSaveConfig
			w.OK()
		}
	case "replicate":
		n := c.lookup(args[2])
		switch {
		case n == nil:
			w.Error("ERR Unknown node " + string(args[2]))
		case n == c.myself:
			w.Error("ERR Can't replicate myself")
		case n.isReplica():
			w.Error("ERR I can only replicate a master, not a replica.")
		case c.myself.isPrimary() && (c.myself.numSlots != 0 || c.host.DBSize() != 0):
			w.Error("ERR To set a master the node must be empty and without assigned slots.")
		default:
			c.setPrimary(n)
			c.todo |= todoUpdateState | todoSaveConfig
			w.OK()
		}
	case "slaves", "replicas":
		n := c.lookup(args[2])
		switch {
		case n == nil:
			w.Error("ERR Unknown node " + string(args[2]))
		case n.isReplica():
			w.Error("ERR The specified node is not a master")
		default:
			ranges := c.slotRanges()
			w.Array(len(n.replicas))
			for _, r := range n.replicas {
				w.Bulk(c.appendNode(nil, r, ranges[r]))
			}
		}
	case "count-failure-reports":
		n := c.lookup(args[2])
		if n == nil {
			w.Error("ERR Unknown node " + string(args[2]))
			return
		}
		w.Int(int64(c.failureReports(n)))
	case "failover":
		c.cmdFailover(w, args)
	case "set-config-epoch":
		epoch, ok := resp.ParseInt(args[2])
		switch {
		case !ok:
			w.Error("ERR value is not an integer or out of range")
		case epoch < 0:
			w.Error(fmt.Sprintf("ERR Invalid config epoch specified: %d", epoch))
		case len(c.nodes) > 1:
			w.Error("ERR The user can assign a config epoch only when the node does not know any other node.")
		case c.myself.configEpoch != 0:
			w.Error("ERR Node config epoch is already non-zero")
		default:
			c.myself.configEpoch = uint64(epoch)
			c.log.Warn("configEpoch set via CLUSTER SET-CONFIG-EPOCH", "epoch", epoch)
			c.currentEpoch = max(c.currentEpoch, uint64(epoch))
			c.todo |= todoUpdateState | todoSaveConfig
			w.OK()
		}
	case "reset":
		hard := false
		if len(args) == 3 {
			switch strings.ToLower(string(args[2])) {
			case "hard":
				hard = true
			case "soft":
			default:
				w.Error("ERR syntax error")
				return
			}
		}
		if c.myself.isPrimary() && c.host.DBSize() != 0 {
			w.Error("ERR CLUSTER RESET can't be called with master nodes containing keys")
			return
		}
		needFlush = c.reset(hard)
		w.OK()
	case "links":
		c.replyLinks(w)
	default:
		w.Error("ERR unknown subcommand '" + cString(args[1], 128) + "'. Try CLUSTER HELP.")
	}
}

func cString(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// parseSlot reads a slot number, answering Redis's error if it is not one.
func parseSlot(w *resp.Writer, a []byte) (int, bool) {
	s, ok := resp.ParseInt(a)
	if !ok || s < 0 || s >= Slots {
		w.Error("ERR Invalid or out of range slot")
		return 0, false
	}
	return int(s), true
}

// checkSlotAssignment checks slots lo..hi for ADDSLOTS (free) or DELSLOTS (assigned), and
// that none is named twice, marking them in set.
func (c *Cluster) checkSlotAssignment(w *resp.Writer, set *[Slots]bool, del bool, lo, hi int) bool {
	for s := lo; s <= hi; s++ {
		if del && c.slots[s] == nil {
			w.Error(fmt.Sprintf("ERR Slot %d is already unassigned", s))
			return false
		}
		if !del && c.slots[s] != nil {
			w.Error(fmt.Sprintf("ERR Slot %d is already busy", s))
			return false
		}
		if set[s] {
			w.Error(fmt.Sprintf("ERR Slot %d specified multiple times", s))
			return false
		}
		set[s] = true
	}
	return true
}

func (c *Cluster) updateSlots(set *[Slots]bool, del bool) {
	for s, on := range set {
		if !on {
			continue
		}
		c.importingFrom[s] = nil // the owner now: no longer importing
		if del {
			c.delSlot(s)
		} else {
			c.addSlot(c.myself, s)
		}
	}
	c.todo |= todoUpdateState | todoSaveConfig
}

// startHandshake adds a node to meet at ip:port, bus port cport, unless a handshake with that
// address is under way (clusterStartHandshake). It reports false for an invalid address.
func (c *Cluster) startHandshake(ip string, port, cport int) bool {
	addr := net.ParseIP(ip)
	if addr == nil || port <= 0 || port > 65535 || cport <= 0 || cport > 65535 {
		return false
	}
	norm := addr.String()
	if v4 := addr.To4(); v4 != nil && !strings.Contains(ip, ":") {
		norm = v4.String()
	}
	for _, n := range c.order {
		if n.inHandshake() && strings.EqualFold(n.ip, norm) && n.port == port && n.cport == cport {
			return true // already in progress
		}
	}
	n := c.createNode(nil, FlagHandshake|FlagMeet)
	n.ip, n.port, n.cport = norm, port, cport
	c.addNode(n)
	return true
}

// Meet starts a handshake with the node at ip:port, bus port cport (0 for port + 10000).
func (c *Cluster) Meet(ip string, port, cport int) error {
	c.lockEvent()
	defer c.unlockEvent()
	if cport == 0 {
		cport = port + portIncr
	}
	if !c.startHandshake(ip, port, cport) {
		return fmt.Errorf("cluster: invalid node address %s:%d", ip, port)
	}
	return nil
}

func (c *Cluster) cmdMeet(w *resp.Writer, args [][]byte) {
	port, ok := resp.ParseInt(args[3])
	if !ok {
		w.Error("ERR Invalid TCP base port specified: " + string(args[3]))
		return
	}
	cport := port + portIncr
	if len(args) == 5 {
		if cport, ok = resp.ParseInt(args[4]); !ok {
			w.Error("ERR Invalid TCP bus port specified: " + string(args[4]))
			return
		}
	}
	if port > 1<<31 || cport > 1<<31 || !c.startHandshake(string(args[2]), int(port), int(cport)) {
		w.Error("ERR Invalid node address specified: " + string(args[2]) + ":" + string(args[3]))
		return
	}
	w.OK()
}

func (c *Cluster) cmdSetSlot(w *resp.Writer, args [][]byte) {
	if c.myself.isReplica() {
		w.Error("ERR Please use SETSLOT only with masters.")
		return
	}
	slot, ok := parseSlot(w, args[2])
	if !ok {
		return
	}
	action := strings.ToLower(string(args[3]))
	target := func(unknown string) *node {
		n := c.lookup(args[4])
		if n == nil {
			w.Error(unknown + string(args[4]))
			return nil
		}
		if n.isReplica() {
			w.Error("ERR Target node is not a master")
			return nil
		}
		return n
	}
	switch {
	case action == "migrating" && len(args) == 5:
		if c.slots[slot] != c.myself {
			w.Error(fmt.Sprintf("ERR I'm not the owner of hash slot %d", slot))
			return
		}
		n := target("ERR I don't know about node ")
		if n == nil {
			return
		}
		c.migratingTo[slot] = n
	case action == "importing" && len(args) == 5:
		if c.slots[slot] == c.myself {
			w.Error(fmt.Sprintf("ERR I'm already the owner of hash slot %d", slot))
			return
		}
		n := target("ERR I don't know about node ")
		if n == nil {
			return
		}
		c.importingFrom[slot] = n
	case action == "stable" && len(args) == 4:
		c.importingFrom[slot] = nil
		c.migratingTo[slot] = nil
	case action == "node" && len(args) == 5:
		n := target("ERR Unknown node ")
		if n == nil {
			return
		}
		keys := c.host.CountKeysInSlot(slot)
		if c.slots[slot] == c.myself && n != c.myself && keys != 0 {
			w.Error(fmt.Sprintf("ERR Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot))
			return
		}
		if keys == 0 && c.migratingTo[slot] != nil {
			c.migratingTo[slot] = nil
		}
		wasMine := c.slots[slot] == c.myself
		c.delSlot(slot)
		c.addSlot(n, slot)
		if wasMine && n != c.myself && c.myself.numSlots == 0 && c.cfg.AllowReplicaMigration {
			c.log.Warn("configuration change detected; reconfiguring myself as a replica", "primary", n.name.String())
			c.setPrimary(n)
			c.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
		}
		if n == c.myself && c.importingFrom[slot] != nil {
			// The import is over: a new epoch makes this node's claim win everywhere.
			if c.bumpEpochWithoutConsensus() {
				c.log.Warn("configEpoch updated after importing slot", "slot", slot)
			}
			c.importingFrom[slot] = nil
			c.broadcastPong(pongAll)
		}
	default:
		w.Error("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
		return
	}
	c.routeDirty = true
	c.todo |= todoSaveConfig | todoUpdateState
	w.OK()
}

func (c *Cluster) cmdFailover(w *resp.Writer, args [][]byte) {
	force, takeover := false, false
	if len(args) == 3 {
		switch strings.ToLower(string(args[2])) {
		case "force":
			force = true
		case "takeover":
			force, takeover = true, true
		default:
			w.Error("ERR syntax error")
			return
		}
	}
	me := c.myself
	switch {
	case me.isPrimary():
		w.Error("ERR You should send CLUSTER FAILOVER to a replica")
		return
	case me.primary == nil:
		w.Error("ERR I'm a replica but my master is unknown to me")
		return
	case !force && (me.primary.failed() || me.primary.link == nil):
		w.Error("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
		return
	}
	c.resetManualFailover()
	c.mfEnd = c.now() + mfTimeout
	switch {
	case takeover:
		// No election: a new epoch without consensus, the slots, and the news.
		c.log.Warn("taking over the primary (user request)")
		c.bumpEpochWithoutConsensus()
		c.failoverReplaceYourPrimary()
	case force:
		// No agreement on the offset with the primary: the election starts at once.
		c.log.Warn("forced failover user request accepted")
		c.mfCanStart = true
	default:
		c.log.Warn("manual failover user request accepted")
		c.sendMFStart(me.primary)
	}
	w.OK()
}

// reset forgets every other node and every slot (clusterReset); a hard reset also takes a new
// ID and zero epochs. It reports whether this node was a replica, whose data must go.
func (c *Cluster) reset(hard bool) bool {
	wasReplica := false
	if c.myself.isReplica() {
		c.setNodeAsPrimary(c.myself)
		c.host.StopReplication()
		wasReplica = true
	}
	c.closeAllSlots()
	c.resetManualFailover()
	for i := range Slots {
		c.delSlot(i)
	}
	for _, n := range append([]*node(nil), c.order...) {
		if n != c.myself {
			c.delNode(n)
		}
	}
	if hard {
		c.currentEpoch = 0
		c.lastVoteEpoch = 0
		c.myself.configEpoch = 0
		c.log.Warn("configEpoch set to 0 via CLUSTER RESET HARD")
		c.renameNode(c.myself, c.randomName())
		c.log.Info("node hard reset", "node", c.myself.name.String())
	}
	c.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
	c.routeDirty = true
	return wasReplica
}

// infoText returns CLUSTER INFO's text.
func (c *Cluster) infoText() string {
	var assigned, ok, pfail, fail int
	for _, n := range c.slots {
		if n == nil {
			continue
		}
		assigned++
		switch {
		case n.failed():
			fail++
		case n.timedOut():
			pfail++
		default:
			ok++
		}
	}
	myEpoch := c.myself.configEpoch
	if c.myself.isReplica() && c.myself.primary != nil {
		myEpoch = c.myself.primary.configEpoch
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\ncluster_slots_pfail:%d\r\ncluster_slots_fail:%d\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n",
		stateName(c.state), assigned, ok, pfail, fail, len(c.nodes), c.size, c.currentEpoch, myEpoch)
	var sent, recv int64
	for t, n := range c.statsSent {
		if n != 0 {
			sent += n
			fmt.Fprintf(&b, "cluster_stats_messages_%s_sent:%d\r\n", MsgType(t), n)
		}
	}
	fmt.Fprintf(&b, "cluster_stats_messages_sent:%d\r\n", sent)
	for t, n := range c.statsReceived {
		if n != 0 {
			recv += n
			fmt.Fprintf(&b, "cluster_stats_messages_%s_received:%d\r\n", MsgType(t), n)
		}
	}
	fmt.Fprintf(&b, "cluster_stats_messages_received:%d\r\n", recv)
	fmt.Fprintf(&b, "total_cluster_links_buffer_limit_exceeded:%d\r\n", c.linksFreed)
	return b.String()
}

// endpoint returns the name redirections and CLUSTER SLOTS give n
// (cluster-preferred-endpoint-type).
func (c *Cluster) endpoint(n *node) string {
	switch c.cfg.PreferredEndpoint {
	case "hostname":
		if n.hostname != "" {
			return n.hostname
		}
		return "?"
	case "unknown-endpoint":
		return ""
	}
	return n.ip
}

// replicaAvailable reports whether a replica is listed in CLUSTER SLOTS: not failing, and
// synced at least once.
func (c *Cluster) replicaAvailable(n *node) bool {
	if n.failed() {
		return false
	}
	off := n.replOffset
	if n == c.myself {
		off = c.host.ReplOffset()
	}
	return off != 0
}

func (c *Cluster) replyNode(w *resp.Writer, n *node) {
	w.Array(4)
	switch c.cfg.PreferredEndpoint {
	case "hostname":
		w.BulkString(c.endpoint(n))
	case "unknown-endpoint":
		w.Null()
	default:
		w.BulkString(n.ip)
	}
	w.Int(int64(n.port))
	w.Bulk(n.name[:])
	extra := 0
	if c.cfg.PreferredEndpoint != "ip" {
		extra++
	}
	if c.cfg.PreferredEndpoint != "hostname" && n.hostname != "" {
		extra++
	}
	w.Map(extra)
	if c.cfg.PreferredEndpoint != "ip" {
		w.BulkString("ip")
		w.BulkString(n.ip)
	}
	if c.cfg.PreferredEndpoint != "hostname" && n.hostname != "" {
		w.BulkString("hostname")
		w.BulkString(n.hostname)
	}
}

// replySlots writes CLUSTER SLOTS: each range of slots with one owner, the owner and its
// available replicas.
func (c *Cluster) replySlots(w *resp.Writer) {
	type rng struct {
		n      *node
		lo, hi int
	}
	var rs []rng
	for i := 0; i < Slots; {
		n := c.slots[i]
		j := i
		for j+1 < Slots && c.slots[j+1] == n {
			j++
		}
		if n != nil {
			rs = append(rs, rng{n, i, j})
		}
		i = j + 1
	}
	w.Array(len(rs))
	for _, r := range rs {
		var avail []*node
		for _, rep := range r.n.replicas {
			if c.replicaAvailable(rep) {
				avail = append(avail, rep)
			}
		}
		w.Array(3 + len(avail))
		w.Int(int64(r.lo))
		w.Int(int64(r.hi))
		c.replyNode(w, r.n)
		for _, rep := range avail {
			c.replyNode(w, rep)
		}
	}
}

// replyShards writes CLUSTER SHARDS: each primary's slot ranges and its nodes.
func (c *Cluster) replyShards(w *resp.Writer) {
	ranges := c.slotRanges()
	var primaries []*node
	for _, n := range c.order {
		if n.isPrimary() {
			primaries = append(primaries, n)
		}
	}
	w.Array(len(primaries))
	for _, p := range primaries {
		w.Map(2)
		w.BulkString("slots")
		w.Array(2 * len(ranges[p]))
		for _, r := range ranges[p] {
			w.Int(int64(r[0]))
			w.Int(int64(r[1]))
		}
		w.BulkString("nodes")
		nodes := append([]*node{p}, p.replicas...)
		w.Array(len(nodes))
		for _, n := range nodes {
			c.replyShardNode(w, n)
		}
	}
}

func (c *Cluster) replyShardNode(w *resp.Writer, n *node) {
	fields := 6
	if n.port != 0 {
		fields++
	}
	if n.hostname != "" {
		fields++
	}
	w.Map(fields)
	w.BulkString("id")
	w.Bulk(n.name[:])
	if n.port != 0 {
		w.BulkString("port")
		w.Int(int64(n.port))
	}
	w.BulkString("ip")
	w.BulkString(n.ip)
	w.BulkString("endpoint")
	w.BulkString(c.endpoint(n))
	if n.hostname != "" {
		w.BulkString("hostname")
		w.BulkString(n.hostname)
	}
	off := n.replOffset
	if n == c.myself {
		off = c.host.ReplOffset()
	}
	role, health := "master", "online"
	if n.isReplica() {
		role = "replica"
	}
	switch {
	case n.failed():
		health = "fail"
	case n.isReplica() && off == 0:
		health = "loading"
	}
	w.BulkString("role")
	w.BulkString(role)
	w.BulkString("replication-offset")
	w.Int(off)
	w.BulkString("health")
	w.BulkString(health)
}

// replyLinks writes CLUSTER LINKS: each connection with a known node.
func (c *Cluster) replyLinks(w *resp.Writer) {
	var ls []*Link
	for _, n := range c.order {
		if n.link != nil {
			ls = append(ls, n.link)
		}
		if n.inLink != nil {
			ls = append(ls, n.inLink)
		}
	}
	w.Array(len(ls))
	for _, l := range ls {
		w.Map(6)
		w.BulkString("direction")
		if l.inbound {
			w.BulkString("from")
		} else {
			w.BulkString("to")
		}
		w.BulkString("node")
		w.Bulk(l.node.name[:])
		w.BulkString("create-time")
		w.Int(l.ctime)
		pending := l.conn.Pending()
		events := "r"
		if pending > 0 {
			events = "rw"
		}
		w.BulkString("events")
		w.BulkString(events)
		w.BulkString("send-buffer-allocated")
		w.Int(int64(pending))
		w.BulkString("send-buffer-used")
		w.Int(int64(pending))
	}
}
