package server

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/value"
)

// Strings: GET, SET, SETNX, MGET, MSET, STRLEN, GETRANGE, SETRANGE and APPEND here, the bitmap
// commands in cmd_bitmap.go, with Redis 7.0's replies, errors and order of checks. The values
// are internal/value's Strings.
//
// Concurrency: SETRANGE, APPEND, SETBIT and BITFIELD change a string in place, holding its
// write lock across the change, its journal record and its events, so that the log's order for
// a string is the order of its changes; reads hold its read lock. SET, MSET and BITOP replace
// whole values, which happens only while no other command runs (exclusive in the table).
//
// Records: a snapshot copies the first bytes of a string, as many as it had at the snapshot's
// instant, while clients go on changing it (see internal/persist), so the copy may already hold
// some changes made after that instant, which the log after it replays again. Every record must
// therefore give the same string when replayed over such a copy: a change within the copied
// length must not depend on what it overwrites, and one past it sees the same string the
// original saw (the string only grows, and the copy holds no byte past the length). SETBIT,
// SETRANGE and APPEND are recorded as they are; BITFIELD, whose INCRBY depends on the old
// value, as SETs of the values it wrote; BITOP, which reads other keys, as a SET (or DEL) of its
// result. TestCrashValues (internal/persist) shows that this holds across snapshots taken while
// clients change strings.

// readValue returns the value of type V at key for reading: nil for a missing key (published as
// a key miss), or ok false after replying WRONGTYPE for a key of another type.
func readValue[V any](c *Conn, key []byte) (v V, ok bool) {
	e := c.entry(key)
	if e == nil {
		c.keyMiss(key)
		return v, true
	}
	if v, ok = e.val.(V); !ok {
		c.w.Error(errWrongType)
	}
	return v, ok
}

// modifyValue runs fn on the value of type V at key under the value's write lock. A missing key
// is given to fn as the value of newEntry's entry (created set), which joins the keyspace only if
// fn returns true; fn does the rest: memory, the change, its record, its events and the reply. A
// key of another type gets WRONGTYPE.
func modifyValue[V sync.Locker](c *Conn, key []byte, newEntry func([]byte) *entry, fn func(v V, created bool) bool) {
	for {
		if e := c.entry(key); e != nil {
			v, ok := e.val.(V)
			if !ok {
				c.w.Error(errWrongType)
				return
			}
			v.Lock()
			fn(v, false)
			v.Unlock()
			return
		}
		sh, e := c.lockForCreate(key)
		if sh == nil {
			return
		}
		if e != nil {
			sh.mu.Unlock()
			continue // created meanwhile
		}
		ne := newEntry(key)
		c.createEntry(sh, ne, func() bool {
			v := ne.val.(V)
			v.Lock()
			defer v.Unlock()
			return fn(v, true)
		})
		sh.mu.Unlock()
		return
	}
}

// readString returns the string at key for reading (see readValue).
func (c *Conn) readString(key []byte) (*stringValue, bool) { return readValue[*stringValue](c, key) }

// modifyString runs fn on the string at key under its write lock (see modifyValue).
func (c *Conn) modifyString(key []byte, fn func(sv *stringValue, created bool) bool) {
	modifyValue(c, key, newEmptyStringEntry, fn)
}

func newEmptyStringEntry(key []byte) *entry { return newStringEntry(key, nil) }

// createEntry adds the new entry ne under its shard's lock (held) if fn, which gets it first,
// returns true: the key's memory is reserved before (refused with OOM), and its "new" event
// published before fn's first event. The entry is not visible to any other command until the
// shard lock is released, so every record fn writes follows the key's creation.
func (c *Conn) createEntry(sh *shard, ne *entry, fn func() bool) {
	ks := c.srv.ks
	if !ks.reserve(ne.mem.Load(), c.srv.memLimitBytes()) {
		c.srv.stats.oom.Add(1)
		c.w.Error(errOOM)
		return
	}
	c.keyCreated([]byte(ne.key))
	if !fn() {
		c.newKey = nil
		ks.used.Add(-ne.mem.Load() - valueMem(ne.val))
		return
	}
	ks.insertLocked(sh, ne)
	c.flushNew()
}

// reserveValue charges n more bytes for a value, or replies OOM and returns false.
func (c *Conn) reserveValue(n int64) bool {
	if n <= 0 {
		if n < 0 {
			c.srv.ks.used.Add(n) // a shared counter: not touched when nothing changes
		}
		return true
	}
	if err := c.srv.reserveMem(n); err != nil {
		c.w.Error(errOOM)
		return false
	}
	return true
}

// growString grows sv to n bytes, charging its memory first; it replies OOM and returns false
// when the memory limit refuses.
func (c *Conn) growString(sv *stringValue, n int) bool {
	if !c.reserveValue(sv.GrowCharge(n)) {
		return false
	}
	sv.Grow(n)
	return true
}

// bulkLimit is proto-max-bulk-len for the lengths of strings and bit offsets, or -1 (no limit)
// for the primary's stream and the data files, whose writes are applied whatever the setting
// (Redis's mustObeyClient).
func (c *Conn) bulkLimit() int64 {
	if c.replApplier {
		return -1
	}
	return c.srv.maxBulk.Load()
}

func cloneBytes(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

func getCmd(c *Conn, args [][]byte) {
	sv, ok := c.readString(args[1])
	switch {
	case !ok:
	case sv == nil:
		c.w.Null()
	default:
		sv.RLock()
		c.w.Bulk(sv.Bytes())
		sv.RUnlock()
	}
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
	if get {
		if old == nil {
			c.keyMiss(key)
		} else {
			sv, ok := old.val.(*stringValue)
			if !ok {
				c.w.Error(errWrongType)
				return
			}
			oldValue = sv.Bytes()
		}
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
	e := newStringEntry(key, cloneBytes(args[2]))
	if !c.replaceEntry(sh, old, e) {
		return
	}
	switch {
	case timed:
		sh.setExpireLocked(e, expire)
	case keepTTL && old != nil:
		sh.setExpireLocked(e, old.expire.Load())
	}
	if t := e.expire.Load(); t != 0 {
		c.propagateCmd([]byte("SET"), key, args[2], []byte("PXAT"), strconv.AppendInt(nil, t, 10))
	} else {
		c.propagateCmd([]byte("SET"), key, args[2])
	}
	c.notify(evString, "set", key)
	if timed {
		c.notify(evGeneric, "expire", key)
	}
	if get {
		reply()
	} else {
		c.w.OK()
	}
}

// replaceEntry puts e in place of old (nil if the key is new) under sh's lock, charging the
// difference of their memory; it replies OOM and returns false when the limit refuses. Replacing
// a key needs the server to itself (an exclusive command).
func (c *Conn) replaceEntry(sh *shard, old, e *entry) bool {
	ks := c.srv.ks
	newMem := e.mem.Load() + valueMem(e.val)
	var oldMem int64
	if old != nil {
		oldMem = old.mem.Load() + valueMem(old.val)
	}
	if !ks.reserve(newMem-oldMem, c.srv.memLimitBytes()) {
		c.srv.stats.oom.Add(1)
		c.w.Error(errOOM)
		return false
	}
	if old != nil {
		ks.used.Add(oldMem) // removeLocked gives it back
		ks.removeLocked(sh, old)
	} else {
		c.keyCreated(e.key2())
	}
	ks.insertLocked(sh, e)
	return true
}

// key2 returns the entry's key as bytes, for events.
func (e *entry) key2() []byte { return []byte(e.key) }

// newStringEntry makes an entry for key holding value (kept, not copied). Its memory (the
// entry's and the value's) is not charged yet.
func newStringEntry(key, v []byte) *entry {
	e := &entry{key: string(key), val: value.NewString(v)}
	e.mem.Store(int64(keyOverhead + len(key)))
	return e
}

// setnxCmd implements SETNX key value: SET NX that never replaces a key, so it runs alongside
// other commands.
func setnxCmd(c *Conn, args [][]byte) {
	key := args[1]
	sh, old := c.lockForCreate(key)
	if sh == nil {
		return
	}
	defer sh.mu.Unlock()
	if old != nil {
		c.w.Int(0)
		return
	}
	e := newStringEntry(key, cloneBytes(args[2]))
	if !c.replaceEntry(sh, nil, e) {
		return
	}
	c.propagate(args)
	c.notify(evString, "set", key)
	c.w.Int(1)
}

// msetCmd implements MSET key value [key value ...] (exclusive in the table: it replaces keys).
// The memory of every pair is reserved first, so the command applies whole or not at all.
func msetCmd(c *Conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.w.Error(arityError("mset"))
		return
	}
	ks := c.srv.ks
	var total int64
	for i := 1; i < len(args); i += 2 {
		total += int64(keyOverhead + len(args[i]) + len(args[i+1]))
	}
	if !ks.reserve(total, c.srv.memLimitBytes()) {
		c.srv.stats.oom.Add(1)
		c.w.Error(errOOM)
		return
	}
	ks.used.Add(-total) // charged again pair by pair below, within what was just checked
	for i := 1; i < len(args); i += 2 {
		key := args[i]
		sh, old := c.lockForCreate(key)
		e := newStringEntry(key, cloneBytes(args[i+1]))
		newMem := e.mem.Load() + valueMem(e.val)
		if old != nil {
			ks.removeLocked(sh, old)
		} else {
			c.keyCreated(key)
		}
		ks.used.Add(newMem)
		ks.insertLocked(sh, e)
		sh.mu.Unlock()
		c.notify(evString, "set", key)
	}
	c.propagate(args)
	c.w.OK()
}

// mgetCmd implements MGET key [key ...]: a value for each string, null for a missing key or
// one of another type. The strings are read together, their read locks taken in key order (so
// two MGETs cannot wait for each other), as one instant, as in Redis.
func mgetCmd(c *Conn, args [][]byte) {
	keys := args[1:]
	vals := make([]*stringValue, len(keys))
	for i, k := range keys {
		if e := c.entry(k); e == nil {
			c.keyMiss(k)
		} else {
			vals[i], _ = e.val.(*stringValue)
		}
	}
	order := make([]int, 0, len(keys))
	for i := range keys {
		if vals[i] != nil {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(string(keys[a]), string(keys[b])) })
	locked := order[:0:0]
	for j, i := range order {
		if j == 0 || string(keys[i]) != string(keys[order[j-1]]) {
			vals[i].RLock()
			locked = append(locked, i)
		}
	}
	c.w.Array(len(keys))
	for _, sv := range vals {
		if sv == nil {
			c.w.Null()
		} else {
			c.w.Bulk(sv.Bytes())
		}
	}
	for _, i := range locked {
		vals[i].RUnlock()
	}
}

// strlenCmd implements STRLEN key: redis-cli --bigkeys sizes strings with it.
func strlenCmd(c *Conn, args [][]byte) {
	sv, ok := c.readString(args[1])
	switch {
	case !ok:
	case sv == nil:
		c.w.Int(0)
	default:
		sv.RLock()
		c.w.Int(int64(sv.Len()))
		sv.RUnlock()
	}
}

func getrangeCmd(c *Conn, args [][]byte) {
	start, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	end, ok := resp.ParseInt(args[3])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	sv, ok := c.readString(args[1])
	switch {
	case !ok:
	case sv == nil:
		c.w.Bulk(nil)
	default:
		sv.RLock()
		c.w.Bulk(value.GetRange(sv.Bytes(), start, end))
		sv.RUnlock()
	}
}

// setrangeCmd implements SETRANGE key offset value.
func setrangeCmd(c *Conn, args [][]byte) {
	key, val := args[1], args[3]
	off, ok := resp.ParseInt(args[2])
	switch {
	case !ok:
		c.w.Error(errNotInt)
		return
	case off < 0:
		c.w.Error(value.ErrOffsetRange)
		return
	}
	limit := c.bulkLimit()
	c.modifyString(key, func(sv *stringValue, created bool) bool {
		if len(val) == 0 {
			c.w.Int(int64(sv.Len())) // nothing to write; a missing key stays missing
			return false
		}
		if limit >= 0 {
			if msg := value.CheckLength(off, int64(len(val)), limit); msg != "" {
				c.w.Error(msg)
				return false
			}
		}
		if !c.growString(sv, int(off)+len(val)) {
			return false
		}
		sv.SetRange(int(off), val)
		c.propagate(args)
		c.notify(evString, "setrange", key)
		c.w.Int(int64(sv.Len()))
		return true
	})
}

// appendCmd implements APPEND key value.
func appendCmd(c *Conn, args [][]byte) {
	key, val := args[1], args[2]
	limit := c.bulkLimit()
	c.modifyString(key, func(sv *stringValue, created bool) bool {
		old := sv.Len()
		if !created && limit >= 0 {
			if msg := value.CheckLength(int64(old), int64(len(val)), limit); msg != "" {
				c.w.Error(msg)
				return false
			}
		}
		if !c.growString(sv, old+len(val)) {
			return false
		}
		sv.Append(val)
		c.propagate(args)
		c.notify(evString, "append", key)
		c.w.Int(int64(sv.Len()))
		return true
	})
}

// incrCmd implements INCR, DECR, INCRBY and DECRBY with Redis 7.0's replies and errors: the
// string's value as a 64-bit integer (a missing key counts as 0), changed by the increment and
// stored as a new string, the key's expiry kept (exclusive in the table: it replaces the value).
// The journal records the command as received: a snapshot keeps the value it replaced as that
// value was, so a replay over the snapshot increments what the original incremented; a Redis
// replica gets it as Redis sends it.
func incrCmd(c *Conn, args [][]byte) {
	by := int64(1)
	switch strings.ToLower(string(args[0])) {
	case "decr":
		by = -1
	case "incrby", "decrby":
		n, ok := resp.ParseInt(args[2])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		by = n
		if args[0][0] == 'd' || args[0][0] == 'D' {
			if n == math.MinInt64 {
				c.w.Error("ERR decrement would overflow")
				return
			}
			by = -n
		}
	}
	key := args[1]
	sh, old := c.lockForCreate(key)
	defer sh.mu.Unlock()
	var cur int64
	if old != nil {
		sv, ok := old.val.(*stringValue)
		if !ok {
			c.w.Error(errWrongType)
			return
		}
		sv.RLock()
		cur, ok = resp.ParseInt(sv.Bytes())
		sv.RUnlock()
		if !ok {
			c.w.Error(errNotInt)
			return
		}
	}
	if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
		c.w.Error("ERR increment or decrement would overflow")
		return
	}
	v := cur + by
	e := newStringEntry(key, strconv.AppendInt(nil, v, 10))
	if !c.replaceEntry(sh, old, e) {
		return
	}
	if old != nil {
		if t := old.expire.Load(); t != 0 {
			sh.setExpireLocked(e, t)
		}
	}
	c.propagate(args)
	c.notify(evString, "incrby", key)
	c.w.Int(v)
}

// msetnxCmd implements MSETNX key value [key value ...]: MSET only if none of the keys exists (1),
// else nothing (0). Exclusive in the table, so no key appears between the check and the sets.
func msetnxCmd(c *Conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.w.Error(arityError("msetnx"))
		return
	}
	for i := 1; i < len(args); i += 2 {
		if c.get(args[i]) != nil {
			c.w.Int(0)
			return
		}
	}
	msetCmd(c, args)
	if b := c.w.Bytes(); len(b) >= 5 && string(b[len(b)-5:]) == "+OK\r\n" {
		c.w.Truncate(len(b) - 5)
		c.w.Int(1)
	}
}
