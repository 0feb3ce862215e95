package server

import (
	"math"
	"strconv"
	"strings"

	"github.com/bloomd/bloom/internal/resp"
)

// typeName is what TYPE reports for a value.
func typeName(v any) string {
	switch v.(type) {
	case *stringValue:
		return "string"
	case *hashValue:
		return "hash"
	case *cuckooValue:
		return cuckooTypeName
	default:
		return bloomTypeName
	}
}

// lockForCreate locks key's shard for writing and returns it with the live entry for key, or nil
// if there is none. An expired entry is removed first (journaling a DEL), which needs the server
// to itself: outside an exclusive section it gets one, then locks again. If a script past
// busy-reply-threshold holds the server meanwhile, it answers -BUSY for the command and returns
// a nil shard (never inside an exclusive section): the command must stop.
func (c *Conn) lockForCreate(key []byte) (*shard, *entry) {
	ks := c.srv.ks
	for {
		sh, e := ks.lockShard(key)
		if e == nil || !c.expired(e, -1) {
			return sh, e
		}
		if c.inExclusive {
			c.srv.removeExpired(c, sh, e)
			return sh, nil
		}
		sh.mu.Unlock()
		ok := c.runExclusive(func() {
			sh, cur := ks.lockShard(key)
			if cur == e && c.expired(e, -1) {
				c.srv.removeExpired(c, sh, e)
			}
			sh.mu.Unlock()
		})
		if !ok {
			return nil, nil
		}
	}
}

func dbsizeCmd(c *Conn, args [][]byte) {
	n, _ := c.srv.ks.count()
	c.w.Int(int64(n))
}

func existsCmd(c *Conn, args [][]byte) {
	n := 0
	for _, k := range args[1:] {
		if c.srv.ks.get(k) != nil {
			n++
		} else {
			c.keyMiss(k)
		}
	}
	c.w.Int(int64(n))
}

// delCmd serves DEL and UNLINK (exclusive in the table). Each key is journaled on its own.
func delCmd(c *Conn, args [][]byte) {
	n := 0
	now := nowMs()
	for _, k := range args[1:] {
		sh, e := c.srv.ks.lockShard(k)
		if e != nil {
			c.srv.ks.removeLocked(sh, e)
			c.propagateCmd([]byte("DEL"), k)
			if !c.srv.ks.expired(e, now) {
				n++
				c.notify(evGeneric, "del", k)
			} else {
				c.srv.stats.expired.Add(1)
				c.notify(evExpired, "expired", k)
			}
		}
		sh.mu.Unlock()
	}
	c.w.Int(int64(n))
}

func typeCmd(c *Conn, args [][]byte) {
	e := c.srv.ks.get(args[1])
	if e == nil {
		c.keyMiss(args[1])
		c.w.Simple("none")
		return
	}
	c.w.Simple(typeName(e.val))
}

func keysCmd(c *Conn, args [][]byte) {
	pat := args[1]
	all := len(pat) == 1 && pat[0] == '*'
	var keys []string
	now := nowMs()
	for i := range numShards {
		keys = c.srv.ks.scanShard(i, now, keys, func(e *entry) bool {
			return all || globMatch(pat, []byte(e.key))
		})
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

// scanCmd implements SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is the
// index of the next shard to visit; a call visits whole shards until it has looked at COUNT
// keys, so every key present for the whole iteration is returned exactly once.
func scanCmd(c *Conn, args [][]byte) {
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.w.Error("ERR invalid cursor")
		return
	}
	count := 10
	var pat []byte
	typ := ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.w.Error(errSyntax)
			return
		}
		switch {
		case equalFold(args[i], "match"):
			pat = args[i+1]
			if len(pat) == 1 && pat[0] == '*' {
				pat = nil
			}
		case equalFold(args[i], "count"):
			n, ok := resp.ParseInt(args[i+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = int(min(n, math.MaxInt32))
		case equalFold(args[i], "type"):
			typ = string(args[i+1])
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	var keys []string
	next := uint64(0)
	now := nowMs()
	looked := 0
	for i := cur; i < numShards; i++ {
		keys = c.srv.ks.scanShard(int(i), now, keys, func(e *entry) bool {
			looked++
			return (typ == "" || strings.EqualFold(typ, typeName(e.val))) && (pat == nil || globMatch(pat, []byte(e.key)))
		})
		if looked >= count && i+1 < numShards {
			next = i + 1
			break
		}
	}
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

// renameCmd moves a key, with its value and expiry, replacing any value at the new name. The
// table runs it alone (exclusive).
func renameCmd(c *Conn, args [][]byte) {
	src, dst := args[1], args[2]
	nx := equalFold(args[0], "renamenx")
	ks := c.srv.ks
	ssh, e := c.lockForCreate(src)
	ssh.mu.Unlock()
	if e == nil {
		c.w.Error("ERR no such key")
		return
	}
	if string(src) == string(dst) {
		if nx {
			c.w.Int(0)
		} else {
			c.w.OK()
		}
		return
	}
	dsh, old := c.lockForCreate(dst)
	defer dsh.mu.Unlock()
	if old != nil && nx {
		c.w.Int(0)
		return
	}
	if old != nil {
		ks.removeLocked(dsh, old)
	}
	if ssh != dsh {
		ssh.mu.Lock()
		defer ssh.mu.Unlock()
	}
	moved := &entry{key: string(dst), val: e.val}
	moved.expire.Store(e.expire.Load())
	moved.mem.Store(e.mem.Load() - int64(len(e.key)) + int64(len(dst)))
	ks.removeLocked(ssh, e)
	ks.used.Add(moved.mem.Load() + valueMem(moved.val))
	ks.insertLocked(dsh, moved)
	c.propagate(args)
	c.keyCreated(dst) // Redis adds the destination anew, old value or not
	c.notify(evGeneric, "rename_from", src)
	c.notify(evGeneric, "rename_to", dst)
	if nx {
		c.w.Int(1)
	} else {
		c.w.OK()
	}
}

// expireCmd serves EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with NX, XX, GT and LT (exclusive in
// the table, as a time in the past deletes the key). The journal records PEXPIREAT with the
// absolute time, or DEL when the time has already passed.
func expireCmd(c *Conn, args [][]byte) {
	name := strings.ToLower(string(args[0]))
	unit := int64(1000)
	if name[0] == 'p' {
		unit = 1
	}
	absolute := strings.HasSuffix(name, "at")
	n, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	var nx, xx, gt, lt bool
	for _, o := range args[3:] {
		switch {
		case equalFold(o, "nx"):
			nx = true
		case equalFold(o, "xx"):
			xx = true
		case equalFold(o, "gt"):
			gt = true
		case equalFold(o, "lt"):
			lt = true
		default:
			c.w.Error("ERR Unsupported option " + cString(o, 128))
			return
		}
	}
	if nx && (xx || gt || lt) {
		c.w.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		c.w.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	now := nowMs()
	when := n
	if unit == 1000 {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			c.w.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		when = n * 1000
	}
	if !absolute {
		if when > 0 && when > math.MaxInt64-now || when < 0 && when < math.MinInt64+now {
			c.w.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		when += now
	}
	sh, e := c.lockForCreate(args[1])
	defer sh.mu.Unlock()
	if e == nil {
		c.w.Int(0)
		return
	}
	cur := e.expire.Load()
	if nx && cur != 0 || xx && cur == 0 || gt && (cur == 0 || when <= cur) || lt && cur != 0 && when >= cur {
		c.w.Int(0)
		return
	}
	if when <= now && !c.srv.ks.loading.Load() {
		c.srv.ks.removeLocked(sh, e)
		c.propagateCmd([]byte("DEL"), args[1])
		c.notify(evGeneric, "del", args[1])
		c.w.Int(1)
		return
	}
	sh.setExpireLocked(e, when)
	c.propagateCmd([]byte("PEXPIREAT"), args[1], strconv.AppendInt(nil, when, 10))
	c.w.Int(1)
	c.notify(evGeneric, "expire", args[1])
}

// ttlCmd serves TTL, PTTL, EXPIRETIME and PEXPIRETIME.
func ttlCmd(c *Conn, args [][]byte) {
	name := strings.ToLower(string(args[0]))
	e := c.srv.ks.get(args[1])
	switch {
	case e == nil:
		c.keyMiss(args[1])
		c.w.Int(-2)
		return
	case e.expire.Load() == 0:
		c.w.Int(-1)
		return
	}
	at := e.expire.Load()
	switch name {
	case "ttl":
		c.w.Int(max(at-nowMs()+500, 0) / 1000)
	case "pttl":
		c.w.Int(max(at-nowMs(), 0))
	case "expiretime":
		c.w.Int((at + 500) / 1000)
	default:
		c.w.Int(at)
	}
}

// persistCmd removes a key's expiry. The shard lock orders it, and its journal record, against
// other expiry changes of the key; it commutes with adds.
func persistCmd(c *Conn, args [][]byte) {
	sh, e := c.srv.ks.lockShard(args[1])
	defer sh.mu.Unlock()
	if e == nil || e.expire.Load() == 0 || c.expired(e, -1) {
		c.w.Int(0)
		return
	}
	sh.setExpireLocked(e, 0)
	c.propagate(args)
	c.notify(evGeneric, "persist", args[1])
	c.w.Int(1)
}

// flushCmd serves FLUSHALL and FLUSHDB [ASYNC|SYNC]; the table runs it alone.
func flushCmd(c *Conn, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "async") && !equalFold(args[1], "sync") {
		c.w.Error(errSyntax)
		return
	}
	ks := c.srv.ks
	for i := range ks.shards {
		sh := &ks.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			ks.removeLocked(sh, e)
		}
		sh.mu.Unlock()
	}
	c.propagateCmd([]byte("FLUSHALL"))
	c.w.OK()
}

// memoryUsageCmd implements MEMORY USAGE key [SAMPLES n]: what the key is charged, which for a
// filter is its BF.INFO Size plus the key (RedisBloom reports the Size as the module type's
// memory usage).
func memoryUsageCmd(c *Conn, args [][]byte) {
	if len(args) != 3 && (len(args) != 5 || !equalFold(args[3], "samples")) {
		c.w.Error(errSyntax)
		return
	}
	e := c.srv.ks.get(args[2])
	if e == nil {
		c.w.Null()
		return
	}
	c.w.Int(e.mem.Load() + valueMem(e.val))
}
