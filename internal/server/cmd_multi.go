package server

import "github.com/bloomd/bloom/internal/acl"

// Limits on one transaction's queue; past them the transaction is refused at EXEC.
const (
	maxQueued      = 1 << 20
	maxQueuedBytes = 256 << 20
)

type multiState struct {
	cmds    []queued
	bytes   int
	aborted bool
}

type queued struct {
	cmd  *Command
	args [][]byte
}

// queue copies a command into the open transaction.
func (c *Conn) queue(cmd *Command, args [][]byte) {
	m := c.multi
	size := 0
	for _, a := range args {
		size += len(a)
	}
	if len(m.cmds) >= maxQueued || m.bytes+size > maxQueuedBytes {
		c.reject("ERR MULTI queue is too long: at most 1048576 commands and 256 MiB")
		return
	}
	buf := make([]byte, 0, size)
	cp := make([][]byte, len(args))
	for i, a := range args {
		start := len(buf)
		buf = append(buf, a...)
		cp[i] = buf[start:len(buf):len(buf)]
	}
	m.cmds = append(m.cmds, queued{cmd, cp})
	m.bytes += size
	c.w.Simple("QUEUED")
}

func multiCmd(c *Conn, args [][]byte) {
	if c.multi != nil {
		c.w.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = &multiState{}
	c.w.OK()
}

func discardCmd(c *Conn, args [][]byte) {
	if c.multi == nil {
		c.w.Error("ERR DISCARD without MULTI")
		return
	}
	c.multi = nil
	c.w.OK()
}

// execCmd runs the queued commands with no other command running (the table marks EXEC
// exclusive), so they are isolated from other clients as in Redis, and journals their writes
// between MULTI and EXEC records.
func execCmd(c *Conn, args [][]byte) {
	m := c.multi
	if m == nil {
		c.w.Error("ERR EXEC without MULTI")
		return
	}
	c.multi = nil
	if m.aborted {
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	c.w.Array(len(m.cmds))
	c.multiWrites = 1
	for _, q := range m.cmds {
		// Permissions may have changed since the command was queued: check again, as Redis.
		if r, i := c.aclAllows(q.cmd, q.args); r != acl.Allowed {
			c.execDenied(q.cmd, q.args, r, i)
			continue
		}
		c.call(q.cmd, q.args)
	}
	if c.multiWrites == 2 {
		c.appendJournal(c.srv.journal, [][]byte{[]byte("EXEC")})
	}
	c.multiWrites = 0
}
