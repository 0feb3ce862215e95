package server

import (
	"sync"
	"sync/atomic"

	"github.com/bloomd/bloom/internal/acl"
)

// Keys being moved by MIGRATE. While a key's value is sent, writes to it wait: a write that
// reaches the bits already sent would be lost when the key is deleted after the target's
// acknowledgement (Redis does not have the problem only because it blocks every client for the
// whole of a MIGRATE). Reads go on. A write waits without holding its event loop: the
// connection stops reading, as during WAIT, and runs the command again when the move ends
// (Conn.hold), when the key is gone (moved) or still there (COPY, or the target refused it).

// migrations is the server's set of keys being moved. Keys are added inside an exclusive
// section, so a write that runs holding the gate either started before the move (and ended
// before the move began) or sees the mark.
type migrations struct {
	active atomic.Int32 // moves in progress: the hot path's only cost is loading it
	mu     sync.Mutex
	keys   map[string]chan struct{} // closed when the move of the key ends
}

// A migration is one MIGRATE's keys, marked until end.
type migration struct {
	m    *migrations
	keys []string
	done chan struct{}
}

// begin marks keys as being moved. It must run while no command runs (gate.exclusive, or
// inside EXEC), so that no write to them is under way.
func (m *migrations) begin(keys []string) *migration {
	g := &migration{m: m, keys: keys, done: make(chan struct{})}
	m.mu.Lock()
	if m.keys == nil {
		m.keys = make(map[string]chan struct{})
	}
	for _, k := range keys {
		m.keys[k] = g.done
	}
	m.mu.Unlock()
	m.active.Add(1)
	return g
}

// end unmarks the keys and lets the writes that wait for them run.
func (g *migration) end() {
	m := g.m
	m.mu.Lock()
	for _, k := range g.keys {
		if m.keys[k] == g.done {
			delete(m.keys, k)
		}
	}
	m.mu.Unlock()
	m.active.Add(-1)
	close(g.done)
}

// heldBy returns the channel to wait on if cmd with args writes a key being moved, or nil. A
// write without key positions (FLUSHALL, FLUSHDB), or whose keys the table does not locate,
// waits for any move.
func (m *migrations) heldBy(cmd *Command, args [][]byte) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.keys) == 0 {
		return nil
	}
	at := func(i int) <-chan struct{} {
		if i < len(args) {
			if ch, ok := m.keys[string(args[i])]; ok {
				return ch
			}
		}
		return nil
	}
	switch {
	case cmd.Name == "migrate":
		first, n := acl.MigrateKeys(args)
		for i := first; i < first+n; i++ {
			if ch := at(i); ch != nil {
				return ch
			}
		}
		return nil
	case cmd.FirstKey <= 0 || cmd.Flags&FlagMovableKeys != 0:
		// No key positions (FLUSHALL), or keys this table does not locate (a script's):
		// wait for any move.
		for _, ch := range m.keys {
			return ch
		}
	}
	last := cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.FirstKey; i <= last && i < len(args); i += max(cmd.Step, 1) {
		if ch := at(i); ch != nil {
			return ch
		}
	}
	return nil
}

// migrationHold returns what the command must wait for before it runs: a write (or an EXEC
// holding one) to a key being moved. The caller holds the gate (or runs alone).
func (c *Conn) migrationHold(cmd *Command, args [][]byte) <-chan struct{} {
	m := &c.srv.mig
	if m.active.Load() == 0 || c.replApplier {
		return nil
	}
	if cmd.Handler != nil && cmd.Name == "exec" {
		if c.multi == nil {
			return nil
		}
		for _, q := range c.multi.cmds {
			if q.cmd.Flags&(FlagWrite|FlagChangesData) != 0 {
				if ch := m.heldBy(q.cmd, q.args); ch != nil {
					return ch
				}
			}
		}
		return nil
	}
	if cmd.Flags&(FlagWrite|FlagChangesData) == 0 {
		return nil
	}
	return m.heldBy(cmd, args)
}

// hold runs cmd again once ch is closed, without running anything else of the connection
// meanwhile. A connection with its own goroutine waits in place; one in an event loop stops
// being served (as a blocked WAIT) and the loop runs the command when the wait ends.
func (c *Conn) hold(ch <-chan struct{}, cmd *Command, args [][]byte) {
	if c.lp == nil {
		c.outsideGate(func() { <-ch })
		c.rerun = true
		if c.srv.cluster != nil && clusterKeyed(cmd) && c.clusterCheck(cmd, args, false) {
			return // the key moved meanwhile: -ASK or -MOVED
		}
		c.call(cmd, args)
		return
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = append([]byte(nil), a...)
	}
	c.resume = cp
	c.blocked = true
	go func() {
		<-ch
		c.deliver(nil, true)
	}()
}
