package server

import (
	"strconv"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/value"
)

// Hashes: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HKEYS, HVALS, HDEL, HEXISTS, HLEN, HSTRLEN,
// HINCRBY, HINCRBYFLOAT, HRANDFIELD and HSCAN, with Redis 7.0's replies, errors and order of
// checks (t_hash.c). The values are internal/value's Hashes.
//
// Concurrency as for strings (cmd_string.go): writes hold the hash's write lock across the
// change, its record and its events, reads its read lock. HDEL runs alone (exclusive in the
// table), since deleting the last field deletes the key.
//
// Records: a snapshot shares a hash's fields as of its instant (the hash copies its list of
// fields before its next change: value.Hash.Snapshot), so the log after it replays over exactly
// that hash and the commands are recorded as they are, as Redis propagates them: HINCRBYFLOAT
// as HSET of its result (no replay or replica does long double arithmetic of its own), and an
// HDEL that empties the hash followed by DEL.

// hashLimits are the limits within which a hash is small (Redis's listpack encoding): HSCAN
// returns a small hash whole. bloomd uses Redis 7.0's defaults (hash-max-listpack-* are not
// settings of bloomd; see config_redis.go).
var hashLimits = value.DefaultLimits

// readHash returns the hash at key for reading (see readValue).
func (c *Conn) readHash(key []byte) (*hashValue, bool) { return readValue[*hashValue](c, key) }

// modifyHash runs fn on the hash at key under its write lock; a missing key is given to fn as a
// new empty hash, which joins the keyspace if fn returns true (see modifyValue).
func (c *Conn) modifyHash(key []byte, fn func(hv *hashValue) bool) {
	modifyValue(c, key, newHashEntry, func(hv *hashValue, _ bool) bool { return fn(hv) })
}

// newHashEntry is a new entry holding an empty hash.
func newHashEntry(key []byte) *entry {
	e := &entry{key: string(key), val: value.NewHash()}
	e.mem.Store(int64(keyOverhead + len(key)))
	return e
}

// hashSet sets the pairs of args (field, value, field, value, ...) in hv, charging their memory
// first; it returns the number of new fields, or -1 after replying OOM.
func (c *Conn) hashSet(hv *hashValue, pairs [][]byte) int {
	var want int64
	for i := 0; i < len(pairs); i += 2 {
		want += hv.SetCharge(pairs[i], pairs[i+1])
	}
	if !c.reserveValue(want) {
		return -1
	}
	var got int64
	created := 0
	for i := 0; i < len(pairs); i += 2 {
		isNew, d := hv.Set(pairs[i], cloneBytes(pairs[i+1]), hashLimits)
		got += d
		if isNew {
			created++
		}
	}
	c.srv.ks.used.Add(got - want)
	return created
}

// hsetCmd implements HSET key field value [field value ...] and HMSET.
func hsetCmd(c *Conn, args [][]byte) {
	if len(args)%2 == 1 {
		c.w.Error(arityError(string(lower(args[0]))))
		return
	}
	key := args[1]
	c.modifyHash(key, func(hv *hashValue) bool {
		n := c.hashSet(hv, args[2:])
		if n < 0 {
			return false
		}
		c.propagate(args)
		if args[0][1]|0x20 == 's' {
			c.w.Int(int64(n)) // HSET
		} else {
			c.w.OK() // HMSET
		}
		c.notify(evHash, "hset", key)
		return true
	})
}

func hsetnxCmd(c *Conn, args [][]byte) {
	key := args[1]
	c.modifyHash(key, func(hv *hashValue) bool {
		if _, ok := hv.Get(args[2]); ok {
			c.w.Int(0)
			return false
		}
		if c.hashSet(hv, args[2:4]) < 0 {
			return false
		}
		c.propagate(args)
		c.w.Int(1)
		c.notify(evHash, "hset", key)
		return true
	})
}

// hincrbyCmd implements HINCRBY key field increment.
func hincrbyCmd(c *Conn, args [][]byte) {
	key, name := args[1], args[2]
	incr, ok := resp.ParseInt(args[3])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	c.modifyHash(key, func(hv *hashValue) bool {
		var v int64
		if cur, ok := hv.Get(name); ok {
			if v, ok = resp.ParseInt(cur); !ok {
				c.w.Error(value.ErrHashNotInt)
				return false
			}
		}
		if incr < 0 && v < 0 && incr < mathMinInt64-v || incr > 0 && v > 0 && incr > mathMaxInt64-v {
			c.w.Error(value.ErrIncrOverflo)
			return false
		}
		v += incr
		nv := strconv.AppendInt(nil, v, 10)
		if c.hashSet(hv, [][]byte{name, nv}) < 0 {
			return false
		}
		c.propagate(args)
		c.w.Int(v)
		c.notify(evHash, "hincrby", key)
		return true
	})
}

const (
	mathMaxInt64 = 1<<63 - 1
	mathMinInt64 = -1 << 63
)

// maxRandomFields bounds HRANDFIELD's negative count (fields drawn with repetition): a reply
// of 16 Mi fields is a few hundred MiB already.
const maxRandomFields = 1 << 24

// hincrbyfloatCmd implements HINCRBYFLOAT key field increment in Redis's long double arithmetic
// (value.IncrFloat), recorded as HSET of the result.
func hincrbyfloatCmd(c *Conn, args [][]byte) {
	key, name := args[1], args[2]
	incr, msg := value.ParseFloatIncr(args[3])
	if msg != "" {
		c.w.Error(msg)
		return
	}
	c.modifyHash(key, func(hv *hashValue) bool {
		cur, exists := hv.Get(name)
		nv, msg := value.IncrFloat(cur, exists, incr)
		if msg != "" {
			c.w.Error(msg)
			return false
		}
		if c.hashSet(hv, [][]byte{name, nv}) < 0 {
			return false
		}
		c.propagateCmd([]byte("HSET"), key, name, nv)
		c.w.Bulk(nv)
		c.notify(evHash, "hincrbyfloat", key)
		return true
	})
}

// hdelCmd implements HDEL key field [field ...] (exclusive in the table: deleting the last
// field deletes the key).
func hdelCmd(c *Conn, args [][]byte) {
	key := args[1]
	sh, e := c.lockForCreate(key)
	defer sh.mu.Unlock()
	if e == nil {
		c.w.Int(0)
		return
	}
	hv, ok := e.val.(*hashValue)
	if !ok {
		c.w.Error(errWrongType)
		return
	}
	deleted, removed := 0, false
	for _, f := range args[2:] {
		if ok, d := hv.Delete(f); ok {
			c.srv.ks.used.Add(d)
			deleted++
			if hv.Len() == 0 {
				removed = true
				break
			}
		}
	}
	if deleted > 0 {
		c.propagate(args)
		c.notify(evHash, "hdel", key)
		if removed {
			c.srv.ks.removeLocked(sh, e)
			c.propagateCmd([]byte("DEL"), key)
			c.notify(evGeneric, "del", key)
		}
	}
	c.w.Int(int64(deleted))
}

func hgetCmd(c *Conn, args [][]byte) {
	hv, ok := c.readHash(args[1])
	if !ok {
		return
	}
	if hv == nil {
		c.w.Null()
		return
	}
	hv.RLock()
	if v, ok := hv.Get(args[2]); ok {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
	hv.RUnlock()
}

func hmgetCmd(c *Conn, args [][]byte) {
	hv, ok := c.readHash(args[1])
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	if hv == nil {
		for range args[2:] {
			c.w.Null()
		}
		return
	}
	hv.RLock()
	for _, f := range args[2:] {
		if v, ok := hv.Get(f); ok {
			c.w.Bulk(v)
		} else {
			c.w.Null()
		}
	}
	hv.RUnlock()
}

// hgetallCmd serves HGETALL (a map in RESP3), HKEYS and HVALS.
func hgetallCmd(c *Conn, args [][]byte) {
	keys, vals := true, true
	switch {
	case equalFold(args[0], "hkeys"):
		vals = false
	case equalFold(args[0], "hvals"):
		keys = false
	}
	hv, ok := c.readHash(args[1])
	if !ok {
		return
	}
	if hv == nil {
		if keys && vals {
			c.w.Map(0)
		} else {
			c.w.Array(0)
		}
		return
	}
	hv.RLock()
	defer hv.RUnlock()
	if keys && vals {
		c.w.Map(hv.Len())
	} else {
		c.w.Array(hv.Len())
	}
	hv.Each(func(name string, val []byte) {
		if keys {
			c.w.BulkString(name)
		}
		if vals {
			c.w.Bulk(val)
		}
	})
}

// hexistsCmd serves HEXISTS, HLEN and HSTRLEN, which answer 0 for a missing key.
func hexistsCmd(c *Conn, args [][]byte) {
	hv, ok := c.readHash(args[1])
	if !ok {
		return
	}
	if hv == nil {
		c.w.Int(0)
		return
	}
	hv.RLock()
	defer hv.RUnlock()
	switch {
	case equalFold(args[0], "hlen"):
		c.w.Int(int64(hv.Len()))
	case equalFold(args[0], "hstrlen"):
		v, _ := hv.Get(args[2])
		c.w.Int(int64(len(v)))
	default:
		if _, ok := hv.Get(args[2]); ok {
			c.w.Int(1) // an integer in RESP3 too, as Redis answers
		} else {
			c.w.Int(0)
		}
	}
}

// hrandfieldCmd implements HRANDFIELD key [count [WITHVALUES]].
func hrandfieldCmd(c *Conn, args [][]byte) {
	if len(args) == 2 {
		hv, ok := c.readHash(args[1])
		switch {
		case !ok:
		case hv == nil:
			c.w.Null()
		default:
			hv.RLock()
			name, _ := hv.Random()
			hv.RUnlock()
			c.w.BulkString(name)
		}
		return
	}
	count, ok := resp.ParseInt(args[2])
	switch {
	case !ok:
		c.w.Error(errNotInt)
		return
	case count == mathMinInt64:
		c.w.Error(value.ErrCount)
		return
	case len(args) > 4 || len(args) == 4 && !equalFold(args[3], "withvalues"):
		c.w.Error(errSyntax)
		return
	}
	withValues := len(args) == 4
	if withValues && (count < -mathMaxInt64/2 || count > mathMaxInt64/2) || count < -maxRandomFields {
		// Redis answers any negative count, building a reply that can take the server's
		// memory; bloomd refuses one of more than maxRandomFields fields.
		c.w.Error(value.ErrOutOfRange)
		return
	}
	hv, ok := c.readHash(args[1])
	switch {
	case !ok:
		return
	case hv == nil || count == 0:
		c.w.Array(0)
		return
	}
	hv.RLock()
	defer hv.RUnlock()
	n := count
	if n < 0 {
		n = -n
	} else {
		n = min(n, int64(hv.Len()))
	}
	if withValues && c.w.Proto == 2 {
		c.w.Array(int(2 * n))
	} else {
		c.w.Array(int(n))
	}
	hv.RandomFields(count, func(name string, val []byte) {
		if withValues && c.w.Proto == 3 {
			c.w.Array(2)
		}
		c.w.BulkString(name)
		if withValues {
			c.w.Bulk(val)
		}
	})
}

// hscanCmd implements HSCAN key cursor [MATCH pattern] [COUNT count].
func hscanCmd(c *Conn, args [][]byte) {
	cursor, ok := value.ParseCursor(args[2])
	if !ok {
		c.w.Error(value.ErrCursor)
		return
	}
	hv, ok := c.readHash(args[1])
	if !ok {
		return
	}
	if hv == nil {
		c.w.Array(2)
		c.w.BulkString("0")
		c.w.Array(0)
		return
	}
	count := int64(10)
	var pat []byte
	for i := 3; i < len(args); i += 2 {
		switch {
		case equalFold(args[i], "count") && i+1 < len(args):
			n, ok := resp.ParseInt(args[i+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = n
		case equalFold(args[i], "match") && i+1 < len(args):
			pat = args[i+1]
			if len(pat) == 1 && pat[0] == '*' {
				pat = nil
			}
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	var match func(name []byte) bool
	if pat != nil {
		match = func(name []byte) bool { return globMatch(pat, name) }
	}
	var out []string
	var vals [][]byte
	hv.RLock()
	next := hv.Scan(cursor, count, match, func(name string, val []byte) {
		out = append(out, name)
		vals = append(vals, val)
	})
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(2 * len(out))
	for i, name := range out {
		c.w.BulkString(name)
		c.w.Bulk(vals[i])
	}
	hv.RUnlock()
}
