package cluster

// cron is the periodic work (clusterCron), ten times a second: reconnect links, ping, detect
// failures, follow the primary, and run failovers and replica migration.
func (c *Cluster) cron() {
	c.iteration++
	now := c.now()
	c.myself.hostname = c.cfg.AnnounceHostname
	handshakeTimeout := max(c.cfg.NodeTimeout, 1000)
	c.pfailNodes = 0
	for _, n := range append([]*node(nil), c.order...) {
		c.freeLinkOverLimit(n.link)
		c.freeLinkOverLimit(n.inLink)
		if n.flags&(FlagMyself|FlagNoAddr) != 0 {
			continue
		}
		if n.flags&FlagPFail != 0 {
			c.pfailNodes++
		}
		if n.inHandshake() && now-n.ctime > handshakeTimeout {
			c.delNode(n)
			continue
		}
		if n.link == nil {
			l := &Link{ctime: now, node: n}
			n.link = l
			l.conn = c.env.Dial(l, n.ip, n.cport)
		}
	}

	// Once a second, ping the node with the oldest pong of five picked at random.
	if c.iteration%10 == 0 && len(c.order) > 0 {
		var minNode *node
		var minPong int64
		for range 5 {
			n := c.order[c.env.Intn(len(c.order))]
			if n.link == nil || n.pingSent != 0 || n.flags&(FlagMyself|FlagHandshake) != 0 {
				continue
			}
			if minNode == nil || minPong > n.pongReceived {
				minNode, minPong = n, n.pongReceived
			}
		}
		if minNode != nil {
			c.sendPing(minNode.link, MsgPing)
		}
	}

	orphaned, maxReplicas, myReplicas := 0, 0, 0
	updateState := false
	timeout := c.cfg.NodeTimeout
	for _, n := range c.order {
		now = c.now()
		if n.flags&(FlagMyself|FlagNoAddr|FlagHandshake) != 0 {
			continue
		}
		if c.myself.isReplica() && n.isPrimary() && !n.failed() {
			ok := countNonFailingReplicas(n)
			if ok == 0 && n.numSlots > 0 && n.flags&FlagMigrateTo != 0 {
				orphaned++
			}
			maxReplicas = max(maxReplicas, ok)
			if c.myself.primary == n {
				myReplicas = ok
			}
		}
		pingDelay := now - n.pingSent
		dataDelay := now - n.dataReceived
		// Nothing at all from a node for half the timeout while a ping waits: the
		// connection may be stuck though the node lives; reconnect.
		if n.link != nil && now-n.link.ctime > timeout && n.pingSent != 0 &&
			pingDelay > timeout/2 && dataDelay > timeout/2 {
			c.freeLink(n.link)
		}
		if n.link != nil && n.pingSent == 0 && now-n.pongReceived > timeout/2 {
			c.sendPing(n.link, MsgPing)
			continue
		}
		if c.mfEnd != 0 && c.myself.isPrimary() && c.mfReplica == n && n.link != nil {
			c.sendPing(n.link, MsgPing) // keep the replica of a manual failover informed
			continue
		}
		if n.pingSent == 0 {
			continue
		}
		delay := min(pingDelay, dataDelay) // any data counts as a sign of life
		if delay > timeout && n.flags&(FlagPFail|FlagFail) == 0 {
			c.log.Debug("node possibly failing", "node", n.name.String())
			n.flags |= FlagPFail
			updateState = true
			c.routeDirty = true
		}
	}

	me := c.myself
	if me.isReplica() && !c.host.Replicating() && me.primary != nil && me.primary.hasAddr() {
		c.host.ReplicaOf(me.primary.ip, me.primary.port)
	}
	c.manualFailoverCheckTimeout()
	if me.isReplica() {
		c.handleManualFailover()
		c.handleReplicaFailover()
		if orphaned > 0 && maxReplicas >= 2 && myReplicas == maxReplicas && c.cfg.AllowReplicaMigration {
			c.handleReplicaMigration(maxReplicas)
		}
	}
	if updateState || c.state == stateFail {
		c.updateState()
	}
}

// freeLinkOverLimit closes a link whose unsent messages pass cluster-link-sendbuf-limit.
func (c *Cluster) freeLinkOverLimit(l *Link) {
	if l == nil || c.cfg.LinkSendBufLimit == 0 {
		return
	}
	if p := int64(l.conn.Pending()); p > c.cfg.LinkSendBufLimit {
		who := ""
		if l.node != nil {
			who = l.node.name.String()
		}
		c.log.Warn("freeing a cluster link over cluster-link-sendbuf-limit", "node", who, "inbound", l.inbound, "bytes", p)
		c.freeLink(l)
		c.linksFreed++
	}
}

// beforeSleep does what the event asked to do before it ends (clusterBeforeSleep).
func (c *Cluster) beforeSleep() {
	todo := c.todo
	c.todo = 0
	if todo&todoHandleManualFailover != 0 {
		if c.myself.isReplica() {
			c.handleManualFailover()
			c.handleReplicaFailover()
		}
	} else if todo&todoHandleFailover != 0 {
		c.handleReplicaFailover()
	}
	if todo&todoUpdateState != 0 {
		c.updateState()
	}
	if todo&todoSaveConfig != 0 {
		c.saveConfigOrFail()
	}
}
