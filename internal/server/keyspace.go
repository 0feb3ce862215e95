package server

import (
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/value"
)

// numShards is the number of independently locked parts of the keyspace: enough that the two
// cores rarely meet on one lock when creating keys, few enough that SCAN stays cheap.
const numShards = 256

// keyOverhead is what one key costs beyond its name and value in the memory accounting: the map
// slot, the entry and its locks.
const keyOverhead = 96

// A keyspace maps keys to entries. Lookups take a shard's read lock for the map access only,
// and creating a key its write lock. Removing a key (DEL, expiry, RENAME, FLUSHALL, SET over an
// existing key) is done only while no command is in flight (the server's gate), so a command
// that looked an entry up can use it, and journal what it did, without any lock: the entry stays
// in the keyspace until the command ends. Adds to a filter therefore take no lock at all.
type keyspace struct {
	seed   maphash.Seed
	shards [numShards]shard
	used   atomic.Int64  // charged bytes of every key and value
	gen    atomic.Uint64 // number of removals, for connections' memory of their last entry
	freed  atomic.Int64  // bytes of values removed since the last forced collection (memory.go)

	// loading suspends expiry while a journal is replayed (see Server.SetLoading) and while a
	// replica applies its primary's stream.
	loading atomic.Bool
	// replica is set while the server is a replica: its clients see a key whose time has
	// passed as gone, while the key stays for the primary's stream until its DEL arrives.
	replica atomic.Bool
	// replUsed is what replication holds against the memory ceiling besides the keyspace: the
	// backlog's chunks and the copies full syncs send (memory.go).
	replUsed atomic.Int64

	// exclusive, if set, reports whether the caller runs alone; removeLocked checks it.
	exclusive func() bool

	// slots, in cluster mode, lists the keys of each hash slot (slotindex.go).
	slots *slotIndex
}

type shard struct {
	mu  sync.RWMutex
	m   map[string]*entry
	vol map[*entry]struct{} // entries with an expiry time
	_   [64]byte
}

// An entry is one key. Its key and value never change while it is published (SET on an existing
// key replaces the entry); removing it drops a filter value, which must not be used after.
type entry struct {
	key    string
	val    any          // *bloomValue, *cuckooValue, *stringValue or *hashValue
	expire atomic.Int64 // absolute unix milliseconds; 0 means none
	mem    atomic.Int64 // charged bytes: keyOverhead and the key (a value charges its own)

	// In cluster mode, the key's hash slot and its neighbours in the slot's list (slotindex.go).
	slot               uint16
	slotPrev, slotNext *entry
}

// Strings (which the bitmap commands work on) and hashes are internal/value's types, changed in
// place under their own locks (cmd_string.go, cmd_hash.go).
type (
	stringValue = value.String
	hashValue   = value.Hash
)

// valueMem returns the bytes a value has charged beyond its entry's mem.
func valueMem(v any) int64 {
	switch v := v.(type) {
	case *bloomValue:
		return v.mem.Load()
	case *cuckooValue:
		return v.mem.Load()
	case *stringValue:
		return v.Charge()
	case *hashValue:
		return v.Charge()
	}
	return 0
}

func newKeyspace() *keyspace {
	ks := &keyspace{seed: maphash.MakeSeed()}
	for i := range ks.shards {
		ks.shards[i].m = make(map[string]*entry)
		ks.shards[i].vol = make(map[*entry]struct{})
	}
	return ks
}

func (ks *keyspace) shard(key []byte) *shard {
	return &ks.shards[maphash.Bytes(ks.seed, key)%numShards]
}

func nowMs() int64 { return time.Now().UnixMilli() }

// expired reports whether e's expiry time has passed at now (unix ms), as a client's command
// sees it. now < 0 asks for the clock only when e has an expiry. While a journal is replayed
// nothing expires. On a replica a key whose time has passed is gone for its clients but stays
// (nothing removes it but the primary's DEL), and the primary's stream still finds it (see
// Conn.expired), as Redis's replicas do (expireIfNeeded).
func (ks *keyspace) expired(e *entry, now int64) bool {
	t := e.expire.Load()
	if t == 0 || ks.loading.Load() && !ks.replica.Load() {
		return false
	}
	if now < 0 {
		now = nowMs()
	}
	return now >= t
}

// get returns the live entry for key, or nil if there is none or it has expired, as a client's
// command sees it (Conn.get is get for the connection running a command). The entry stays in the
// keyspace until the calling command ends (removals wait for it), so the command may use it, and
// journal what it did with it, without a lock.
func (ks *keyspace) get(key []byte) *entry {
	e := ks.lookup(key)
	if e == nil || ks.expired(e, -1) {
		return nil
	}
	return e
}

// lookup returns the entry for key, expired or not, or nil.
func (ks *keyspace) lookup(key []byte) *entry {
	sh := ks.shard(key)
	sh.mu.RLock()
	e := sh.m[string(key)]
	sh.mu.RUnlock()
	return e
}

// lockShard locks key's shard for writing and returns it with the entry for key (nil if none),
// expired or not.
func (ks *keyspace) lockShard(key []byte) (*shard, *entry) {
	sh := ks.shard(key)
	sh.mu.Lock()
	return sh, sh.m[string(key)]
}

// insertLocked publishes e under sh's write lock. Its memory (e.mem) must have been reserved.
func (ks *keyspace) insertLocked(sh *shard, e *entry) {
	sh.m[e.key] = e
	if ks.slots != nil {
		ks.slots.add(e)
	}
	if e.expire.Load() != 0 {
		sh.vol[e] = struct{}{}
	}
}

// reserve accounts n more bytes unless that would pass limit; it reports whether it did.
func (ks *keyspace) reserve(n, limit int64) bool {
	for {
		used := ks.used.Load()
		if n > 0 && (n > limit || used > limit-n) {
			return false
		}
		if ks.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// removeLocked unpublishes e under sh's write lock, while the server runs nothing else.
func (ks *keyspace) removeLocked(sh *shard, e *entry) {
	if ks.exclusive != nil && !ks.exclusive() {
		panic("server: a key removed while other commands may be using it")
	}
	ks.gen.Add(1)
	delete(sh.m, e.key)
	if ks.slots != nil {
		ks.slots.remove(e)
	}
	delete(sh.vol, e)
	ks.used.Add(-e.mem.Load() - valueMem(e.val))
	ks.freed.Add(valueMem(e.val))
	// Connections may still remember e (Conn.entry) until their next lookup; they no longer
	// use it (the removal count changed), and must not keep a filter from being collected.
	if _, ok := e.val.(*bloomValue); ok {
		e.val = nil
	}
}

// setExpireLocked sets e's expiry (0 removes it) under sh's write lock.
func (sh *shard) setExpireLocked(e *entry, at int64) {
	e.expire.Store(at)
	if at == 0 {
		delete(sh.vol, e)
	} else {
		sh.vol[e] = struct{}{}
	}
}

// count returns the number of keys, expired ones not yet removed included (as Redis's DBSIZE).
func (ks *keyspace) count() (keys, volatile int) {
	for i := range ks.shards {
		sh := &ks.shards[i]
		sh.mu.RLock()
		keys += len(sh.m)
		volatile += len(sh.vol)
		sh.mu.RUnlock()
	}
	return keys, volatile
}

// scanShard appends the live keys of shard i to dst, filtered by keep.
func (ks *keyspace) scanShard(i int, now int64, dst []string, keep func(e *entry) bool) []string {
	sh := &ks.shards[i]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	for k, e := range sh.m {
		if !ks.expired(e, now) && (keep == nil || keep(e)) {
			dst = append(dst, k)
		}
	}
	return dst
}

// expiredSample looks at up to n entries of shard i that have an expiry time and returns how
// many it looked at and those that have expired (Redis's active expiry samples the same way).
func (ks *keyspace) expiredSample(i, n int, dst []*entry) (looked int, dead []*entry) {
	sh := &ks.shards[i]
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	now := nowMs()
	for e := range sh.vol { // map iteration starts at a random place
		if looked == n {
			break
		}
		looked++
		if ks.expired(e, now) {
			dst = append(dst, e)
		}
	}
	return looked, dst
}

// randomShard returns a shard index to start a sampling round at.
func randomShard() int { return rand.IntN(numShards) }
