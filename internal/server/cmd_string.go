package server

import (
	"math"
	"strconv"

	"github.com/bloomd/bloom/internal/resp"
)

// bloomd keeps plain strings too (SET, GET), so that tools that store a marker next to their
// filters work and WRONGTYPE behaves as in Redis; it has no other Redis data types.

func getCmd(c *Conn, args [][]byte) {
	e := c.srv.ks.get(args[1])
	if e == nil {
		c.w.Null()
		return
	}
	sv, ok := e.val.(*stringValue)
	if !ok {
		c.w.Error(errWrongType)
		return
	}
	c.w.Bulk(sv.b)
}

// setCmd implements SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] (exclusive
// in the table: it may replace a key). The journal records SET key value with an absolute PXAT,
// so replay sets the same expiry.
func setCmd(c *Conn, args [][]byte) {
	var nx, xx, get, keepTTL bool
	expire := int64(0) // absolute unix ms
	timed := false
	for i := 3; i < len(args); i++ {
		o := args[i]
		switch {
		case equalFold(o, "nx") && !xx:
			nx = true
		case equalFold(o, "xx") && !nx:
			xx = true
		case equalFold(o, "get"):
			get = true
		case equalFold(o, "keepttl") && !timed:
			keepTTL = true
		case (equalFold(o, "ex") || equalFold(o, "px") || equalFold(o, "exat") || equalFold(o, "pxat")) && !timed && !keepTTL && i+1 < len(args):
			n, ok := resp.ParseInt(args[i+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			unit, abs := int64(1), o[len(o)-1] == 't' || o[len(o)-1] == 'T'
			if o[0] == 'e' || o[0] == 'E' {
				unit = 1000
			}
			now := nowMs()
			if n <= 0 || n > math.MaxInt64/unit || !abs && n*unit > math.MaxInt64-now {
				c.w.Error("ERR invalid expire time in 'set' command")
				return
			}
			expire = n * unit
			if !abs {
				expire += now
			}
			timed = true
			i++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	key := args[1]
	sh, old := c.lockForCreate(key)
	defer sh.mu.Unlock()
	var oldValue []byte // taken now: removing old below drops its value
	if get && old != nil {
		sv, ok := old.val.(*stringValue)
		if !ok {
			c.w.Error(errWrongType)
			return
		}
		oldValue = sv.b
	}
	reply := func() {
		switch {
		case !get:
		case old == nil:
			c.w.Null()
		default:
			c.w.Bulk(oldValue)
		}
	}
	if nx && old != nil || xx && old == nil {
		if !get {
			c.w.Null()
		}
		reply()
		return
	}
	e := newStringEntry(key, append([]byte(nil), args[2]...))
	var oldMem int64
	if old != nil {
		oldMem = old.mem.Load()
	}
	if !c.srv.ks.reserve(e.mem.Load()-oldMem, c.srv.memLimitBytes()) {
		c.srv.stats.oom.Add(1)
		c.w.Error(errOOM)
		return
	}
	switch {
	case timed:
		e.expire.Store(expire)
	case keepTTL && old != nil:
		e.expire.Store(old.expire.Load())
	}
	if old != nil {
		c.srv.ks.used.Add(oldMem) // removeLocked gives it back
		c.srv.ks.removeLocked(sh, old)
	}
	c.srv.ks.insertLocked(sh, e)
	if t := e.expire.Load(); t != 0 {
		c.propagateCmd([]byte("SET"), key, args[2], []byte("PXAT"), strconv.AppendInt(nil, t, 10))
	} else {
		c.propagateCmd([]byte("SET"), key, args[2])
	}
	if get {
		reply()
	} else {
		c.w.OK()
	}
}

// newStringEntry makes an entry for key holding value (kept, not copied), charged its memory
// (which the caller must reserve).
func newStringEntry(key, value []byte) *entry {
	e := &entry{key: string(key), val: &stringValue{b: value}}
	e.mem.Store(int64(keyOverhead + len(key) + len(value)))
	return e
}

// strlenCmd implements STRLEN key: redis-cli --bigkeys sizes strings with it.
func strlenCmd(c *Conn, args [][]byte) {
	e := c.srv.ks.get(args[1])
	if e == nil {
		c.w.Int(0)
		return
	}
	sv, ok := e.val.(*stringValue)
	if !ok {
		c.w.Error(errWrongType)
		return
	}
	c.w.Int(int64(len(sv.b)))
}
