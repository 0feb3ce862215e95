package cluster

// slotUnclaimed reports whether slot i has no owner, or an owner that stopped claiming it.
func (c *Cluster) slotUnclaimed(i int) bool {
	return c.slots[i] == nil || c.notClaiming.Has(i)
}

// primariesHaveReplicas reports whether any primary has a replica.
func (c *Cluster) primariesHaveReplicas() bool {
	for _, n := range c.order {
		if n.isPrimary() && len(n.replicas) > 0 {
			return true
		}
	}
	return false
}

// setSlotBit sets slot i in n's map. A primary that gets its first slot becomes a target of
// replica migration when any primary has replicas.
func (c *Cluster) setSlotBit(n *node, i int) {
	if n.slots.Has(i) {
		return
	}
	n.slots.Set(i)
	n.numSlots++
	if n.numSlots == 1 && c.primariesHaveReplicas() {
		n.flags |= FlagMigrateTo
	}
}

func (c *Cluster) clearSlotBit(n *node, i int) {
	if n.slots.Has(i) {
		n.slots.Clear(i)
		n.numSlots--
	}
}

// addSlot gives slot i to n, if it has no owner.
func (c *Cluster) addSlot(n *node, i int) bool {
	if c.slots[i] != nil {
		return false
	}
	c.setSlotBit(n, i)
	c.slots[i] = n
	c.routeDirty = true
	return true
}

// delSlot leaves slot i without owner, reporting whether it had one.
func (c *Cluster) delSlot(i int) bool {
	n := c.slots[i]
	if n == nil {
		return false
	}
	c.clearSlotBit(n, i)
	c.slots[i] = nil
	c.routeDirty = true
	return true
}

// delNodeSlots removes every slot n owns and returns how many.
func (c *Cluster) delNodeSlots(n *node) int {
	k := 0
	for i := range Slots {
		if n.hasSlot(i) {
			c.delSlot(i)
			k++
		}
	}
	return k
}

// closeAllSlots ends every migration and import.
func (c *Cluster) closeAllSlots() {
	c.migratingTo = [Slots]*node{}
	c.importingFrom = [Slots]*node{}
	c.routeDirty = true
}

// updateState decides whether the cluster is ok as this node sees it (clusterUpdateState):
// every slot served by a working node (with cluster-require-full-coverage), and a majority of
// the primaries with slots reachable. A primary waits a little after start, and after leaving
// a minority partition, before it says ok again, so that it can learn of a failover first.
func (c *Cluster) updateState() {
	c.todo &^= todoUpdateState
	now := c.now()
	if c.firstStateCall == 0 {
		c.firstStateCall = now
	}
	if c.myself.isPrimary() && c.state == stateFail && now-c.firstStateCall < writableDelay {
		return
	}
	next := stateOK
	if c.cfg.RequireFullCoverage {
		for i := range Slots {
			if c.slots[i] == nil || c.slots[i].failed() {
				next = stateFail
				break
			}
		}
	}
	reachable := 0
	c.size = 0
	for _, n := range c.order {
		if n.isPrimary() && n.numSlots > 0 {
			c.size++
			if n.flags&(FlagFail|FlagPFail) == 0 {
				reachable++
			}
		}
	}
	if reachable < c.size/2+1 {
		next = stateFail
		c.amongMinority = now
	}
	if next != c.state {
		rejoin := min(max(c.cfg.NodeTimeout, minRejoinDelay), maxRejoinDelay)
		if next == stateOK && c.myself.isPrimary() && now-c.amongMinority < rejoin {
			return
		}
		c.log.Warn("cluster state changed: " + stateName(next))
		c.state = next
		c.routeDirty = true
	}
}

func stateName(s int) string {
	if s == stateOK {
		return "ok"
	}
	return "fail"
}

// setPrimary makes this node a replica of n (clusterSetMaster); it must serve no slots.
func (c *Cluster) setPrimary(n *node) {
	me := c.myself
	if me.isPrimary() {
		me.flags = me.flags&^(FlagMaster|FlagMigrateTo) | FlagSlave
		c.closeAllSlots()
	} else if me.primary != nil {
		c.removeReplica(me.primary, me)
	}
	me.primary = n
	c.addReplica(n, me)
	c.host.ReplicaOf(n.ip, n.port)
	c.resetManualFailover()
	c.routeDirty = true
}

// VerifyData reconciles the slots with the keys loaded at start (verifyClusterConfigWithData):
// keys of a slot without owner make this node its owner; keys of a slot another node owns make
// this node importing it, for redis-cli --cluster fix to settle. A replica checks nothing: its
// data is its primary's.
func (c *Cluster) VerifyData() {
	c.lockEvent()
	defer c.unlockEvent()
	if c.myself.isReplica() {
		return
	}
	changed := false
	for i := range Slots {
		if c.host.CountKeysInSlot(i) == 0 || c.slots[i] == c.myself || c.importingFrom[i] != nil {
			continue
		}
		changed = true
		if c.slots[i] == nil {
			c.log.Warn("I have keys for an unassigned slot; taking responsibility for it", "slot", i)
			c.addSlot(c.myself, i)
		} else {
			c.log.Warn("I have keys for a slot assigned to another node; setting it to importing state", "slot", i)
			c.importingFrom[i] = c.slots[i]
			c.routeDirty = true
		}
	}
	if changed {
		c.saveConfigOrFail()
	}
}
