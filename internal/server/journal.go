package server

// A Journal records the write commands that changed the keyspace, so that replaying the records
// in order, on a keyspace restored from a snapshot taken before the first of them, rebuilds the
// same keyspace. It is the hook for the append-only file.
//
// The server calls Append exactly once for each write that took effect, after it took effect and
// before its reply is flushed, from the goroutine of the connection that made it (or from the
// expiry goroutine, for the DEL of an expired key). argv is a command that has the same effect
// when replayed: usually the command as received, sometimes rewritten so that replay is
// deterministic (EXPIRE becomes PEXPIREAT with an absolute time; SET's EX becomes PXAT). It is
// valid only during the call.
//
// Append is called while the write still holds the lock that orders it against conflicting
// writes: the key's entry lock (shared for adds, exclusive for deletion), the shard lock for a
// key's creation, or the server-wide gate (RENAME, FLUSHALL, EXEC). So for any one key, records
// of creation, deletion and expiry changes arrive in the order they took effect; only adds to one
// existing filter, which commute, may arrive in a different order than they were applied. A
// transaction's writes arrive between a MULTI and an EXEC record. Append must therefore be quick
// (append to a buffer) and must not call back into the server.
//
// The wait function Append returns, if not nil, blocks until the record is as durable as the
// journal promises (with appendfsync always: on disk), and returns an error if it cannot be. The
// server calls it before writing the reply: a connection keeps only its latest wait, so a wait
// must also cover every record appended before its own (natural for a group commit, where one
// fsync covers all records written before it). If a wait fails, the connection is closed without
// its replies: a write is never acknowledged unless it is durable.
type Journal interface {
	Append(argv [][]byte) (wait func() error)
}

// propagate journals args (the command as received) for c.
func (c *Conn) propagate(args [][]byte) {
	if c.script != nil {
		c.script.record(args) // a script's write: journaled with the others when it ends
		return
	}
	j := c.srv.journal
	if c.multiWrites == 1 {
		// The first write of an EXEC opens the transaction in the journal.
		c.multiWrites = 2
		c.appendJournal(j, [][]byte{[]byte("MULTI")})
	}
	c.appendJournal(j, args)
}

func (c *Conn) appendJournal(j Journal, args [][]byte) {
	if j != nil {
		if w := j.Append(args); w != nil {
			c.wait = w
		}
	}
	// The same record goes to the replicas; WAIT waits for the offset after it.
	if off := c.srv.repl.Feed(args); off > 0 {
		c.woff = off
	}
}

// propagateRepl sends args to the replicas only, not to the journal (PUBLISH: Redis's
// PROPAGATE_REPL). Inside EXEC it opens the transaction in both, as a write does.
func (c *Conn) propagateRepl(args [][]byte) {
	if c.multiWrites == 1 {
		c.multiWrites = 2
		c.appendJournal(c.srv.journal, [][]byte{[]byte("MULTI")})
	}
	if off := c.srv.repl.Feed(args); off > 0 {
		c.woff = off
	}
}

// journalGroup makes the records fn journals one transaction (MULTI ... EXEC) in the journal and
// the replicas' stream, as EXEC's are; inside EXEC or a script they are part of one already.
func (c *Conn) journalGroup(fn func()) {
	if c.script != nil || c.multiWrites != 0 {
		fn()
		return
	}
	c.multiWrites = 1 // the first record opens the transaction
	fn()
	if c.multiWrites == 2 {
		c.appendJournal(c.srv.journal, [][]byte{[]byte("EXEC")})
	}
	c.multiWrites = 0
}

// propagateCmd journals a rewritten command.
func (c *Conn) propagateCmd(args ...[]byte) { c.propagate(args) }
