package server

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/redisbloom"
)

// copyCmd implements COPY source destination [DB destination-db] [REPLACE] (Redis 6.2) for every
// value bloomd has, with Redis 7.0's replies and errors: 1 when copied, 0 when the source is
// missing or the destination exists without REPLACE. The copy has the source's expiry time. bloomd
// has one database, so DB takes only 0. RedisBloom 2.6 gives its types no copy callback, so Redis
// refuses to copy a filter ("ERR not supported for this module key"); bloomd copies filters as it
// copies strings and hashes (README's compatibility table).
//
// The table runs COPY alone (exclusive): no add lands in the source while its bits are read, so
// the copy is the source at one instant, and its records are ordered against every other.
//
// The journal gets what the copy holds, not the command. A replayed COPY would read a source
// rebuilt from a snapshot whose filters' bits and strings' bytes were copied while clients went
// on (internal/persist), and which may hold writes made after the COPY; the destination would get
// them too. So a copied filter is journaled as its dump, BF.LOADCHUNK (CF.LOADCHUNK) of the
// header and of every chunk that is not all zero bytes, after a DEL of the destination it
// replaces and before a PEXPIREAT of its expiry, all between MULTI and EXEC; a copied string as
// SET with PXAT. A hash, which a snapshot holds exactly as it was at its instant, is journaled as
// COPY. Redis replicas (with RedisBloom for the filters) apply these records too. A filter's
// dump in the journal costs as many bytes as the filter, once; TestCopyReplayOverLaterBits shows
// the replay exact over a snapshot taken while the source changed.
func copyCmd(c *Conn, args [][]byte) {
	src, dst := args[1], args[2]
	replace := false
	for j := 3; j < len(args); j++ {
		switch {
		case equalFold(args[j], "replace"):
			replace = true
		case equalFold(args[j], "db") && j+1 < len(args):
			n, ok := resp.ParseInt(args[j+1])
			switch {
			case !ok:
				c.w.Error(errNotInt)
				return
			case n < math.MinInt32 || n > math.MaxInt32:
				c.w.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
				return
			case n != 0:
				c.w.Error("ERR DB index is out of range")
				return
			}
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if string(src) == string(dst) {
		c.w.Error("ERR source and destination objects are the same")
		return
	}
	// Both lookups remove a key whose time has passed, as Redis's do.
	ssh, e := c.lockForCreate(src)
	ssh.mu.Unlock()
	if e == nil {
		c.keyMiss(src)
		c.w.Int(0)
		return
	}
	dsh, old := c.lockForCreate(dst)
	dsh.mu.Unlock()
	if old != nil && !replace {
		c.w.Int(0)
		return
	}
	at := e.expire.Load()
	var ok bool
	switch v := e.val.(type) {
	case *stringValue:
		ok = c.copyString(dst, v, old, at)
	case *hashValue:
		ok = c.copyHash(src, dst, v, old, at)
	case *bloomValue:
		ok = c.copyBloom(dst, v, old, at)
	case *cuckooValue:
		ok = c.copyCuckoo(dst, v, old, at)
	}
	if !ok {
		return // refused by the memory limit, with its reply
	}
	c.keyCreated(dst) // Redis adds the destination anew, replaced or not
	c.notify(evGeneric, "copy_to", dst)
	c.w.Int(1)
}

// place publishes ne, whose memory is charged, at its key in place of what is there (old, or
// nil), with the expiry time at (0 for none).
func (c *Conn) place(ne *entry, at int64) {
	ks := c.srv.ks
	sh, cur := ks.lockShard([]byte(ne.key))
	defer sh.mu.Unlock()
	if cur != nil {
		ks.removeLocked(sh, cur)
	}
	ne.expire.Store(at)
	ks.insertLocked(sh, ne)
}

// reserveCopy charges newMem bytes for a copy that replaces old (nil if none), before anything
// is allocated, or replies OOM and returns false.
func (c *Conn) reserveCopy(newMem int64, old *entry) bool {
	var oldMem int64
	if old != nil {
		oldMem = old.mem.Load() + valueMem(old.val)
	}
	if !c.srv.ks.reserve(newMem-oldMem, c.srv.memLimitBytes()) {
		c.srv.stats.oom.Add(1)
		c.w.Error(errOOM)
		return false
	}
	if old != nil {
		c.srv.ks.used.Add(oldMem) // removing old gives it back
	}
	return true
}

// copyString copies a string, journaled as SET with the bytes copied.
func (c *Conn) copyString(dst []byte, sv *stringValue, old *entry, at int64) bool {
	sv.RLock()
	defer sv.RUnlock()
	if !c.reserveCopy(int64(keyOverhead+len(dst)+sv.Len()), old) { // a copy's allocation is its length
		return false
	}
	ne := newStringEntry(dst, cloneBytes(sv.Bytes()))
	c.place(ne, at)
	if at != 0 {
		c.propagateCmd([]byte("SET"), dst, sv.Bytes(), []byte("PXAT"), strconv.AppendInt(nil, at, 10))
	} else {
		c.propagateCmd([]byte("SET"), dst, sv.Bytes())
	}
	return true
}

// copyHash copies a hash (sharing its fields, which never change), journaled as COPY.
func (c *Conn) copyHash(src, dst []byte, hv *hashValue, old *entry, at int64) bool {
	hv.RLock()
	defer hv.RUnlock()
	keyMem := int64(keyOverhead + len(dst))
	if !c.reserveCopy(keyMem+hv.Charge(), old) {
		return false
	}
	ne := &entry{key: string(dst), val: hv.Clone()}
	ne.mem.Store(keyMem)
	c.place(ne, at)
	if old != nil {
		c.propagateCmd([]byte("COPY"), src, dst, []byte("REPLACE"))
	} else {
		c.propagateCmd([]byte("COPY"), src, dst)
	}
	return true
}

// copyBloom copies a Bloom filter through its dump: a new chain from the header, charged to
// the memory limit before it is allocated, and the chunks that hold any set bit.
func (c *Conn) copyBloom(dst []byte, bv *bloomValue, old *entry, at int64) bool {
	header := bv.ch.Header()
	var buf []byte
	ne, msg := c.srv.newBloomEntry(dst, true, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
		ch, err := redisbloom.LoadHeader(header, o)
		if err != nil {
			return nil, err
		}
		for it := int64(1); ; {
			next, data := bv.ch.ScanDumpInto(it, buf)
			if next == 0 {
				return ch, nil
			}
			buf = data[:cap(data)]
			if !allZero(data) {
				if err := ch.LoadChunk(next, data); err != nil {
					return nil, err
				}
			}
			it = next
		}
	})
	if ne == nil {
		c.w.Error(msg)
		return false
	}
	nb := ne.val.(*bloomValue)
	c.replaceWithDump(ne, old, at, "BF.LOADCHUNK", func(yield func(int64, []byte) bool) {
		if !yield(1, header) {
			return
		}
		for it := int64(1); ; {
			next, data := nb.ch.ScanDumpInto(it, buf)
			if next == 0 || !yield(next, data) {
				return
			}
			buf = data[:cap(data)]
			it = next
		}
	})
	return true
}

// copyCuckoo copies a cuckoo filter through its dump, as copyBloom does.
func (c *Conn) copyCuckoo(dst []byte, cv *cuckooValue, old *entry, at int64) bool {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	ne, msg := c.srv.newCuckooEntry(dst, true, 0, func(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
		var d *bloom.Cuckoo
		for pos, data := range redisbloom.CFChunks(cv.cf) {
			var err error
			switch {
			case d == nil:
				d, err = redisbloom.LoadCFHeader(data, o)
			case !allZero(data):
				err = redisbloom.CFLoadChunk(d, pos, data)
			}
			if err != nil {
				return nil, err
			}
		}
		return d, nil
	})
	if ne == nil {
		c.w.Error(msg)
		return false
	}
	c.replaceWithDump(ne, old, at, "CF.LOADCHUNK", redisbloom.CFChunks(ne.val.(*cuckooValue).cf))
	return true
}

// replaceWithDump publishes the copied filter ne in place of old and journals it as one
// transaction: DEL of old, the loading command of the dump's header and of every chunk that is
// not all zero bytes (a filter made from the header has zero bytes there), and PEXPIREAT.
func (c *Conn) replaceWithDump(ne, old *entry, at int64, load string, dump func(yield func(int64, []byte) bool)) {
	c.place(ne, at)
	key := []byte(ne.key)
	c.journalGroup(func() {
		if old != nil {
			c.propagateCmd([]byte("DEL"), key)
		}
		var it []byte
		for pos, data := range dump {
			if pos != 1 && allZero(data) {
				continue
			}
			it = strconv.AppendInt(it[:0], pos, 10)
			c.propagateCmd([]byte(load), key, it, data)
		}
		if at != 0 {
			c.propagateCmd([]byte("PEXPIREAT"), key, strconv.AppendInt(nil, at, 10))
		}
	})
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
