package server

import (
	"io"
	"net"
	"strconv"
	"time"

	"github.com/bloomd/bloom/internal/migrate"
	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/internal/resp"
)

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2
// username password] [KEYS key ...], with Redis 7.0's parsing, replies and errors; the exchange
// with the target is internal/migrate's.
//
// While the keys are sent, the client that sent MIGRATE waits (without holding its event loop,
// as WAIT does), other clients go on, and writes to the keys being moved wait (migrating.go), so
// no add made during the move is lost: the keys are deleted (and DEL journaled) only after the
// target acknowledged them, as Redis does, and the writes held then find them gone. Inside
// MULTI/EXEC, where every command runs alone, MIGRATE runs in place, as Redis's always does.

// streamFrom is the size from which a Bloom filter's payload is streamed uncompressed
// (rdb.DumpChainTo) rather than built in memory, compressed, as DUMP builds it.
const streamFrom = 8 << 20

func migrateCmd(c *Conn, args [][]byte) {
	var copyKeys bool
	req := migrate.Request{Asking: c.srv.cluster != nil} // a cluster node sends RESTORE-ASKING
	first, n := 3, 1
opts:
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case equalFold(args[j], "copy"):
			copyKeys = true
		case equalFold(args[j], "replace"):
			req.Replace = true
		case equalFold(args[j], "auth"):
			if more == 0 {
				c.w.Error(errSyntax)
				return
			}
			j++
			req.Auth, req.Password = true, string(args[j])
		case equalFold(args[j], "auth2"):
			if more < 2 {
				c.w.Error(errSyntax)
				return
			}
			req.Auth, req.Username, req.Password = true, string(args[j+1]), string(args[j+2])
			j += 2
		case equalFold(args[j], "keys"):
			if len(args[3]) != 0 {
				c.w.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			first, n = j+1, len(args)-j-1
			break opts
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	timeout, ok := resp.ParseInt(args[5])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	db, ok := resp.ParseInt(args[4])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if timeout <= 0 {
		timeout = 1000
	}
	port, _ := strconv.Atoi(string(args[2])) // atoi, as Redis: a bad port fails to connect
	req.Addr = string(args[1]) + ":" + string(args[2])
	req.DialAddr = net.JoinHostPort(string(args[1]), strconv.Itoa(port))
	req.DB, req.Timeout = db, time.Duration(timeout)*time.Millisecond
	names := make([][]byte, n)
	for i := range names {
		names[i] = append([]byte(nil), args[first+i]...)
	}
	s := c.srv
	if c.inExclusive {
		c.w.Raw(s.migrateKeys(c, req, names, copyKeys, true))
		return
	}
	// The move goes on if the client leaves: its keys are marked, and are deleted once the target
	// has them.
	c.block(func(<-chan struct{}) []byte { return s.migrateKeys(c, req, names, copyKeys, false) })
}

// migrateKeys moves the live keys among names, and returns MIGRATE's reply. inline is set
// inside EXEC (the caller runs alone); otherwise it runs outside the gate, marking the keys so
// that their writes wait while they are sent.
func (s *Server) migrateKeys(c *Conn, req migrate.Request, names [][]byte, copyKeys, inline bool) []byte {
	var ents []*entry
	var mig *migration
	find := func() {
		var marked []string
		for _, k := range names {
			if e := s.ks.get(k); e != nil {
				ents = append(ents, e)
				marked = append(marked, e.key)
			}
		}
		if !inline && len(ents) > 0 {
			mig = s.mig.begin(marked)
		}
	}
	if inline {
		find()
	} else {
		s.gate.exclusive(find)
	}
	if len(ents) == 0 {
		return []byte("+NOKEY\r\n")
	}
	if mig != nil {
		defer mig.end()
	}
	keys := make([]migrate.Key, len(ents))
	for i, e := range ents {
		at := e.expire.Load()
		keys[i] = migrate.Key{
			Name: []byte(e.key),
			TTL: func() int64 {
				if at == 0 {
					return 0
				}
				ttl := at - nowMs()
				if ttl < 0 {
					return -1 // expired meanwhile: not sent, as Redis
				}
				return max(ttl, 1)
			},
			Open: func() (migrate.Payload, error) { return s.migratePayload(e) },
		}
	}
	res, err := s.migratePool.Migrate(req, keys)
	if err != nil {
		return s.errorReply("ERR " + oneLine(err.Error()))
	}
	if !copyKeys && len(res.Moved) > 0 {
		del := [][]byte{[]byte("DEL")}
		remove := func() {
			for _, i := range res.Moved {
				e := ents[i]
				sh, cur := s.ks.lockShard([]byte(e.key))
				if cur == e { // not deleted or replaced meanwhile (expired, say)
					s.ks.removeLocked(sh, e)
					del = append(del, []byte(e.key))
				}
				sh.mu.Unlock()
			}
		}
		if inline {
			remove()
			if len(del) > 1 {
				c.propagate(del)
			}
		} else {
			var wait func() error
			s.gate.exclusive(func() {
				remove()
				if len(del) > 1 {
					if s.journal != nil {
						wait = s.journal.Append(del)
					}
					if off := s.repl.Feed(del); off > 0 {
						c.woff = off
					}
				}
			})
			if wait != nil {
				if err := wait(); err != nil {
					// Never acknowledged unless durable: the client loses its connection.
					s.log.Error("journal failed; closing the client without acknowledging MIGRATE", "client", c.addr, "err", err)
					c.kill()
					return nil
				}
			}
		}
	}
	if res.Reply != "" {
		return s.errorReply(res.Reply)
	}
	return []byte("+OK\r\n")
}

// errorReply returns an error reply for a blocked command's client, counted as the connection's
// error replies are.
func (s *Server) errorReply(msg string) []byte {
	s.mstats.Error(msg)
	return []byte("-" + msg + "\r\n")
}

// migratePayload returns the DUMP payload MIGRATE sends for e: as DUMP makes it (compressed,
// Redis's bytes), except for a Bloom filter of streamFrom bytes or more, which is written from
// its bits as it is sent, uncompressed (rdb.DumpChainTo). A payload built in memory is charged
// to the memory ceiling until it was sent.
func (s *Server) migratePayload(e *entry) (migrate.Payload, error) {
	if bv, ok := e.val.(*bloomValue); ok && bv.ch.Size() >= streamFrom {
		header := bv.ch.Header()
		n, err := rdb.DumpChainLen(header, nil)
		if err != nil {
			return migrate.Payload{}, err
		}
		return migrate.Payload{Len: n, WriteTo: func(w io.Writer) (int64, error) {
			return rdb.DumpChainTo(w, bv.ch, header, nil)
		}}, nil
	}
	p, err := s.dumpValue(e.val, s.dumpOpts())
	if err != nil {
		return migrate.Payload{}, err
	}
	charge := int64(len(p))
	if err := s.chargeRepl(charge); err != nil {
		return migrate.Payload{}, &dumpRefusal{err}
	}
	pl := migrate.Bytes(p)
	pl.Close = func() { s.chargeRepl(-charge) }
	return pl, nil
}
