package cluster

// sendRaw queues an encoded message on l (clusterSendMessage); nil l sends nothing.
func (c *Cluster) sendRaw(l *Link, b []byte) {
	if l == nil || l.freed {
		return
	}
	c.outbox = append(c.outbox, outMsg{l, b})
	if t := MsgType(uint16(b[offType])<<8 | uint16(b[offType+1])); t < msgTypes {
		c.statsSent[t]++
	}
}

// broadcast queues b on the link to every node but handshake ones.
func (c *Cluster) broadcast(b []byte) {
	for _, n := range c.order {
		if n.flags&(FlagMyself|FlagHandshake) != 0 {
			continue
		}
		c.sendRaw(n.link, b)
	}
}

// header returns a message of type t with this node's header (clusterBuildMessageHdr): a
// replica sends its primary's slots and config epoch, flagged as a replica.
func (c *Cluster) header(t MsgType) *Message {
	me := c.myself
	p := me
	if me.isReplica() && me.primary != nil {
		p = me.primary
	}
	m := &Message{Type: t, Sender: me.name, MySlots: p.slots}
	if c.cfg.AnnounceIP != "" {
		m.MyIP.set(c.cfg.AnnounceIP)
	}
	port, pport, cport := c.announcedPorts()
	m.Port, m.PPort, m.CPort = uint16(port), uint16(pport), uint16(cport)
	if me.primary != nil {
		m.SlaveOf = me.primary.name
	}
	m.Flags = uint16(me.flags)
	m.State = uint8(c.state)
	m.CurrentEpoch = c.currentEpoch
	m.ConfigEpoch = p.configEpoch
	m.Offset = uint64(c.host.ReplOffset())
	if me.isPrimary() && c.mfEnd != 0 {
		m.MFlags[0] |= MFlagPaused
	}
	return m
}

// gossipOf fills g with what this node knows of n (clusterSetGossipEntry).
func gossipOf(g *Gossip, n *node) {
	g.Node = n.name
	g.PingSent = uint32(n.pingSent / 1000)
	g.PongReceived = uint32(n.pongReceived / 1000)
	g.IP.set(n.ip)
	g.Port, g.CPort, g.Flags, g.PPort = uint16(n.port), uint16(n.cport), uint16(n.flags), uint16(n.pport)
}

// sendPing sends a PING, PONG or MEET on l with gossip about a tenth of the nodes (at least
// three) chosen at random, and every node in PFAIL state, so that failure reports reach a
// majority quickly (clusterSendPing).
func (c *Cluster) sendPing(l *Link, t MsgType) {
	c.pingsSent++
	fresh := len(c.order) - 2
	wanted := max(len(c.order)/10, 3)
	wanted = min(wanted, fresh)
	if !l.inbound && t == MsgPing {
		l.node.pingSent = c.now()
	}
	m := c.header(t)
	m.Gossip = make([]Gossip, 0, max(wanted, 0)+c.pfailNodes)
	for tries := wanted * 3; fresh > 0 && len(m.Gossip) < wanted && tries > 0; tries-- {
		n := c.order[c.env.Intn(len(c.order))]
		if n == c.myself || n.flags&FlagPFail != 0 {
			continue
		}
		if n.flags&(FlagHandshake|FlagNoAddr) != 0 || n.link == nil && n.numSlots == 0 {
			fresh-- // not quite right, but it bounds the work, as Redis does
			continue
		}
		if n.lastInGossip == c.pingsSent {
			continue
		}
		var g Gossip
		gossipOf(&g, n)
		m.Gossip = append(m.Gossip, g)
		n.lastInGossip = c.pingsSent
		fresh--
	}
	if pfail := c.pfailNodes; pfail > 0 {
		for _, n := range c.order {
			if pfail == 0 {
				break
			}
			if n.flags&(FlagHandshake|FlagNoAddr) != 0 || n.flags&FlagPFail == 0 {
				continue
			}
			var g Gossip
			gossipOf(&g, n)
			m.Gossip = append(m.Gossip, g)
			pfail--
		}
	}
	m.SetHostname(c.myself.hostname)
	c.sendRaw(l, m.Append(nil))
}

// Targets of broadcastPong.
const (
	pongAll = iota
	pongLocalReplicas
)

// broadcastPong sends a PONG to every connected node, or to the replicas of this node's
// primary, to spread a change of configuration at once.
func (c *Cluster) broadcastPong(target int) {
	for _, n := range c.order {
		if n.link == nil || n == c.myself || n.inHandshake() {
			continue
		}
		if target == pongLocalReplicas {
			local := n.isReplica() && n.primary != nil && (n.primary == c.myself || n.primary == c.myself.primary)
			if !local {
				continue
			}
		}
		c.sendPing(n.link, MsgPong)
	}
}

// sendFail tells every node that the named node failed.
func (c *Cluster) sendFail(name NodeID) {
	m := c.header(MsgFail)
	m.About = name
	c.broadcast(m.Append(nil))
}

// sendUpdate tells the node at l what slots n serves under which epoch; slots whose owner
// stopped claiming them are left out.
func (c *Cluster) sendUpdate(l *Link, n *node) {
	if l == nil {
		return
	}
	m := c.header(MsgUpdate)
	m.UpdateNode = n.name
	m.UpdateEpoch = n.configEpoch
	m.UpdateSlots = n.slots
	for i := range m.UpdateSlots {
		m.UpdateSlots[i] &^= c.notClaiming[i]
	}
	c.sendRaw(l, m.Append(nil))
}

// sendPublish sends a published message to every node (PUBLISH), or to the nodes of this
// node's shard (SPUBLISH).
func (c *Cluster) sendPublish(channel, message []byte, shard bool) {
	t := MsgPublish
	if shard {
		t = MsgPublishShard
	}
	m := c.header(t)
	m.Channel, m.Payload = channel, message
	b := m.Append(nil)
	if !shard {
		c.broadcast(b)
		return
	}
	p := c.myself
	if p.isReplica() && p.primary != nil {
		p = p.primary
	}
	for _, n := range append([]*node{p}, p.replicas...) {
		if n.flags&(FlagMyself|FlagHandshake) == 0 {
			c.sendRaw(n.link, b)
		}
	}
}

// Publish sends a message published on this node to the others (clusterPropagatePublish).
func (c *Cluster) Publish(channel, message []byte, shard bool) {
	c.lockEvent()
	defer c.unlockEvent()
	c.sendPublish(channel, message, shard)
}

// requestFailoverAuth asks every node for its vote (only primaries answer); a manual failover
// asks them to vote although the primary is up.
func (c *Cluster) requestFailoverAuth() {
	m := c.header(MsgFailoverAuthRequest)
	if c.mfEnd != 0 {
		m.MFlags[0] |= MFlagForceAck
	}
	c.broadcast(m.Append(nil))
}

func (c *Cluster) sendFailoverAuth(n *node) {
	if n.link == nil {
		return
	}
	c.sendRaw(n.link, c.header(MsgFailoverAuthAck).Append(nil))
}

func (c *Cluster) sendMFStart(n *node) {
	if n.link == nil {
		return
	}
	c.sendRaw(n.link, c.header(MsgMFStart).Append(nil))
}
