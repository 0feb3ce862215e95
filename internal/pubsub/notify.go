package pubsub

import "strconv"

// Keyspace notifications, as Redis 7.0's notify.c: a change to a key is published as its event
// name on "__keyspace@<db>__:<key>" (class K) and as the key on "__keyevent@<db>__:<event>"
// (class E), if the event's class is among the settings of notify-keyspace-events.

// Classes is a set of notification classes: the letters of notify-keyspace-events.
type Classes uint32

// The classes, with Redis 7.0's bits.
const (
	Keyspace Classes = 1 << 0  // K
	Keyevent Classes = 1 << 1  // E
	Generic  Classes = 1 << 2  // g: DEL, EXPIRE, RENAME, ...
	String   Classes = 1 << 3  // $
	List     Classes = 1 << 4  // l
	Set      Classes = 1 << 5  // s
	Hash     Classes = 1 << 6  // h
	ZSet     Classes = 1 << 7  // z
	Expired  Classes = 1 << 8  // x
	Evicted  Classes = 1 << 9  // e
	Stream   Classes = 1 << 10 // t
	KeyMiss  Classes = 1 << 11 // m: reads of missing keys; not in A
	Module   Classes = 1 << 13 // d: the filters' events
	NewKey   Classes = 1 << 14 // n: keys created; not in A
	// All is "A": every class but m and n.
	All = Generic | String | List | Set | Hash | ZSet | Expired | Evicted | Stream | Module
)

// ParseClasses parses a notify-keyspace-events value; ok is false if it holds a character that
// names no class.
func ParseClasses(s string) (c Classes, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			c |= All
		case 'g':
			c |= Generic
		case '$':
			c |= String
		case 'l':
			c |= List
		case 's':
			c |= Set
		case 'h':
			c |= Hash
		case 'z':
			c |= ZSet
		case 'x':
			c |= Expired
		case 'e':
			c |= Evicted
		case 'K':
			c |= Keyspace
		case 'E':
			c |= Keyevent
		case 't':
			c |= Stream
		case 'm':
			c |= KeyMiss
		case 'd':
			c |= Module
		case 'n':
			c |= NewKey
		default:
			return 0, false
		}
	}
	return c, true
}

// String returns the classes as CONFIG GET shows them, in Redis's order ("AKE" for all).
func (c Classes) String() string {
	var b []byte
	if c&All == All {
		b = append(b, 'A')
	} else {
		for _, l := range []struct {
			c Classes
			l byte
		}{{Generic, 'g'}, {String, '$'}, {List, 'l'}, {Set, 's'}, {Hash, 'h'}, {ZSet, 'z'},
			{Expired, 'x'}, {Evicted, 'e'}, {Stream, 't'}, {Module, 'd'}, {NewKey, 'n'}} {
			if c&l.c != 0 {
				b = append(b, l.l)
			}
		}
	}
	if c&Keyspace != 0 {
		b = append(b, 'K')
	}
	if c&Keyevent != 0 {
		b = append(b, 'E')
	}
	if c&KeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}

// Notify publishes event (of class class) on key in database db, if on (the setting) enables
// the class and at least one of K and E; a subscriber that is from's connection gets it at once
// (see Publish).
func (h *Hub) Notify(on, class Classes, event string, key []byte, db int, from Subscriber) {
	if on&class == 0 {
		return
	}
	var buf [64]byte
	if on&Keyspace != 0 {
		ch := append(buf[:0], "__keyspace@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, key...)
		h.Publish(ch, []byte(event), from)
	}
	if on&Keyevent != 0 {
		ch := append(buf[:0], "__keyevent@"...)
		ch = strconv.AppendInt(ch, int64(db), 10)
		ch = append(ch, "__:"...)
		ch = append(ch, event...)
		h.Publish(ch, key, from)
	}
}
