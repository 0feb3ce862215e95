package cluster

// A node is one node of the cluster as this node knows it (clusterNode).
type node struct {
	ctime        int64 // when this record was made
	name         NodeID
	flags        int
	configEpoch  uint64
	slots        SlotBitmap
	numSlots     int
	replicas     []*node
	primary      *node // nil for a primary, and for a replica whose primary is unknown
	lastInGossip uint64
	pingSent     int64 // unix ms of the ping awaiting its pong, 0 if none
	pongReceived int64
	dataReceived int64
	failTime     int64
	votedTime    int64
	replOffsetAt int64
	orphanedTime int64
	replOffset   int64
	ip           string
	hostname     string
	port, pport  int
	cport        int
	link         *Link // the connection this node opened to it
	inLink       *Link // the connection it opened to this node
	failReports  []failReport
}

// A failReport is a primary's report that a node is failing.
type failReport struct {
	from *node
	time int64
}

// A Link is a bus connection to or from another node (clusterLink).
type Link struct {
	ctime   int64
	conn    Conn
	node    *node // nil for an accepted connection until its node is known
	inbound bool
	freed   bool
	// Rate limit of the log lines about bad messages on this link.
	badLogged int64
	badQuiet  int
}

func (n *node) isPrimary() bool    { return n.flags&FlagMaster != 0 }
func (n *node) isReplica() bool    { return n.flags&FlagSlave != 0 }
func (n *node) inHandshake() bool  { return n.flags&FlagHandshake != 0 }
func (n *node) hasAddr() bool      { return n.flags&FlagNoAddr == 0 }
func (n *node) timedOut() bool     { return n.flags&FlagPFail != 0 }
func (n *node) failed() bool       { return n.flags&FlagFail != 0 }
func (n *node) cantFailover() bool { return n.flags&FlagNoFailover != 0 }
func (n *node) hasSlot(i int) bool { return n.slots.Has(i) }

// createNode returns a new node record, with a random name when name is nil (a node met by
// address, renamed when it answers).
func (c *Cluster) createNode(name *NodeID, flags int) *node {
	n := &node{ctime: c.now(), flags: flags}
	if name != nil {
		n.name = *name
	} else {
		n.name = c.randomName()
	}
	return n
}

func (c *Cluster) addNode(n *node) {
	c.nodes[n.name] = n
	c.order = append(c.order, n)
}

// lookup returns the node named name, or nil (clusterLookupNode).
func (c *Cluster) lookup(name []byte) *node {
	if !validNodeID(name) {
		return nil
	}
	return c.nodes[NodeID(name)]
}

// addFailureReport records that sender reports failing as failing; it reports whether the
// report is new (rather than a refreshed one).
func (c *Cluster) addFailureReport(failing, sender *node) bool {
	now := c.now()
	for i := range failing.failReports {
		if failing.failReports[i].from == sender {
			failing.failReports[i].time = now
			return false
		}
	}
	failing.failReports = append(failing.failReports, failReport{sender, now})
	return true
}

// cleanupFailureReports drops reports older than twice the node timeout.
func (c *Cluster) cleanupFailureReports(n *node) {
	maxAge := c.cfg.NodeTimeout * failReportValidityMult
	now := c.now()
	kept := n.failReports[:0]
	for _, r := range n.failReports {
		if now-r.time <= maxAge {
			kept = append(kept, r)
		}
	}
	clear(n.failReports[len(kept):])
	n.failReports = kept
}

// delFailureReport drops sender's report about n, reporting whether there was one.
func (c *Cluster) delFailureReport(n, sender *node) bool {
	for i, r := range n.failReports {
		if r.from == sender {
			n.failReports = append(n.failReports[:i], n.failReports[i+1:]...)
			c.cleanupFailureReports(n)
			return true
		}
	}
	return false
}

// failureReports returns the number of valid reports about n.
func (c *Cluster) failureReports(n *node) int {
	c.cleanupFailureReports(n)
	return len(n.failReports)
}

func (c *Cluster) removeReplica(p, r *node) {
	for i, x := range p.replicas {
		if x == r {
			p.replicas = append(p.replicas[:i], p.replicas[i+1:]...)
			if len(p.replicas) == 0 {
				p.flags &^= FlagMigrateTo
			}
			return
		}
	}
}

func (c *Cluster) addReplica(p, r *node) {
	for _, x := range p.replicas {
		if x == r {
			return
		}
	}
	p.replicas = append(p.replicas, r)
	p.flags |= FlagMigrateTo
}

func countNonFailingReplicas(n *node) int {
	ok := 0
	for _, r := range n.replicas {
		if !r.failed() {
			ok++
		}
	}
	return ok
}

// delNode forgets n: its slots become unassigned, its failure reports about others are
// dropped, and its links are closed (clusterDelNode).
func (c *Cluster) delNode(n *node) {
	for i := range Slots {
		if c.importingFrom[i] == n {
			c.importingFrom[i] = nil
		}
		if c.migratingTo[i] == n {
			c.migratingTo[i] = nil
		}
		if c.slots[i] == n {
			c.delSlot(i)
		}
	}
	for _, o := range c.order {
		if o != n {
			c.delFailureReport(o, n)
		}
	}
	for _, r := range n.replicas {
		r.primary = nil
	}
	if n.isReplica() && n.primary != nil {
		c.removeReplica(n.primary, n)
	}
	delete(c.nodes, n.name)
	for i, o := range c.order {
		if o == n {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	if n.link != nil {
		c.freeLink(n.link)
	}
	if n.inLink != nil {
		c.freeLink(n.inLink)
	}
	if c.mfReplica == n {
		c.mfReplica = nil
	}
	c.routeDirty = true
}

// renameNode gives a node met by address the name it answered with.
func (c *Cluster) renameNode(n *node, name NodeID) {
	delete(c.nodes, n.name)
	n.name = name
	c.nodes[name] = n
}

// maxEpoch returns the greatest config epoch known, or the current epoch if greater.
func (c *Cluster) maxEpoch() uint64 {
	m := c.currentEpoch
	for _, n := range c.order {
		m = max(m, n.configEpoch)
	}
	return m
}

// bumpEpochWithoutConsensus gives this node a new config epoch, the greatest, without asking
// the others, unless it has the greatest already (clusterBumpConfigEpochWithoutConsensus). Used
// after importing a slot and by CLUSTER FAILOVER TAKEOVER; a collision with another node's
// epoch is resolved by handleEpochCollision.
func (c *Cluster) bumpEpochWithoutConsensus() bool {
	if c.myself.configEpoch != 0 && c.myself.configEpoch == c.maxEpoch() {
		return false
	}
	c.currentEpoch++
	c.myself.configEpoch = c.currentEpoch
	c.todo |= todoSaveConfig | todoFsyncConfig
	c.log.Warn("new configEpoch set", "epoch", c.myself.configEpoch)
	return true
}

// handleEpochCollision resolves two primaries with one config epoch: the one with the smaller
// ID takes a new epoch, so that eventually every primary has its own.
func (c *Cluster) handleEpochCollision(sender *node) {
	if sender.configEpoch != c.myself.configEpoch || !sender.isPrimary() || !c.myself.isPrimary() {
		return
	}
	if string(sender.name[:]) <= string(c.myself.name[:]) {
		return
	}
	c.currentEpoch++
	c.myself.configEpoch = c.currentEpoch
	c.saveConfigOrFail()
	c.log.Debug("configEpoch collision; configEpoch set", "with", sender.name.String(), "epoch", c.myself.configEpoch)
}

// The blacklist keeps nodes removed by CLUSTER FORGET from being added back by gossip for a
// minute.
func (c *Cluster) blacklistCleanup() {
	now := c.now() / 1000
	for id, exp := range c.blacklist {
		if exp < now {
			delete(c.blacklist, id)
		}
	}
}

func (c *Cluster) blacklistAdd(n *node) {
	c.blacklistCleanup()
	c.blacklist[n.name] = c.now()/1000 + blacklistTTL
}

func (c *Cluster) blacklisted(id NodeID) bool {
	c.blacklistCleanup()
	_, ok := c.blacklist[id]
	return ok
}

// markFailingIfNeeded turns n from PFAIL to FAIL when a majority of the primaries (this one
// included, if it is one) reported it failing within the reports' validity, and tells every
// node.
func (c *Cluster) markFailingIfNeeded(n *node) {
	quorum := c.size/2 + 1
	if !n.timedOut() || n.failed() {
		return
	}
	failures := c.failureReports(n)
	if c.myself.isPrimary() {
		failures++
	}
	if failures < quorum {
		return
	}
	c.log.Info("marking node as failing (quorum reached)", "node", n.name.String())
	n.flags = n.flags&^FlagPFail | FlagFail
	n.failTime = c.now()
	c.sendFail(n.name)
	c.todo |= todoUpdateState | todoSaveConfig
}

// clearFailureIfNeeded clears the FAIL flag of a node that answers again: at once for a
// replica or a primary without slots, after a while for a primary nobody took the slots of.
func (c *Cluster) clearFailureIfNeeded(n *node) {
	now := c.now()
	if n.isReplica() || n.numSlots == 0 {
		what := "primary without slots"
		if n.isReplica() {
			what = "replica"
		}
		c.log.Info("clear FAIL state: reachable again", "node", n.name.String(), "role", what)
		n.flags &^= FlagFail
		c.todo |= todoUpdateState | todoSaveConfig
	}
	if n.isPrimary() && n.numSlots > 0 && now-n.failTime > c.cfg.NodeTimeout*failUndoTimeMult {
		c.log.Info("clear FAIL state: reachable again and nobody is serving its slots after some time", "node", n.name.String())
		n.flags &^= FlagFail
		c.todo |= todoUpdateState | todoSaveConfig
	}
}
