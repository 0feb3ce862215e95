package cluster

// voteIfNeeded gives node a vote to replace its failing primary, if this node may vote
// (clusterSendFailoverAuthIfNeeded): it is a primary serving slots, has not voted in this
// epoch nor for this primary within twice the node timeout, the primary is failing (or the
// request is a manual failover's), and node's config epoch is not older than that of any
// slot it claims.
func (c *Cluster) voteIfNeeded(n *node, req *Message) {
	p := n.primary
	forceAck := req.MFlags[0]&MFlagForceAck != 0
	if c.myself.isReplica() || c.myself.numSlots == 0 {
		return
	}
	if req.CurrentEpoch < c.currentEpoch {
		c.log.Warn("failover auth denied: request epoch older than the current epoch", "replica", n.name.String(), "reqEpoch", req.CurrentEpoch, "curEpoch", c.currentEpoch)
		return
	}
	if c.lastVoteEpoch == c.currentEpoch {
		c.log.Warn("failover auth denied: already voted for this epoch", "replica", n.name.String(), "epoch", c.currentEpoch)
		return
	}
	if n.isPrimary() || p == nil || !p.failed() && !forceAck {
		switch {
		case n.isPrimary():
			c.log.Warn("failover auth denied: it is a primary", "node", n.name.String())
		case p == nil:
			c.log.Warn("failover auth denied: its primary is unknown to me", "replica", n.name.String())
		default:
			c.log.Warn("failover auth denied: its primary is up", "replica", n.name.String())
		}
		return
	}
	now := c.now()
	if now-p.votedTime < c.cfg.NodeTimeout*2 {
		c.log.Warn("failover auth denied: voted for a replica of this primary recently", "replica", n.name.String(), "waitMs", c.cfg.NodeTimeout*2-(now-p.votedTime))
		return
	}
	for j := range Slots {
		if !req.MySlots.Has(j) || c.slotUnclaimed(j) || c.slots[j].configEpoch <= req.ConfigEpoch {
			continue
		}
		c.log.Warn("failover auth denied: a slot it claims has a newer epoch", "replica", n.name.String(), "slot", j, "slotEpoch", c.slots[j].configEpoch, "reqEpoch", req.ConfigEpoch)
		return
	}
	c.lastVoteEpoch = c.currentEpoch
	p.votedTime = now
	// The vote is saved (and synced) before it leaves: unlockEvent saves, then sends.
	c.todo |= todoSaveConfig | todoFsyncConfig
	c.sendFailoverAuth(n)
	c.log.Warn("failover auth granted", "replica", n.name.String(), "epoch", c.currentEpoch)
}

// replicaRank returns how many replicas of this node's primary have a greater replication
// offset: the best placed replica has rank 0 and starts its election first.
func (c *Cluster) replicaRank() int {
	p := c.myself.primary
	if p == nil {
		return 0
	}
	mine := c.host.ReplOffset()
	rank := 0
	for _, r := range p.replicas {
		if r != c.myself && !r.cantFailover() && r.replOffset > mine {
			rank++
		}
	}
	return rank
}

// logCantFailover logs why this replica cannot fail over its failing primary, once per reason
// and at most every five minutes, and not in the first node timeout + 5 s of the failure.
func (c *Cluster) logCantFailover(reason int) {
	now := c.now()
	if reason == c.cantFailoverReason && now-c.cantFailoverLogged < cantFailoverRelog {
		return
	}
	c.cantFailoverReason = reason
	if p := c.myself.primary; p != nil && p.failed() && now-p.failTime < c.cfg.NodeTimeout+5000 {
		return
	}
	var msg string
	switch reason {
	case cantFailoverDataAge:
		msg = "Disconnected from master for longer than allowed. Please check the 'cluster-replica-validity-factor' configuration option."
	case cantFailoverWaitingDelay:
		msg = "Waiting the delay before I can start a new failover."
	case cantFailoverExpired:
		msg = "Failover attempt expired."
	case cantFailoverWaitingVotes:
		msg = "Waiting for votes, but majority still not reached."
	default:
		msg = "Unknown reason code."
	}
	c.cantFailoverLogged = now
	c.log.Warn("currently unable to failover: " + msg)
}

// failoverReplaceYourPrimary ends a won election (or a takeover): this node becomes a primary,
// takes its primary's slots, saves and tells every node.
func (c *Cluster) failoverReplaceYourPrimary() {
	old := c.myself.primary
	if c.myself.isPrimary() || old == nil {
		return
	}
	c.setNodeAsPrimary(c.myself)
	c.host.StopReplication()
	for j := range Slots {
		if old.hasSlot(j) {
			c.delSlot(j)
			c.addSlot(c.myself, j)
		}
	}
	c.updateState()
	c.saveConfigOrFail()
	c.broadcastPong(pongAll)
	c.resetManualFailover()
}

// handleReplicaFailover runs a replica's part of an automatic or manual failover
// (clusterHandleSlaveFailover): when its primary is failing, it waits a delay that grows with
// its rank, asks for votes in a new epoch, and takes over with a majority of the primaries.
func (c *Cluster) handleReplicaFailover() {
	now := c.now()
	authAge := now - c.authTime
	quorum := c.size/2 + 1
	manual := c.mfEnd != 0 && c.mfCanStart
	c.todo &^= todoHandleFailover
	authTimeout := max(c.cfg.NodeTimeout*2, 2000)
	authRetry := authTimeout * 2
	me := c.myself
	if me.isPrimary() || me.primary == nil || !me.primary.failed() && !manual ||
		c.cfg.ReplicaNoFailover && !manual || me.primary.numSlots == 0 {
		c.cantFailoverReason = cantFailoverNone
		return
	}
	// How long the data has been out of date, beyond the node timeout that the failure
	// detection took anyway.
	_, since := c.host.ReplLink() // the last traffic on the link if up, when it went down if not
	dataAge := (now - since) / 1000 * 1000
	if dataAge > c.cfg.NodeTimeout {
		dataAge -= c.cfg.NodeTimeout
	}
	if f := int64(c.cfg.ReplicaValidityFactor); f != 0 && dataAge > replPingPeriod*1000+c.cfg.NodeTimeout*f {
		if !manual {
			c.logCantFailover(cantFailoverDataAge)
			return
		}
	}
	if authAge > authRetry {
		c.authTime = now + 500 + int64(c.env.Intn(500)) // let the FAIL spread first
		c.authCount = 0
		c.authSent = false
		c.authRank = c.replicaRank()
		c.authTime += int64(c.authRank) * 1000
		if c.mfEnd != 0 {
			c.authTime = now
			c.authRank = 0
			c.todo |= todoHandleFailover
		}
		c.log.Warn("start of election delayed", "delayMs", c.authTime-now, "rank", c.authRank, "offset", c.host.ReplOffset())
		// Tell the other replicas this one's offset, which may change their ranks.
		c.broadcastPong(pongLocalReplicas)
		return
	}
	if !c.authSent && c.mfEnd == 0 {
		if r := c.replicaRank(); r > c.authRank {
			added := int64(r-c.authRank) * 1000
			c.authTime += added
			c.authRank = r
			c.log.Warn("replica rank updated; election delayed", "rank", r, "addedMs", added)
		}
	}
	if now < c.authTime {
		c.logCantFailover(cantFailoverWaitingDelay)
		return
	}
	if authAge > authTimeout {
		c.logCantFailover(cantFailoverExpired)
		return
	}
	if !c.authSent {
		c.currentEpoch++
		c.authEpoch = c.currentEpoch
		c.log.Warn("starting a failover election", "epoch", c.currentEpoch)
		c.requestFailoverAuth()
		c.authSent = true
		c.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
		return
	}
	if c.authCount >= quorum {
		c.log.Warn("failover election won: I'm the new primary")
		if me.configEpoch < c.authEpoch {
			me.configEpoch = c.authEpoch
			c.log.Warn("configEpoch set after a successful failover", "epoch", me.configEpoch)
		}
		c.failoverReplaceYourPrimary()
	} else {
		c.logCantFailover(cantFailoverWaitingVotes)
	}
}

// handleReplicaMigration moves this replica to an orphaned primary (one that had replicas and
// has none working) when its own primary keeps more than cluster-migration-barrier working
// replicas and this is the replica with the smallest ID among the primaries with the most
// replicas (clusterHandleSlaveMigration).
func (c *Cluster) handleReplicaMigration(maxReplicas int) {
	if c.state != stateOK {
		return
	}
	mine := c.myself.primary
	if mine == nil {
		return
	}
	ok := 0
	for _, r := range mine.replicas {
		if !r.failed() && !r.timedOut() {
			ok++
		}
	}
	if ok <= c.cfg.MigrationBarrier {
		return
	}
	candidate := c.myself
	var target *node
	now := c.now()
	for _, n := range c.order {
		okReplicas, orphaned := 0, true
		if n.isReplica() || n.failed() || n.flags&FlagMigrateTo == 0 {
			orphaned = false
		}
		if n.isPrimary() {
			okReplicas = countNonFailingReplicas(n)
		}
		if okReplicas > 0 {
			orphaned = false
		}
		if orphaned {
			if target == nil && n.numSlots > 0 {
				target = n
			}
			if n.orphanedTime == 0 {
				n.orphanedTime = now
			}
		} else {
			n.orphanedTime = 0
		}
		if okReplicas == maxReplicas {
			for _, r := range n.replicas {
				if string(r.name[:]) < string(candidate.name[:]) {
					candidate = r
				}
			}
		}
	}
	if target != nil && candidate == c.myself && now-target.orphanedTime > replicaMigrationDelay {
		c.log.Warn("migrating to an orphaned primary", "primary", target.name.String())
		c.setPrimary(target)
	}
}

// resetManualFailover ends a manual failover, lifting a primary's pause of its clients.
func (c *Cluster) resetManualFailover() {
	if c.mfReplica != nil {
		c.host.PauseWrites(0)
	}
	c.mfEnd = 0
	c.mfCanStart = false
	c.mfReplica = nil
	c.mfPrimaryOffset = -1
}

func (c *Cluster) manualFailoverCheckTimeout() {
	if c.mfEnd != 0 && c.mfEnd < c.now() {
		c.log.Warn("manual failover timed out")
		c.resetManualFailover()
	}
}

// handleManualFailover lets a replica's manual failover start once it has processed the
// stream up to the offset its paused primary announced.
func (c *Cluster) handleManualFailover() {
	if c.mfEnd == 0 || c.mfCanStart || c.mfPrimaryOffset == -1 {
		return
	}
	if c.mfPrimaryOffset == c.host.ReplOffset() {
		c.mfCanStart = true
		c.log.Warn("all of the primary's replication stream processed; manual failover can start")
		c.todo |= todoHandleFailover
		return
	}
	c.todo |= todoHandleManualFailover
}
