package value

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
)

// A Hash is a Redis hash: fields, each with a value, in the order they were first set (the order
// Redis keeps in a small hash, its listpack; a large hash in Redis has its hash table's order,
// which clients cannot rely on, and bloomd keeps insertion order there too).
//
// Like String, a Hash is not synchronized by itself: the server holds the embedded RWMutex's
// write lock across a change and its journal record, and its read lock to read. A snapshot may
// share the hash's fields (Snapshot) while writes go on: the first write after it copies the
// list of fields (not the fields, which never change once made). The zero Hash is not usable;
// call NewHash.
type Hash struct {
	sync.RWMutex
	index  map[string]int // field name -> position in order
	order  []slot         // in insertion order; deleted fields leave an empty slot
	dead   int            // empty slots in order
	seq    uint64         // the last sequence number given to a field
	large  bool           // past hash-max-listpack-entries or -value once: see Compact
	shared bool           // order is shared with a snapshot: copy it before a change
	mem    atomic.Int64
}

// A slot is a place in a hash's order: a field, or nil once the field is deleted. seq numbers
// the places in order, so that HSCAN can resume after the last field it returned even when the
// order has been compacted since.
type slot struct {
	f   *field
	seq uint64
}

type field struct {
	name string
	val  []byte
}

// fieldOverhead is what a field costs in the memory accounting beyond its name and value: the
// index's entry, the slot and the field's headers.
const fieldOverhead = 80

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{index: map[string]int{}} }

// Len returns the number of fields.
func (h *Hash) Len() int { return len(h.index) }

// Charge returns the bytes the hash has charged to the memory accounting. It may be called
// without the lock.
func (h *Hash) Charge() int64 { return h.mem.Load() }

// FieldCharge returns what a field of this name and value costs.
func FieldCharge(name, val []byte) int64 { return int64(fieldOverhead + len(name) + len(val)) }

// Get returns the value of field name; ok is false if there is none. The value must not be
// changed.
func (h *Hash) Get(name []byte) (val []byte, ok bool) {
	i, ok := h.index[string(name)]
	if !ok {
		return nil, false
	}
	return h.order[i].f.val, true
}

// own makes order the hash's own before a change, copying it if a snapshot shares it.
func (h *Hash) own() {
	if h.shared {
		h.order = append([]slot(nil), h.order...)
		h.shared = false
	}
}

// Set sets field name to val (kept, not copied) and reports whether the field is new. It
// returns the change of the hash's charge, which the caller has reserved (see SetCharge).
// Limits are hash-max-listpack-entries and -value: a hash that passes them once is large for
// good, as Redis converts it to a hash table.
func (h *Hash) Set(name, val []byte, lim Limits) (created bool, delta int64) {
	h.own()
	if len(name) > lim.Value || len(val) > lim.Value {
		h.large = true
	}
	if i, ok := h.index[string(name)]; ok {
		old := h.order[i].f
		h.order[i].f = &field{name: old.name, val: val}
		delta = int64(len(val) - len(old.val))
		h.mem.Add(delta)
		return false, delta
	}
	h.seq++
	n := string(name)
	h.index[n] = len(h.order)
	h.order = append(h.order, slot{f: &field{name: n, val: val}, seq: h.seq})
	if len(h.index) > lim.Entries {
		h.large = true
	}
	delta = FieldCharge(name, val)
	h.mem.Add(delta)
	return true, delta
}

// SetCharge returns how much Set(name, val) would add to the hash's charge (negative when a
// value shrinks).
func (h *Hash) SetCharge(name, val []byte) int64 {
	if i, ok := h.index[string(name)]; ok {
		return int64(len(val) - len(h.order[i].f.val))
	}
	return FieldCharge(name, val)
}

// Delete removes field name, reporting whether it was there, and returns the charge given
// back (negative).
func (h *Hash) Delete(name []byte) (bool, int64) {
	i, ok := h.index[string(name)]
	if !ok {
		return false, 0
	}
	h.own()
	f := h.order[i].f
	delete(h.index, f.name)
	h.order[i].f = nil
	h.dead++
	if h.dead > len(h.index) {
		h.compact()
	}
	delta := -FieldCharge([]byte(f.name), f.val)
	h.mem.Add(delta)
	return true, delta
}

// compact drops the empty slots, into a new slice (a snapshot may hold the old one).
func (h *Hash) compact() {
	order := make([]slot, 0, len(h.index))
	for _, s := range h.order {
		if s.f != nil {
			h.index[s.f.name] = len(order)
			order = append(order, s)
		}
	}
	h.order, h.dead = order, 0
}

// Each calls fn for every field in order.
func (h *Hash) Each(fn func(name string, val []byte)) {
	for _, s := range h.order {
		if s.f != nil {
			fn(s.f.name, s.f.val)
		}
	}
}

// Large reports whether the hash is past the listpack limits (Redis's hash table encoding):
// HSCAN then pages through it by cursor instead of returning it whole.
func (h *Hash) Large() bool { return h.large }

// Limits are hash-max-listpack-entries and hash-max-listpack-value.
type Limits struct{ Entries, Value int }

// DefaultLimits are Redis 7.0's defaults.
var DefaultLimits = Limits{Entries: 512, Value: 64}

// Random returns a random field ("" and nil for an empty hash, which no key holds).
func (h *Hash) Random() (name string, val []byte) {
	if len(h.index) == 0 {
		return "", nil
	}
	for {
		if s := h.order[rand.IntN(len(h.order))]; s.f != nil {
			return s.f.name, s.f.val
		}
	}
}

// RandomFields answers HRANDFIELD's count: with count >= 0, that many distinct fields (all of
// them, in order, when count reaches the hash's length); with count < 0, -count fields drawn
// with replacement.
func (h *Hash) RandomFields(count int64, fn func(name string, val []byte)) {
	n := int64(len(h.index))
	switch {
	case count < 0:
		for range -count {
			fn(h.Random())
		}
	case count >= n:
		h.Each(fn)
	default:
		// Choose count distinct fields: a partial shuffle of their positions.
		pos := make([]int, 0, n)
		for i, s := range h.order {
			if s.f != nil {
				pos = append(pos, i)
			}
		}
		for i := range int(count) {
			j := i + rand.IntN(len(pos)-i)
			pos[i], pos[j] = pos[j], pos[i]
			f := h.order[pos[i]].f
			fn(f.name, f.val)
		}
	}
}

// Scan answers HSCAN from cursor: for a small hash every field and cursor 0, as Redis does
// for a listpack; for a large one at least count fields from the cursor on (fewer at the end)
// and the cursor to go on from, 0 at the end. A field present for a whole iteration is
// returned exactly once; match, if not nil, filters the names.
func (h *Hash) Scan(cursor uint64, count int64, match func(name []byte) bool, fn func(name string, val []byte)) (next uint64) {
	emit := func(name string, val []byte) {
		if match == nil || match([]byte(name)) {
			fn(name, val)
		}
	}
	if !h.large {
		h.Each(emit)
		return 0
	}
	// The first slot at or after the cursor: slots are in increasing seq.
	lo, hi := 0, len(h.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.order[m].seq < cursor {
			lo = m + 1
		} else {
			hi = m
		}
	}
	seen := int64(0)
	i := lo
	for ; i < len(h.order) && seen < count; i++ {
		if f := h.order[i].f; f != nil {
			emit(f.name, f.val)
			seen++
		}
	}
	for i < len(h.order) && h.order[i].f == nil {
		i++
	}
	if i == len(h.order) {
		return 0
	}
	return h.order[i].seq
}

// Clone returns a copy of the hash (COPY's): the same fields and values in the same order, with
// the same HSCAN positions and the same charge. The fields themselves, which never change once
// made, are shared. It must be called under the hash's lock (or while nothing can change it).
func (h *Hash) Clone() *Hash {
	c := &Hash{index: make(map[string]int, len(h.index)), order: make([]slot, 0, len(h.index)), seq: h.seq, large: h.large}
	for _, s := range h.order {
		if s.f != nil {
			c.index[s.f.name] = len(c.order)
			c.order = append(c.order, s)
		}
	}
	c.mem.Store(h.mem.Load())
	return c
}

// A HashView is a hash's fields as of a snapshot: Snapshot shares them with the hash, which
// copies its list before its next change, so a view never changes.
type HashView struct {
	order []slot
	n     int
}

// Snapshot returns a view of the hash as it is now. It must be called under the hash's lock
// (or while nothing can change it), and the view may then be read without any lock.
func (h *Hash) Snapshot() HashView {
	h.shared = true
	return HashView{order: h.order, n: len(h.index)}
}

// Len returns the number of fields in the view.
func (v HashView) Len() int { return v.n }

// Each calls fn for every field of the view, in order.
func (v HashView) Each(fn func(name string, val []byte)) {
	for _, s := range v.order {
		if s.f != nil {
			fn(s.f.name, s.f.val)
		}
	}
}

// ParseCursor parses a SCAN-family cursor as Redis does (strtoul in base 10): decimal digits
// with an optional sign ("-1" is the largest cursor), no leading space, no trailing bytes, within
// 64 bits; the empty string is 0.
func ParseCursor(arg []byte) (uint64, bool) {
	s := arg
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
		if len(s) == 0 {
			return 0, false // strtoul reads no number: the sign is left over
		}
	}
	if len(s) == 0 {
		return 0, len(arg) == 0
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
