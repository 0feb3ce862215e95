package server

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/pubsub"
)

// This file connects internal/pubsub to connections: the commands, and delivery of published
// messages to a connection from another goroutine (Conn.Push). A message for a connection in an
// event loop is queued on the connection and handed to its loop, which writes it with the
// loop's other output; one for a connection with its own goroutine is written by a short-lived
// goroutine, under the connection's write lock.

func registerPubSub(mx *Mux) {
	cmd := func(name string, arity int, flags Flags, summary string, h Handler) *Command {
		c := &Command{Name: name, Arity: arity, Flags: flags, Since: "2.0.0", Group: "pubsub", Summary: summary, Handler: h}
		mx.Handle(c)
		return c
	}
	ps := FlagLoading | FlagStale
	cmd("subscribe", -2, ps, "Listens for messages published to channels.", subscribeCmd)
	cmd("psubscribe", -2, ps, "Listens for messages published to channels that match one or more patterns.", psubscribeCmd)
	cmd("unsubscribe", -1, ps, "Stops listening to messages posted to channels.", unsubscribeCmd)
	cmd("punsubscribe", -1, ps, "Stops listening to messages published to channels that match one or more patterns.", punsubscribeCmd)
	cmd("publish", 3, ps|FlagFast, "Posts a message to a channel.", publishCmd)
	container := &Command{Name: "pubsub", Arity: -2, Since: "2.8.0", Group: "pubsub", Summary: "A container for Pub/Sub commands.",
		Subcommands: map[string]*Command{}}
	mx.Handle(container)
	sub := func(name string, arity int, summary string, h Handler) {
		container.Subcommands[name] = &Command{Name: "pubsub|" + name, Arity: arity, Flags: ps, Since: "2.8.0", Group: "pubsub", Summary: summary, Handler: h}
	}
	sub("channels", -2, "Returns the active channels.", pubsubChannelsCmd)
	sub("numsub", -2, "Returns a count of subscribers to channels.", pubsubNumSubCmd)
	sub("numpat", 2, "Returns a count of unique pattern subscriptions.", pubsubNumPatCmd)
	sub("help", 2, "Returns helpful text about the different subcommands.", helpCmd(
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT", "    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]", "    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).", "",
		"HELP", "    Print this help."))
}

// pubsubClient returns c's subscription state, made on first use.
func (c *Conn) pubsubClient() *pubsub.Client {
	if c.ps == nil {
		c.ps = c.srv.hub.NewClient(c)
	}
	return c.ps
}

func (c *Conn) subscriptionsChanged() { c.subs.Store(int32(c.ps.Count())) }

func subscribeCmd(c *Conn, args [][]byte) {
	c.w.Raw(c.pubsubClient().Subscribe(nil, args[1:]))
	c.subscriptionsChanged()
}

func psubscribeCmd(c *Conn, args [][]byte) {
	c.w.Raw(c.pubsubClient().PSubscribe(nil, args[1:]))
	c.subscriptionsChanged()
}

func unsubscribeCmd(c *Conn, args [][]byte) {
	c.w.Raw(c.pubsubClient().Unsubscribe(nil, args[1:]))
	c.subscriptionsChanged()
}

func punsubscribeCmd(c *Conn, args [][]byte) {
	c.w.Raw(c.pubsubClient().PUnsubscribe(nil, args[1:]))
	c.subscriptionsChanged()
}

// publishCmd delivers a message to this server's subscribers and sends PUBLISH on to the
// replicas, which deliver it to theirs, as Redis propagates it (to replicas only: the append-only
// log does not record it).
func publishCmd(c *Conn, args [][]byte) {
	c.w.Int(int64(c.srv.hub.Publish(args[1], args[2], c)))
	if cl := c.srv.cluster; cl != nil {
		// In a cluster the bus carries it to every node, replicas included, as in Redis.
		cl.Publish(args[1], args[2], false)
		return
	}
	c.propagateRepl(args)
}

func pubsubChannelsCmd(c *Conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error("ERR unknown subcommand or wrong number of arguments for '" + cString(args[1], 128) + "'. Try PUBSUB HELP.")
		return
	}
	var pat []byte
	if len(args) == 3 {
		pat = args[2]
	}
	chans := c.srv.hub.Channels(pat)
	c.w.Array(len(chans))
	for _, ch := range chans {
		c.w.BulkString(ch)
	}
}

func pubsubNumSubCmd(c *Conn, args [][]byte) {
	c.w.Map(len(args) - 2)
	for _, ch := range args[2:] {
		c.w.Bulk(ch)
		c.w.Int(int64(c.srv.hub.NumSub(ch)))
	}
}

func pubsubNumPatCmd(c *Conn, args [][]byte) { c.w.Int(int64(c.srv.hub.NumPat())) }

// subscribedOK reports whether cmd may run on a RESP2 connection in the subscribed state.
func subscribedOK(cmd *Command) bool {
	switch cmd.Name {
	case "subscribe", "psubscribe", "unsubscribe", "punsubscribe", "ping", "quit", "reset":
		return true
	}
	return false
}

func errSubscribed(cmd *Command) string {
	return "ERR Can't execute '" + strings.ToLower(cmd.Name) + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}

// Proto returns the connection's protocol, for pubsub.Subscriber.
func (c *Conn) Proto() int { return int(c.proto.Load()) }

// Push queues a published message for the connection (pubsub.Subscriber). A connection
// publishing to itself (RESP3) gets it in its reply buffer at once, before PUBLISH's reply.
func (c *Conn) Push(frame []byte, self bool) {
	if self {
		c.w.Raw(frame)
		return
	}
	c.deliver(frame, false)
}

// deliver queues bytes for the client from another goroutine; unblock also ends a blocking
// command (see block) whose reply they are.
func (c *Conn) deliver(b []byte, unblock bool) {
	if c.nc == nil && c.lp == nil {
		return // Server.Exec's connection has no client
	}
	c.pushMu.Lock()
	if c.obufClosed.Load() || c.closed {
		c.pushMu.Unlock()
		return // closed, or closing for its output: nothing more is kept for it
	}
	if !unblock && c.outputOver(c.omem()+int64(len(b))) {
		c.dropPushedLocked()
		c.pushMu.Unlock()
		if c.outputLimitReached(false) {
			c.kill()
		}
		return
	}
	first := len(c.pushed) == 0 && !c.unblockPending
	c.pushed = append(c.pushed, b...)
	c.pushLen.Store(int64(len(c.pushed)))
	if unblock {
		c.unblockPending = true
	}
	if c.lp != nil {
		c.pushMu.Unlock()
		if first {
			c.lp.deliverTo(c)
		}
		return
	}
	// One writer at a time, so that messages keep their order.
	start := !c.pushWriting
	c.pushWriting = true
	c.pushMu.Unlock()
	if start {
		go c.writePushed()
	}
}

// takePushed returns the queued bytes and whether a blocking command ended.
func (c *Conn) takePushed() ([]byte, bool) {
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	b, u := c.pushed, c.unblockPending
	c.dropPushedLocked()
	return b, u
}

// writePushed writes queued messages to a connection that has its own goroutine, until none
// is left.
func (c *Conn) writePushed() {
	for {
		c.pushMu.Lock()
		b := c.pushed
		if len(b) == 0 {
			c.pushWriting = false
			c.pushMu.Unlock()
			return
		}
		c.outLen.Add(int64(len(b))) // still unwritten output until the socket takes it
		c.dropPushedLocked()
		c.pushMu.Unlock()
		// No deadline: a client that does not read is closed by its output limits (or CLIENT
		// KILL, or its connection's end), which ends the write.
		c.outMu.Lock()
		n, err := c.nc.Write(b)
		c.srv.stats.netOut.Add(int64(n))
		c.outMu.Unlock()
		c.outLen.Add(-int64(len(b)))
		if err != nil {
			c.kill()
		}
	}
}

// block runs fn, which may wait, and replies with what it returns, without holding up the other
// connections: a connection in an event loop stops running commands until the reply comes
// (from another goroutine), one with its own goroutine waits in place. fn must stop waiting
// when gone is closed: the client has left, and nothing is waiting for the reply (as Redis
// frees a blocked client that disconnects). While fn waits the client counts in INFO's
// blocked_clients. Inside EXEC, fn must not wait; block is not called there.
func (c *Conn) block(fn func(gone <-chan struct{}) []byte) {
	blocked := &c.srv.stats.blocked
	blocked.Add(1)
	if c.lp == nil {
		c.outsideGate(func() {
			reply := c.watchPeer(fn)
			blocked.Add(-1)
			c.w.Raw(reply)
		})
		return
	}
	if c.gone == nil {
		c.gone = make(chan struct{}) // closed by the loop when it closes c (dropOutput)
	}
	gone := c.gone
	c.blocked = true
	go func() {
		reply := fn(gone)
		blocked.Add(-1)
		c.deliver(reply, true) // dropped if c closed meanwhile
	}()
}

// watchAhead is the most a connection with its own goroutine reads while it waits in a
// blocking command (see watchPeer); past it, the client's further requests stay in the socket.
const watchAhead = 64 << 10

// watchPeer runs fn for a connection with its own goroutine, reading its socket meanwhile so
// that a client that leaves closes gone, as an event loop sees a blocked client leave. What
// the client sends meanwhile (requests pipelined behind the blocking one) is kept, and read
// as if it had come after.
func (c *Conn) watchPeer(fn func(gone <-chan struct{}) []byte) []byte {
	if c.nc == nil {
		return fn(nil)
	}
	gone := make(chan struct{})
	done := make(chan struct{})
	var ahead []byte
	var interrupted atomic.Bool
	// A blocked client is not idle: the timeout setting does not close it (as in Redis).
	if !c.stopping.Load() {
		c.nc.SetReadDeadline(time.Time{})
	}
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for len(ahead) < watchAhead {
			n, err := c.nc.Read(buf)
			ahead = append(ahead, buf[:n]...)
			if err == nil {
				continue
			}
			var ne net.Error
			if !interrupted.Load() && !(errors.As(err, &ne) && ne.Timeout()) {
				close(gone) // the client left (or its connection failed or was killed)
			}
			// A deadline: ours, once fn returned, or a shutdown's, which ends fn itself.
			return
		}
	}()
	reply := fn(gone)
	interrupted.Store(true)
	c.nc.SetReadDeadline(time.Unix(1, 0)) // ends the read in progress
	<-done
	if len(ahead) > 0 {
		c.srv.stats.netIn.Add(int64(len(ahead)))
		c.in.ahead = ahead
	}
	if c.stopping.Load() {
		c.nc.SetReadDeadline(time.Now().Add(drainWindow))
	} else {
		c.nc.SetReadDeadline(time.Time{}) // beforeRead arms the timeout before the next read
	}
	return reply
}

// closePubSub drops the connection's subscriptions when it ends.
func (c *Conn) closePubSub() {
	if c.ps != nil {
		c.ps.Close()
		c.subs.Store(0)
	}
}

// isType reports whether the connection is of a CLIENT KILL / CLIENT LIST type: "pubsub" once
// subscribed, "normal" otherwise. (Replica and primary links are not client connections; their
// kinds are handled by the replication hooks.)
func (c *Conn) isType(typ string) bool {
	switch typ {
	case "pubsub":
		return c.subs.Load() > 0
	case "normal":
		return c.subs.Load() == 0
	}
	return false
}
