package server

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/value"
	"github.com/bloomd/bloom/redisbloom"
)

// DUMP and RESTORE (and RESTORE-ASKING, which a Redis Cluster's MIGRATE sends) with Redis 7.0's
// payloads: a value as an RDB file holds it, then the RDB version and a CRC-64 (internal/rdb).
// Strings, hashes, and RedisBloom's Bloom and cuckoo filters as RedisBloom 2.6 writes its module types;
// payloads of other types are refused as bad data. Replies, errors and the order of checks are
// restoreCommand's (src/cluster.c).

const (
	errBusyKey      = "BUSYKEY Target key name already exists."
	errDumpPayload  = "ERR DUMP payload version or checksum are wrong"
	errBadDumpValue = "ERR Bad data format"
)

// dumpOpts returns the options of DUMP payloads: the RDB version Redis 7.0 writes, compressed
// as rdbcompression says, as Redis's DUMP follows it.
func (s *Server) dumpOpts() *rdb.WriterOptions {
	return &rdb.WriterOptions{NoCompression: !s.config().RDBCompression}
}

// dumpValue returns the DUMP payload of a value. A cuckoo filter is encoded under its value's
// mutex (its writes wait; it moves fingerprints); a Bloom filter's bits are read while adds go
// on, as snapshots read them. The payload's memory (at most the value's size and a few bytes
// per sub-filter, compressed or not) is charged to the memory ceiling while it is built.
func (s *Server) dumpValue(v any, opts *rdb.WriterOptions) ([]byte, error) {
	charge := valueMem(v) + 1<<10
	if err := s.chargeRepl(charge); err != nil {
		return nil, &dumpRefusal{err}
	}
	defer s.chargeRepl(-charge)
	switch v := v.(type) {
	case *stringValue:
		v.RLock()
		defer v.RUnlock()
		return rdb.DumpString(v.Bytes(), opts)
	case *hashValue:
		v.RLock()
		defer v.RUnlock()
		fields := make([]rdb.HashField, 0, v.Len())
		v.Each(func(name string, val []byte) {
			fields = append(fields, rdb.HashField{Field: []byte(name), Value: val})
		})
		return rdb.DumpHash(fields, opts)
	case *bloomValue:
		return rdb.DumpChain(v.ch, opts)
	case *cuckooValue:
		v.mu.Lock()
		defer v.mu.Unlock()
		return rdb.DumpCuckoo(v.cf, opts)
	}
	return nil, fmt.Errorf("a value of type %T cannot be dumped", v)
}

// A dumpRefusal is the memory ceiling refusing the memory of a payload.
type dumpRefusal struct{ err error }

func (e *dumpRefusal) Error() string {
	return "Insufficient memory to dump the value: " + e.err.Error()
}
func (e *dumpRefusal) Unwrap() error { return e.err }

func dumpCmd(c *Conn, args [][]byte) {
	e := c.get(args[1])
	if e == nil {
		c.w.Null()
		return
	}
	p, err := c.srv.dumpValue(e.val, c.srv.dumpOpts())
	if err != nil {
		c.w.Error("ERR " + oneLine(err.Error()))
		return
	}
	c.w.Bulk(p)
}

// restoreEntry makes an entry for key holding the value a DUMP payload decodes to, its memory
// charged (filters through their Reserve hooks, so a filter that does not fit is refused before
// its bits are allocated). It returns the error reply on failure.
func (s *Server) restoreEntry(key []byte, v *rdb.Entry) (*entry, string) {
	switch v.Kind {
	case rdb.KindString:
		b, err := v.ReadString()
		if err != nil {
			return nil, errBadDumpValue
		}
		e := newStringEntry(key, b)
		if !s.ks.reserve(e.mem.Load()+valueMem(e.val), s.memLimitBytes()) {
			s.stats.oom.Add(1)
			return nil, errOOM
		}
		return e, ""
	case rdb.KindHash:
		fields, err := v.ReadHash()
		if err != nil || len(fields) == 0 {
			return nil, errBadDumpValue
		}
		hv := value.NewHash()
		for _, f := range fields {
			hv.Set(f.Field, f.Value, hashLimits)
		}
		e := &entry{key: string(key), val: hv}
		e.mem.Store(int64(keyOverhead + len(key)))
		if !s.ks.reserve(e.mem.Load()+valueMem(e.val), s.memLimitBytes()) {
			s.stats.oom.Add(1)
			return nil, errOOM
		}
		return e, ""
	case rdb.KindBloom:
		var decodeErr error
		e, msg := s.newBloomEntry(key, true, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
			ch, err := v.ReadChain(o)
			decodeErr = err
			return ch, err
		})
		if e == nil && isBadPayload(decodeErr) {
			return nil, errBadDumpValue
		}
		return e, msg
	case rdb.KindCuckoo:
		var decodeErr error
		e, msg := s.newCuckooEntry(key, true, 0, func(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
			cf, err := v.ReadCuckoo(o)
			decodeErr = err
			return cf, err
		})
		if e == nil && isBadPayload(decodeErr) {
			return nil, errBadDumpValue
		}
		return e, msg
	}
	return nil, errBadDumpValue + ": a " + rdb.TypeName(v.Type) + ", a type bloomd does not hold"
}

// isBadPayload reports whether decoding a payload failed on its data rather than on memory.
func isBadPayload(err error) bool {
	return err != nil && (errors.Is(err, rdb.ErrCorrupt) || errors.Is(err, bloom.ErrCorrupt) || errors.Is(err, bloom.ErrInvalidParameter))
}

// dropEntry gives back the memory of an entry that was made but not published.
func (s *Server) dropEntry(e *entry) {
	s.ks.used.Add(-e.mem.Load() - valueMem(e.val))
}

// restoreCmd implements RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
// [FREQ frequency], and RESTORE-ASKING. The payload is decoded into a new value while other
// commands run; only replacing the key runs alone. The journal records the command as Redis
// propagates it: the TTL made absolute (with ABSTTL), or DEL when REPLACE removed a key and the
// TTL had already passed. IDLETIME and FREQ are checked as Redis checks them and then ignored:
// bloomd never evicts, so it keeps no access times or frequencies.
func restoreCmd(c *Conn, args [][]byte) {
	var replace, absTTL bool
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case equalFold(args[j], "replace"):
			replace = true
		case equalFold(args[j], "absttl"):
			absTTL = true
		case equalFold(args[j], "idletime") && more >= 1 && freq == -1:
			n, ok := resp.ParseInt(args[j+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if n < 0 {
				c.w.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = n
			j++
		case equalFold(args[j], "freq") && more >= 1 && idle == -1:
			n, ok := resp.ParseInt(args[j+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if n < 0 || n > 255 {
				c.w.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = n
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	key := args[1]
	if !replace && c.get(key) != nil {
		c.w.Error(errBusyKey)
		return
	}
	ttl, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if ttl < 0 {
		c.w.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	v, err := rdb.ReadDump(args[3], rdb.Version70)
	switch {
	case errors.Is(err, rdb.ErrDumpPayload):
		c.w.Error(errDumpPayload)
		return
	case errors.Is(err, rdb.ErrUnsupported):
		var ue *rdb.UnsupportedError
		errors.As(err, &ue)
		c.w.Error(errBadDumpValue + ": a " + ue.Type + ", a type bloomd does not hold")
		return
	case err != nil:
		c.w.Error(errBadDumpValue)
		return
	}
	e, msg := c.srv.restoreEntry(key, v)
	if e == nil {
		c.w.Error(msg)
		return
	}
	now := nowMs()
	if ttl != 0 && !absTTL {
		ttl += now
	}
	// Redis's checkAlreadyExpired: while a log is replayed, or on a replica, the key is made
	// and expires later, as the primary's DEL or the expiry cycle says.
	expired := ttl != 0 && ttl <= now && !c.srv.ks.loading.Load() && !c.replApplier
	c.runExclusive(func() {
		sh, old := c.lockForCreate(key)
		defer sh.mu.Unlock()
		if old != nil && !replace {
			c.srv.dropEntry(e) // created by another client while the payload was decoded
			c.w.Error(errBusyKey)
			return
		}
		if old != nil {
			c.srv.ks.removeLocked(sh, old)
		}
		if expired {
			c.srv.dropEntry(e)
			if old != nil {
				c.propagateCmd([]byte("DEL"), key)
			}
			c.w.OK()
			return
		}
		e.expire.Store(ttl)
		c.srv.ks.insertLocked(sh, e)
		record := args
		if ttl != 0 && !absTTL {
			record = append([][]byte{args[0], key, strconv.AppendInt(nil, ttl, 10)}, args[3:]...)
			record = append(record, []byte("ABSTTL"))
		}
		c.propagate(record)
		c.w.OK()
	})
}
