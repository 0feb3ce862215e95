package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
)

// Accept registers a connection another node opened to this one, and returns its link, to be
// passed with every message read from it.
func (c *Cluster) Accept(conn Conn) *Link {
	c.lockEvent()
	defer c.unlockEvent()
	return &Link{ctime: c.now(), conn: conn, inbound: true}
}

// Connected reports that a connection started by Env.Dial is established: a PING (or MEET)
// goes out at once, so that failure detection has something to wait for.
func (c *Cluster) Connected(l *Link) {
	c.lockEvent()
	defer c.unlockEvent()
	if l.freed {
		return
	}
	n := l.node
	old := n.pingSent
	typ := MsgPing
	if n.flags&FlagMeet != 0 {
		typ = MsgMeet
	}
	c.sendPing(l, typ)
	if old != 0 {
		n.pingSent = old // a ping outstanding before the link broke still counts from then
	}
	n.flags &^= FlagMeet
}

// LinkLost reports that a link's connection failed or closed.
func (c *Cluster) LinkLost(l *Link, err error) {
	c.lockEvent()
	defer c.unlockEvent()
	if l.freed {
		return
	}
	if l.node != nil {
		c.log.Debug("cluster bus link lost", "node", l.node.name.String(), "inbound", l.inbound, "err", err)
	}
	c.freeLink(l)
}

// Receive processes one whole message read from l (ReadFrame). A message that is malformed, of
// a type Redis 7.0 does not know or of another protocol version is logged and ignored, as Redis
// ignores it; Receive returns the reason, for the caller to count.
func (c *Cluster) Receive(l *Link, frame []byte) error {
	m, err := Decode(frame)
	c.lockEvent()
	defer c.unlockEvent()
	if l.freed {
		return nil
	}
	if err != nil {
		if len(frame) >= offType+2 {
			if t := MsgType(uint16(frame[offType])<<8 | uint16(frame[offType+1])); t < msgTypes {
				c.statsReceived[t]++
			}
		}
		what := "received a malformed cluster bus message; ignored"
		if errors.Is(err, ErrUnknownType) {
			what = "received a cluster bus message of an unknown type; ignored"
		}
		c.logBad(l, what, "err", err)
		return err
	}
	c.process(l, m)
	return nil
}

// logBad logs a bad message from l, at most once a second per link, saying how many were not
// logged since, so that a peer sending garbage cannot flood the log.
func (c *Cluster) logBad(l *Link, msg string, args ...any) {
	now := c.now()
	if now-l.badLogged < 1000 {
		l.badQuiet++
		return
	}
	from := l.conn.RemoteIP()
	if l.node != nil {
		from = l.node.name.String()
	}
	args = append(args, "from", from)
	if l.badQuiet > 0 {
		args = append(args, "notLoggedSince", l.badQuiet)
	}
	l.badLogged, l.badQuiet = now, 0
	c.log.Warn(msg, args...)
}

// freeLink closes a link and detaches it from its node (freeClusterLink).
func (c *Cluster) freeLink(l *Link) {
	if l.freed {
		return
	}
	l.freed = true
	l.conn.Close()
	if n := l.node; n != nil {
		if n.link == l {
			n.link = nil
		} else if n.inLink == l {
			n.inLink = nil
		}
	}
}

// setInboundLink attaches an accepted link to the node it turned out to come from; a node that
// reconnected before its old connection was seen closing keeps the new one.
func (c *Cluster) setInboundLink(n *node, l *Link) {
	if n.inLink != nil && n.inLink != l {
		c.freeLink(n.inLink)
	}
	n.inLink = l
	l.node = n
}

// senderOf returns the known node that sent m on l, nil if unknown (getNodeFromLinkAndMsg).
func (c *Cluster) senderOf(l *Link, m *Message) *node {
	if l.node != nil && !l.node.inHandshake() {
		return l.node
	}
	s := c.lookup(m.Sender[:])
	if s != nil && l.node == nil {
		c.setInboundLink(s, l)
	}
	return s
}

// process acts on one valid message (clusterProcessPacket).
func (c *Cluster) process(l *Link, m *Message) {
	now := c.now()
	c.statsReceived[m.Type]++
	// Names and addresses end up in CLUSTER NODES and the nodes file, one line per node with
	// blank-separated fields: a message whose sender's name or announced address could not be
	// written there is refused (Redis takes them as they come).
	if !validNodeID(m.Sender[:]) {
		c.logBad(l, "ignoring a cluster bus message whose sender is not a node ID", "type", m.Type.String(), "sender", fmt.Sprintf("%q", m.Sender[:]))
		return
	}
	if m.MyIP[0] != 0 && net.ParseIP(m.MyIP.String()) == nil {
		c.logBad(l, "ignoring a cluster bus message announcing an address that is not an IP address", "type", m.Type.String(), "ip", fmt.Sprintf("%q", m.MyIP.String()))
		return
	}
	sender := c.senderOf(l, m)
	if sender != nil {
		sender.dataReceived = now
	}
	var senderConfigEpoch uint64
	if sender != nil && !sender.inHandshake() {
		if m.CurrentEpoch > c.currentEpoch {
			c.currentEpoch = m.CurrentEpoch
		}
		senderConfigEpoch = m.ConfigEpoch
		if senderConfigEpoch > sender.configEpoch {
			sender.configEpoch = senderConfigEpoch
			c.todo |= todoSaveConfig | todoFsyncConfig
		}
		sender.replOffset = int64(m.Offset)
		sender.replOffsetAt = now
		if c.mfEnd != 0 && c.myself.isReplica() && c.myself.primary == sender &&
			m.MFlags[0]&MFlagPaused != 0 && c.mfPrimaryOffset == -1 {
			c.mfPrimaryOffset = sender.replOffset
			c.todo |= todoHandleManualFailover
			c.log.Warn("received the replication offset of the paused primary for a manual failover", "offset", c.mfPrimaryOffset)
		}
	}

	handshake := l.node != nil && l.node.inHandshake()
	if sender == nil && !handshake && m.Type != MsgMeet && (m.CurrentEpoch > c.currentEpoch || m.Type != MsgPing && m.Type != MsgPong) {
		// A node this one does not know (never met, or forgotten) cannot change its state:
		// only a PING is answered, and only a MEET adds a node.
		c.logBad(l, "ignoring the state in a cluster bus message from a node not in this cluster", "type", m.Type.String(), "sender", m.Sender.String(), "currentEpoch", m.CurrentEpoch, "configEpoch", m.ConfigEpoch)
	}
	ping := m.Type == MsgPing || m.Type == MsgPong || m.Type == MsgMeet
	if m.Type == MsgPing || m.Type == MsgMeet {
		// A MEET comes to the address the others know this node by: learn it from the
		// connection, unless one is announced. Without an address yet, a PING will do.
		if (m.Type == MsgMeet || c.myself.ip == "") && c.cfg.AnnounceIP == "" {
			if ip := l.conn.LocalIP(); ip != "" && ip != c.myself.ip {
				c.myself.ip = ip
				c.log.Warn("IP address for this node updated", "ip", ip)
				c.todo |= todoSaveConfig
				c.routeDirty = true
			}
		}
		if sender == nil && m.Type == MsgMeet {
			// The node is added in handshake state: its name, role and slots come with
			// its answers to this node's pings.
			if ip, ok := c.peerIP(l, m); ok {
				n := c.createNode(nil, FlagHandshake)
				n.ip, n.port, n.pport, n.cport = ip, int(m.Port), int(m.PPort), int(m.CPort)
				c.addNode(n)
				c.todo |= todoSaveConfig
			}
			// A MEET from an unknown node is trusted for its gossip, by its type.
			c.processGossip(m, l, nil)
		}
		c.sendPing(l, MsgPong)
	}

	switch {
	case ping:
		if !l.inbound {
			if l.node.inHandshake() {
				if sender != nil {
					// A node we know already, met again at another address.
					c.log.Debug("handshake with a known node; updating its address if needed", "node", sender.name.String())
					if c.updateAddressIfNeeded(sender, l, m) {
						c.todo |= todoSaveConfig | todoUpdateState
					}
					c.delNode(l.node)
					return
				}
				c.renameNode(l.node, m.Sender)
				l.node.flags &^= FlagHandshake
				l.node.flags |= int(m.Flags) & (FlagMaster | FlagSlave)
				c.todo |= todoSaveConfig
				c.routeDirty = true
			} else if l.node.name != m.Sender {
				// Another node answers at this address: forget the address.
				c.log.Debug("PONG from a different node ID; the address is forgotten", "node", l.node.name.String(), "sender", m.Sender.String())
				n := l.node
				n.flags |= FlagNoAddr
				n.ip, n.port, n.pport, n.cport = "", 0, 0, 0
				c.freeLink(l)
				c.todo |= todoSaveConfig
				c.routeDirty = true
				return
			}
		}
		if sender != nil {
			sender.flags = sender.flags&^FlagNoFailover | int(m.Flags)&FlagNoFailover
		}
		if sender != nil && m.Type == MsgPing && !sender.inHandshake() && c.updateAddressIfNeeded(sender, l, m) {
			c.todo |= todoSaveConfig | todoUpdateState
		}
		if !l.inbound && m.Type == MsgPong {
			n := l.node
			n.pongReceived = now
			n.pingSent = 0
			if n.timedOut() {
				n.flags &^= FlagPFail
				c.todo |= todoSaveConfig | todoUpdateState
			} else if n.failed() {
				c.clearFailureIfNeeded(n)
			}
		}
		if sender != nil {
			if m.SlaveOf.IsZero() {
				c.setNodeAsPrimary(sender)
			} else {
				p := c.lookup(m.SlaveOf[:])
				if sender.isPrimary() {
					// A primary turned replica.
					c.delNodeSlots(sender)
					sender.flags = sender.flags&^(FlagMaster|FlagMigrateTo) | FlagSlave
					c.todo |= todoSaveConfig | todoUpdateState
					c.routeDirty = true
				}
				if p != nil && sender.primary != p {
					if sender.primary != nil {
						c.removeReplica(sender.primary, sender)
					}
					c.addReplica(p, sender)
					sender.primary = p
					c.todo |= todoSaveConfig
					c.routeDirty = true
				}
			}
		}
		var senderPrimary *node
		dirty := false
		if sender != nil {
			senderPrimary = sender
			if sender.isReplica() {
				senderPrimary = sender.primary
			}
			if senderPrimary != nil {
				dirty = senderPrimary.slots != m.MySlots
			}
		}
		if sender != nil && sender.isPrimary() && dirty {
			c.updateSlotsConfigWith(sender, senderConfigEpoch, &m.MySlots)
		}
		// The sender claims slots that a primary with a greater epoch serves: tell it.
		if sender != nil && dirty {
			for j := range Slots {
				if !m.MySlots.Has(j) {
					continue
				}
				if c.slots[j] == sender || c.slotUnclaimed(j) {
					continue
				}
				if c.slots[j].configEpoch > senderConfigEpoch {
					c.log.Debug("node has an old slots configuration; sending it an UPDATE", "node", sender.name.String(), "about", c.slots[j].name.String())
					c.sendUpdate(sender.link, c.slots[j])
					break
				}
			}
		}
		if sender != nil && c.myself.isPrimary() && sender.isPrimary() && senderConfigEpoch == c.myself.configEpoch {
			c.handleEpochCollision(sender)
		}
		if sender != nil {
			c.processGossip(m, l, sender)
			c.processPingExt(m, sender)
		}
	case m.Type == MsgFail:
		if sender == nil {
			c.log.Info("ignoring FAIL message from an unknown node", "sender", m.Sender.String(), "about", m.About.String())
			return
		}
		f := c.lookup(m.About[:])
		if f != nil && f.flags&(FlagFail|FlagMyself) == 0 {
			c.log.Info("FAIL message received", "from", m.Sender.String(), "about", m.About.String())
			f.flags = f.flags&^FlagPFail | FlagFail
			f.failTime = now
			c.todo |= todoSaveConfig | todoUpdateState
		}
	case m.Type == MsgPublish || m.Type == MsgPublishShard:
		if sender == nil {
			return
		}
		ch, msg, shard := bytes.Clone(m.Channel), bytes.Clone(m.Payload), m.Type == MsgPublishShard
		c.later(func() { c.host.Publish(ch, msg, shard) })
	case m.Type == MsgFailoverAuthRequest:
		if sender == nil {
			return
		}
		c.voteIfNeeded(sender, m)
	case m.Type == MsgFailoverAuthAck:
		if sender == nil {
			return
		}
		// A vote counts from a primary serving slots, given in this election's epoch or later.
		if sender.isPrimary() && sender.numSlots > 0 && m.CurrentEpoch >= c.authEpoch {
			c.authCount++
			c.todo |= todoHandleFailover
		}
	case m.Type == MsgMFStart:
		if sender == nil || sender.primary != c.myself {
			return
		}
		c.resetManualFailover()
		c.mfEnd = now + mfTimeout
		c.mfReplica = sender
		c.host.PauseWrites(now + mfTimeout*mfPauseMult)
		c.log.Warn("manual failover requested by replica", "replica", sender.name.String())
		// The replica learns the paused offset from the next ping: send it now.
		c.sendPing(l, MsgPing)
	case m.Type == MsgUpdate:
		if sender == nil {
			return
		}
		n := c.lookup(m.UpdateNode[:])
		if n == nil || n.configEpoch >= m.UpdateEpoch {
			return
		}
		if n.isReplica() {
			c.setNodeAsPrimary(n)
		}
		n.configEpoch = m.UpdateEpoch
		c.todo |= todoSaveConfig | todoFsyncConfig
		c.updateSlotsConfigWith(n, m.UpdateEpoch, &m.UpdateSlots)
	case m.Type == MsgModule:
		// bloomd loads no modules: a module message has nobody to go to, as in a Redis node
		// without the module.
	}
}

// peerIP returns the address a node is known by: the one it announces in m, or its side of
// the connection (nodeIp2String).
func (c *Cluster) peerIP(l *Link, m *Message) (string, bool) {
	if m.MyIP[0] != 0 {
		return m.MyIP.String(), true
	}
	ip := l.conn.RemoteIP()
	if ip == "" {
		c.log.Info("cannot tell the address of a cluster bus peer")
		return "", false
	}
	return ip, true
}

// updateAddressIfNeeded takes the address the node n announces, or the one its connection l
// comes from, and reconnects to it if it changed. It ignores n's own link, and reports whether
// the address changed.
func (c *Cluster) updateAddressIfNeeded(n *node, l *Link, m *Message) bool {
	if l == n.link {
		return false
	}
	ip, ok := c.peerIP(l, m)
	if !ok {
		return false
	}
	port, pport, cport := int(m.Port), int(m.PPort), int(m.CPort)
	if n.port == port && n.cport == cport && n.pport == pport && n.ip == ip {
		return false
	}
	n.ip, n.port, n.pport, n.cport = ip, port, pport, cport
	if n.link != nil {
		c.freeLink(n.link)
	}
	n.flags &^= FlagNoAddr
	c.routeDirty = true
	c.log.Warn("address updated for node", "node", n.name.String(), "addr", net.JoinHostPort(n.ip, itoa(n.port)))
	if c.myself.isReplica() && c.myself.primary == n {
		c.host.ReplicaOf(n.ip, n.port)
	}
	return true
}

// processGossip reads the gossip sections of a PING, PONG or MEET: failure reports from
// primaries, newer pong times, new addresses of unreachable nodes, and nodes not known yet.
// sender is nil for the MEET of a node not known yet.
func (c *Cluster) processGossip(m *Message, l *Link, sender *node) {
	now := c.now()
	for i := range m.Gossip {
		g := &m.Gossip[i]
		flags := int(g.Flags) &^ (FlagMyself | FlagMeet) // only this node is myself
		if !validNodeID(g.Node[:]) || g.IP[0] != 0 && net.ParseIP(g.IP.String()) == nil {
			c.logBad(l, "ignoring a gossip section with a malformed node ID or address", "node", fmt.Sprintf("%q", g.Node[:]), "ip", fmt.Sprintf("%q", g.IP.String()))
			continue
		}
		n := c.lookup(g.Node[:])
		if n == nil {
			// A node we do not know, with an address, from a node we know: add it by name.
			// (Connecting to the address alone could join another cluster at a reused
			// address.)
			if sender != nil && flags&FlagNoAddr == 0 && !c.blacklisted(g.Node) {
				nn := c.createNode(&g.Node, flags)
				nn.ip, nn.port, nn.pport, nn.cport = g.IP.String(), int(g.Port), int(g.PPort), int(g.CPort)
				c.addNode(nn)
			}
			continue
		}
		if sender != nil && sender.isPrimary() && n != c.myself {
			if flags&(FlagFail|FlagPFail) != 0 {
				if c.addFailureReport(n, sender) {
					c.log.Debug("node reported another as not reachable", "reporter", sender.name.String(), "node", n.name.String())
				}
				c.markFailingIfNeeded(n)
			} else if c.delFailureReport(n, sender) {
				c.log.Debug("node reported another as back online", "reporter", sender.name.String(), "node", n.name.String())
			}
		}
		// Up as seen from here, no ping pending, no reports: take a newer pong time.
		if flags&(FlagFail|FlagPFail) == 0 && n.pingSent == 0 && c.failureReports(n) == 0 {
			pong := int64(g.PongReceived) * 1000
			if pong <= now+500 && pong > n.pongReceived {
				n.pongReceived = pong
			}
		}
		// Unreachable from here but reachable from the sender at another address: reconnect.
		if n.flags&(FlagFail|FlagPFail) != 0 && flags&FlagNoAddr == 0 && flags&(FlagFail|FlagPFail) == 0 &&
			(n.ip != g.IP.String() || n.port != int(g.Port) || n.cport != int(g.CPort)) {
			if n.link != nil {
				c.freeLink(n.link)
			}
			n.ip, n.port, n.pport, n.cport = g.IP.String(), int(g.Port), int(g.PPort), int(g.CPort)
			n.flags &^= FlagNoAddr
			c.routeDirty = true
		}
	}
}

// processPingExt takes the sender's hostname from its extensions; a message without one means
// it has none.
func (c *Cluster) processPingExt(m *Message, sender *node) {
	h, ok := m.Hostname()
	for _, e := range m.Extensions {
		if e.Type != ExtHostname {
			c.log.Warn("received an unknown ping extension type; ignored", "type", e.Type, "from", sender.name.String())
		}
	}
	if !ok {
		h = ""
	} else if err := validHostname(h); err != nil {
		c.log.Warn("ignoring a malformed announced hostname", "from", sender.name.String(), "hostname", fmt.Sprintf("%q", h), "err", err)
		h = ""
	}
	if sender.hostname != h {
		sender.hostname = h
		c.routeDirty = true
	}
}

// setNodeAsPrimary records that a node known as a replica acts as a primary.
func (c *Cluster) setNodeAsPrimary(n *node) {
	if n.isPrimary() {
		return
	}
	if n.primary != nil {
		c.removeReplica(n.primary, n)
		if n != c.myself {
			n.flags |= FlagMigrateTo
		}
	}
	n.flags = n.flags&^FlagSlave | FlagMaster
	n.primary = nil
	c.todo |= todoSaveConfig | todoUpdateState
	c.routeDirty = true
}

// updateSlotsConfigWith rebinds the slots that sender claims under a greater config epoch than
// their owners' (from a PING, PONG or UPDATE), and follows the consequences: a primary left
// without slots becomes a replica of the new owner (failed over), a replica follows its
// primary's slots, and keys of slots lost are deleted (clusterUpdateSlotsConfigWith).
func (c *Cluster) updateSlotsConfigWith(sender *node, senderEpoch uint64, slots *SlotBitmap) {
	if sender == c.myself {
		c.log.Warn("discarding UPDATE message about myself")
		return
	}
	cur := c.myself
	if c.myself.isReplica() {
		cur = c.myself.primary
	}
	var newPrimary *node
	var dirty []int
	senderSlots, migrated := 0, 0
	for j := range Slots {
		if slots.Has(j) {
			senderSlots++
			if c.slots[j] == sender {
				c.notClaiming.Clear(j)
				continue
			}
			if c.importingFrom[j] != nil {
				continue // closed by hand (redis-cli) when the import ends
			}
			if c.slotUnclaimed(j) || c.slots[j].configEpoch < senderEpoch {
				if c.slots[j] == c.myself && c.host.CountKeysInSlot(j) > 0 {
					dirty = append(dirty, j)
				}
				if cur != nil && c.slots[j] == cur {
					newPrimary = sender
					migrated++
				}
				c.delSlot(j)
				c.addSlot(sender, j)
				c.notClaiming.Clear(j)
				c.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
			}
		} else if c.slots[j] == sender {
			// The owner stopped claiming the slot (it moved away); keep the binding, which
			// costs a redirection at worst, but do not spread it in UPDATEs.
			c.notClaiming.Set(j)
		}
	}
	if newPrimary != nil && cur.numSlots == 0 && (c.cfg.AllowReplicaMigration || senderSlots == migrated) {
		c.log.Warn("configuration change detected; reconfiguring myself as a replica", "primary", sender.name.String())
		c.setPrimary(sender)
		c.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
	} else if p := c.myself.primary; p != nil && p.primary != nil && p.primary != c.myself {
		c.log.Warn("I'm a sub-replica; reconfiguring myself as a replica of my primary's primary", "primary", p.primary.name.String())
		c.setPrimary(p.primary)
		c.todo |= todoSaveConfig | todoUpdateState | todoFsyncConfig
	} else if len(dirty) > 0 {
		for _, j := range dirty {
			c.later(func() { c.host.DeleteKeysInSlot(j) })
		}
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
