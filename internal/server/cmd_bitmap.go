package server

import (
	"strconv"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/value"
)

// The bitmap commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
// BITFIELD_RO, with Redis 7.0's replies, errors and order of checks (bitops.c). Concurrency and
// records as for the other string commands (cmd_string.go).

// setbitCmd implements SETBIT key offset value. A SETBIT at a large offset charges the
// string's new length before allocating it, and is refused over the memory limit.
func setbitCmd(c *Conn, args [][]byte) {
	key := args[1]
	off, msg := value.ParseBitOffset(args[2], c.bulkLimit(), 0)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	on, ok := resp.ParseInt(args[3])
	if !ok || on&^1 != 0 {
		c.w.Error(value.ErrBitValue)
		return
	}
	c.modifyString(key, func(sv *stringValue, created bool) bool {
		n := sv.Len()
		if !c.growString(sv, int(off>>3)+1) {
			return false
		}
		old := sv.SetBit(off, int(on))
		if created || sv.Len() != n || old != int(on) {
			c.propagate(args)
			c.notify(evString, "setbit", key)
		}
		c.w.Int(int64(old))
		return true
	})
}

func getbitCmd(c *Conn, args [][]byte) {
	off, msg := value.ParseBitOffset(args[2], c.bulkLimit(), 0)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	sv, ok := c.readString(args[1])
	switch {
	case !ok:
	case sv == nil:
		c.w.Int(0)
	default:
		sv.RLock()
		c.w.Int(int64(value.GetBit(sv.Bytes(), off)))
		sv.RUnlock()
	}
}

// bitcountCmd implements BITCOUNT key [start end [BYTE|BIT]]. As in Redis, a missing key is 0
// before its arguments are looked at.
func bitcountCmd(c *Conn, args [][]byte) {
	sv, ok := c.readString(args[1])
	switch {
	case !ok:
	case sv == nil:
		c.w.Int(0)
	default:
		sv.RLock()
		n, msg := value.BitCount(sv.Bytes(), args[2:])
		sv.RUnlock()
		if msg != "" {
			c.w.Error(msg)
		} else {
			c.w.Int(n)
		}
	}
}

// bitposCmd implements BITPOS key bit [start [end [BYTE|BIT]]].
func bitposCmd(c *Conn, args [][]byte) {
	if _, msg := value.BitPos(nil, false, args[2:3]); msg != "" {
		c.w.Error(msg) // the bit argument is checked before the key
		return
	}
	sv, ok := c.readString(args[1])
	if !ok {
		return
	}
	var pos int64
	var msg string
	if sv == nil {
		pos, msg = value.BitPos(nil, false, args[2:])
	} else {
		sv.RLock()
		pos, msg = value.BitPos(sv.Bytes(), true, args[2:])
		sv.RUnlock()
	}
	if msg != "" {
		c.w.Error(msg)
	} else {
		c.w.Int(pos)
	}
}

// bitopCmd implements BITOP AND|OR|XOR|NOT destkey key [key ...] (exclusive in the table: it
// replaces or deletes destkey). It is recorded as its result, SET destkey (or DEL destkey when
// the result is empty), because a replay over a snapshot copied while clients went on could
// read the source strings with later changes in them.
func bitopCmd(c *Conn, args [][]byte) {
	op, ok := value.ParseBitOp(args[1])
	if !ok {
		c.w.Error(errSyntax)
		return
	}
	if op == value.OpNot && len(args) != 4 {
		c.w.Error(value.ErrBitopNot)
		return
	}
	srcs := make([][]byte, len(args)-3)
	for i, k := range args[3:] {
		sv, ok := c.readString(k)
		if !ok {
			return
		}
		if sv != nil {
			srcs[i] = sv.Bytes() // no lock needed: nothing else runs
		}
	}
	res := value.BitOp(op, srcs)
	dest := args[2]
	sh, old := c.lockForCreate(dest)
	defer sh.mu.Unlock()
	switch {
	case res != nil:
		e := newStringEntry(dest, res)
		if !c.replaceEntry(sh, old, e) {
			return
		}
		c.propagateCmd([]byte("SET"), dest, res)
		c.notify(evString, "set", dest)
	case old != nil:
		c.srv.ks.removeLocked(sh, old)
		c.propagateCmd([]byte("DEL"), dest)
		c.notify(evGeneric, "del", dest)
	}
	c.w.Int(int64(len(res)))
}

// bitfieldCmd implements BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
// offset increment] [OVERFLOW WRAP|SAT|FAIL] ... and BITFIELD_RO key [GET type offset] ....
func bitfieldCmd(c *Conn, args [][]byte) {
	key := args[1]
	bf, msg := value.ParseBitfield(args[2:], c.bulkLimit())
	if msg != "" {
		c.w.Error(msg)
		return
	}
	if !bf.Writes {
		sv, ok := c.readString(key)
		if !ok {
			return
		}
		var b []byte
		if sv != nil {
			sv.RLock()
			defer sv.RUnlock()
			b = sv.Bytes()
		}
		res, _ := bf.Exec(b, nil, nil)
		c.writeFieldResults(res)
		return
	}
	if equalFold(args[0], "bitfield_ro") {
		c.w.Error(value.ErrBitfieldRO)
		return
	}
	c.modifyString(key, func(sv *stringValue, created bool) bool {
		n := sv.Len()
		if !c.growString(sv, int(bf.Highest>>3)+1) {
			return false
		}
		grown := created || sv.Len() != n
		rec := append(c.journalArgs[:0], []byte("BITFIELD"), key)
		writes := 0
		res, changed := bf.Exec(sv.Bytes(), nil, func(op *value.FieldOp, v uint64) {
			rec = value.AppendSetArgs(rec, op, v)
			writes++
		})
		if grown {
			// Record the new length too, in case the writes that reached it failed.
			last := sv.Len() - 1
			rec = append(rec, []byte("SET"), []byte("u8"), strconv.AppendInt(nil, int64(last)*8, 10),
				strconv.AppendInt(nil, int64(sv.Bytes()[last]), 10))
		}
		if grown || changed {
			c.propagate(rec)
		}
		c.journalArgs = rec[:0]
		c.writeFieldResults(res)
		if changed || grown && writes > 0 {
			// As Redis, after the replies: an event when a write changed a bit or made the
			// string longer (not when every write failed, though the string grew).
			c.notify(evString, "setbit", key)
		}
		return true
	})
}

func (c *Conn) writeFieldResults(res []value.FieldResult) {
	c.w.Array(len(res))
	for _, r := range res {
		if r.Null {
			c.w.Null()
		} else {
			c.w.Int(r.Val)
		}
	}
}
