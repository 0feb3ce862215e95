package server

import "github.com/bloomd/bloom/internal/pubsub"

// Keyspace notifications (notify-keyspace-events; internal/pubsub's Notify): Redis 7.0's
// classes and event names for the generic, string, bitmap, hash, expiry and new-key events, and
// for filters the event names of valkey-bloom, under the module class (d):
//
//	bloom.reserve   a Bloom filter was created (BF.RESERVE, or an add that created it)
//	bloom.add       a Bloom filter gained at least one item (BF.ADD, BF.MADD, BF.INSERT)
//	cuckoo.reserve  a cuckoo filter was created
//	cuckoo.add      a cuckoo filter gained an item (CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX)
//	cuckoo.del      an item was removed from a cuckoo filter (CF.DEL)
//
// An add that creates its filter publishes new, then *.reserve, then *.add.
//
// A handler publishes its events where its journal record is written, under the same lock, so
// for each key the events come in the order of the changes. They are not derived from the
// records themselves: some records are rewritten so that they replay exactly over a snapshot
// taken while clients go on (BITFIELD as the values it wrote, BITOP as a SET of its result,
// HINCRBYFLOAT as HSET), one record can stand for several events (an add that creates its
// filter), and an event can have no record (keymiss). A replica applies the stream through the
// same handlers and so publishes the events of the commands it applies, as a Redis replica does.

// Notification classes, for the handlers.
const (
	evGeneric = pubsub.Generic
	evString  = pubsub.String
	evHash    = pubsub.Hash
	evExpired = pubsub.Expired
	evMiss    = pubsub.KeyMiss
	evModule  = pubsub.Module
)

// notify publishes event of class on key, if notify-keyspace-events enables it. A key created
// by the command (see keyCreated) has its "new" event published first.
func (c *Conn) notify(class pubsub.Classes, event string, key []byte) {
	on := pubsub.Classes(c.srv.notifyOn.Load())
	if c.newKey != nil {
		k := c.newKey
		c.newKey = nil
		if on&pubsub.NewKey != 0 {
			c.srv.hub.Notify(on, pubsub.NewKey, "new", k, 0, c)
		}
	}
	if on&class != 0 {
		c.srv.hub.Notify(on, class, event, key, 0, c)
	}
}

// keyCreated records that the command created key: its "new" event is published before the
// command's next event, or by flushNew.
func (c *Conn) keyCreated(key []byte) { c.newKey = key }

// flushNew publishes a pending "new" event, for a command that created a key and has no event
// of its own to publish (a BITFIELD whose writes all failed).
func (c *Conn) flushNew() {
	if c.newKey != nil {
		c.notify(0, "", nil)
	}
}

// keyMiss publishes a read's miss of key (class m), as Redis's lookups for reading do.
func (c *Conn) keyMiss(key []byte) {
	if pubsub.Classes(c.srv.notifyOn.Load())&pubsub.KeyMiss != 0 {
		c.notify(evMiss, "keymiss", key)
	}
}

// notify publishes an event that no connection caused (an expiry found by the cron).
func (s *Server) notify(class pubsub.Classes, event string, key []byte) {
	if on := pubsub.Classes(s.notifyOn.Load()); on&class != 0 {
		s.hub.Notify(on, class, event, key, 0, nil)
	}
}
