package server

import (
	"sync"

	"github.com/bloomd/bloom/internal/cluster"
)

// A slotIndex lists the keys of each hash slot, for a cluster node: CLUSTER COUNTKEYSINSLOT
// and GETKEYSINSLOT, the keys a slot migration moves, and those deleted when a slot is lost.
// As Redis's, it is a doubly linked list through the entries of each slot, so adding and
// removing a key costs a few pointer writes and no allocation. A key is added under its
// shard's write lock and removed while nothing else runs (see keyspace); since two shards can
// add keys of one slot at once, each slot's list is also guarded by one of 64 locks.
type slotIndex struct {
	locks [64]sync.Mutex
	head  [cluster.Slots]*entry
	count [cluster.Slots]int64
}

func (x *slotIndex) lock(slot int) *sync.Mutex { return &x.locks[slot%len(x.locks)] }

func (x *slotIndex) add(e *entry) {
	slot := cluster.KeySlot([]byte(e.key))
	e.slot = uint16(slot)
	mu := x.lock(slot)
	mu.Lock()
	e.slotPrev, e.slotNext = nil, x.head[slot]
	if e.slotNext != nil {
		e.slotNext.slotPrev = e
	}
	x.head[slot] = e
	x.count[slot]++
	mu.Unlock()
}

func (x *slotIndex) remove(e *entry) {
	slot := int(e.slot)
	mu := x.lock(slot)
	mu.Lock()
	if e.slotPrev != nil {
		e.slotPrev.slotNext = e.slotNext
	} else if x.head[slot] == e {
		x.head[slot] = e.slotNext
	}
	if e.slotNext != nil {
		e.slotNext.slotPrev = e.slotPrev
	}
	e.slotPrev, e.slotNext = nil, nil
	x.count[slot]--
	mu.Unlock()
}

// countIn returns the number of keys in slot.
func (x *slotIndex) countIn(slot int) int {
	mu := x.lock(slot)
	mu.Lock()
	defer mu.Unlock()
	return int(x.count[slot])
}

// keysIn returns up to n keys of slot, most recently added first.
func (x *slotIndex) keysIn(slot, n int) []string {
	mu := x.lock(slot)
	mu.Lock()
	defer mu.Unlock()
	keys := make([]string, 0, min(n, int(x.count[slot])))
	for e := x.head[slot]; e != nil && len(keys) < n; e = e.slotNext {
		keys = append(keys, e.key)
	}
	return keys
}
