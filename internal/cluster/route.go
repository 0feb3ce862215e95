package cluster

import (
	"strconv"
)

// A Route is the part of the cluster's state that decides where a command's keys are served:
// a snapshot made after each change, read with one atomic load per command, so that the check
// costs the hot path no lock.
type Route struct {
	ok            bool // the cluster state is ok
	readsWhenDown bool
	shardWhenDown bool
	replica       bool  // this node is a replica
	me            int16 // this node's index in nodes
	myPrimary     int16 // its primary's, -1 if none or unknown
	owner         [Slots]int16
	migrating     [Slots]int16 // -1 unless this node migrates the slot, to that node
	importing     SlotBitmap
	nodes         []routeNode
}

type routeNode struct {
	endpoint string
	port     int
}

// publishRoute rebuilds the route snapshot if something it holds changed.
func (c *Cluster) publishRoute() {
	if !c.routeDirty {
		return
	}
	c.routeDirty = false
	r := &Route{
		ok:            c.state == stateOK,
		readsWhenDown: c.cfg.AllowReadsWhenDown,
		shardWhenDown: c.cfg.AllowPubsubShardWhenDown,
		replica:       c.myself.isReplica(),
		myPrimary:     -1,
	}
	idx := make(map[*node]int16, len(c.order))
	index := func(n *node) int16 {
		if n == nil {
			return -1
		}
		if i, ok := idx[n]; ok {
			return i
		}
		i := int16(len(r.nodes))
		idx[n] = i
		r.nodes = append(r.nodes, routeNode{endpoint: c.endpoint(n), port: n.port})
		return i
	}
	r.me = index(c.myself)
	r.myPrimary = index(c.myself.primary)
	for i := range Slots {
		r.owner[i] = index(c.slots[i])
		r.migrating[i] = -1
		if c.slots[i] == c.myself && c.migratingTo[i] != nil {
			r.migrating[i] = index(c.migratingTo[i])
		}
		if c.importingFrom[i] != nil {
			r.importing.Set(i)
		}
	}
	c.route.Store(r)
}

// Route returns the current routing snapshot. It is never nil and never changes.
func (c *Cluster) Route() *Route { return c.route.Load() }

// A Query gathers the keys of a command (or of a transaction's commands) for Route.Check.
// The zero Query is ready; Reset makes it ready again. It keeps the keys, which must stay valid
// until Check.
type Query struct {
	n        int
	slot     int
	first    []byte
	multiple bool // keys other than the first
	cross    bool
	keys     [][]byte
	small    [4][]byte
}

// Reset empties q.
func (q *Query) Reset() {
	clear(q.small[:])
	*q = Query{keys: q.keys[:0]}
}

// Add adds a key.
func (q *Query) Add(key []byte) {
	if q.cross {
		return
	}
	if q.n == 0 {
		q.first = key
		q.slot = KeySlot(key)
	} else if string(key) != string(q.first) {
		if KeySlot(key) != q.slot {
			q.cross = true
			return
		}
		q.multiple = true
	}
	if q.n < len(q.small) {
		q.small[q.n] = key
	} else {
		if q.n == len(q.small) {
			q.keys = append(q.keys[:0], q.small[:]...)
		}
		q.keys = append(q.keys, key)
	}
	q.n++
}

// Len returns the number of keys added.
func (q *Query) Len() int { return q.n }

// Slot returns the slot of the keys.
func (q *Query) Slot() int { return q.slot }

func (q *Query) key(i int) []byte {
	if q.n <= len(q.small) {
		return q.small[i]
	}
	return q.keys[i]
}

// What a command is, for Check.
type CommandKind struct {
	Write    bool // a write command (or a transaction with one)
	Asking   bool // the client sent ASKING, or the command is RESTORE-ASKING
	ReadOnly bool // the client sent READONLY
	Migrate  bool // MIGRATE, which works on an open slot locally
	Shard    bool // a shard channel command (SPUBLISH, SSUBSCRIBE)
}

// Check decides whether this node serves the keys of q (getNodeByQuery) and returns "" if it
// does, or the error to answer: -CROSSSLOT, -TRYAGAIN, -CLUSTERDOWN, -MOVED or -ASK, with
// Redis 7.0's texts. exists tells whether a key is here, asked only for a slot being migrated
// or imported. A query without keys is always served.
func (r *Route) Check(q *Query, k CommandKind, exists func(key []byte) bool) string {
	if q.cross {
		return "CROSSSLOT Keys in request don't hash to the same slot"
	}
	if q.n == 0 {
		return ""
	}
	slot := q.slot
	owner := r.owner[slot]
	if owner < 0 {
		return "CLUSTERDOWN Hash slot not served"
	}
	migrating := owner == r.me && r.migrating[slot] >= 0
	importing := !migrating && r.importing.Has(slot)
	missing, existing := 0, 0
	if (migrating || importing) && !k.Shard {
		for i := range q.n {
			if exists(q.key(i)) {
				existing++
			} else {
				missing++
			}
		}
	}
	if !r.ok {
		switch {
		case k.Shard:
			if !r.shardWhenDown {
				return "CLUSTERDOWN The cluster is down"
			}
		case !r.readsWhenDown:
			return "CLUSTERDOWN The cluster is down"
		case k.Write:
			return "CLUSTERDOWN The cluster is down and only accepts read commands"
		}
	}
	if (migrating || importing) && k.Migrate {
		return ""
	}
	if migrating && missing > 0 {
		if existing > 0 {
			return "TRYAGAIN Multiple keys request during rehashing of slot"
		}
		return r.redirect("ASK", slot, r.migrating[slot])
	}
	if importing && k.Asking {
		if q.multiple && missing > 0 {
			return "TRYAGAIN Multiple keys request during rehashing of slot"
		}
		return ""
	}
	if (k.ReadOnly || k.Shard) && !k.Write && r.replica && r.myPrimary == owner {
		return ""
	}
	if owner != r.me {
		return r.redirect("MOVED", slot, owner)
	}
	return ""
}

func (r *Route) redirect(kind string, slot int, to int16) string {
	n := &r.nodes[to]
	return kind + " " + strconv.Itoa(slot) + " " + n.endpoint + ":" + strconv.Itoa(n.port)
}

// Down returns the error for a command blocked on keys while the cluster is down, "" if up.
func (r *Route) Down() string {
	if r.ok {
		return ""
	}
	return "CLUSTERDOWN The cluster is down"
}

// Serves reports whether this node serves slot (it owns it, or, for a read-only client of a
// replica, its primary does).
func (r *Route) Serves(slot int, readOnly bool) bool {
	o := r.owner[slot]
	return o == r.me || readOnly && r.replica && o == r.myPrimary && o >= 0
}
