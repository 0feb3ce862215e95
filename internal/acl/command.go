package acl

import (
	"math/bits"
	"sort"
	"strings"
)

// A Category is a set of ACL categories, one bit each.
type Category uint32

// The categories, in Redis 7.0's order (which ACL CAT, COMMAND INFO and the rendering of rules
// follow), then @bloom and @cuckoo.
const (
	CatKeyspace Category = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
	CatBloom
	CatCuckoo
	numCategories = iota
)

var categoryNames = [numCategories]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting", "bloom", "cuckoo",
}

// CategoryNames returns the names of every category in ACL CAT's order.
func CategoryNames() []string { return append([]string(nil), categoryNames[:]...) }

// CategoryByName returns the category named name (without '@'), in any case, or 0.
func CategoryByName(name string) Category {
	for i, n := range categoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

// Names returns the categories of c in ACL CAT's order, each with a leading '@'.
func (c Category) Names() []string {
	var out []string
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, "@"+n)
		}
	}
	return out
}

// KeyFlags are the flags of a key spec, as COMMAND INFO shows them.
type KeyFlags uint16

const (
	KeyRO            KeyFlags = 1 << iota // read only
	KeyRW                                 // read and write
	KeyOW                                 // overwrite
	KeyRM                                 // remove
	KeyAccess                             // returns, copies or uses the value
	KeyUpdate                             // updates the value
	KeyInsert                             // adds data, never changes or deletes any
	KeyDelete                             // deletes the key or some of its content
	KeyIncomplete                         // the spec may miss keys (MIGRATE's KEYS)
	KeyVariableFlags                      // the flags depend on the arguments
)

var keyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "incomplete", "variable_flags"}

// Names returns the flags as COMMAND INFO writes them.
func (f KeyFlags) Names() []string {
	var out []string
	for i, n := range keyFlagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// perm is the permission a key of these flags needs: read for access, write for update,
// insert or delete, nothing for a key whose value is not used (EXISTS, TYPE).
func (f KeyFlags) perm() uint8 {
	var p uint8
	if f&KeyAccess != 0 {
		p |= permRead
	}
	if f&(KeyUpdate|KeyInsert|KeyDelete) != 0 {
		p |= permWrite
	}
	return p
}

// A KeySpec locates key arguments in Redis 7.0's "index" + "range" form: the first key is the
// argument at Index (argv[0] is the command name), the last is at Index+LastKey if LastKey >= 0
// or at len(args)+LastKey if negative, every KeyStep-th argument between them.
//
// With KeyNum set the spec is Redis's "keynum" form instead (EVAL's): the argument at Index
// holds the number of keys, which start FirstKey arguments after it, every KeyStep-th. With
// Keyword set the search begins as Redis's "keyword" begin_search does: the first key follows
// the argument equal to Keyword, looked for from StartFrom (from the end when negative), and
// Index is not used.
type KeySpec struct {
	Flags     KeyFlags
	Index     int
	LastKey   int
	KeyStep   int
	Notes     string
	KeyNum    bool
	FirstKey  int
	Keyword   string
	StartFrom int
}

// ChannelArgs says which arguments of a command are publish/subscribe channels.
type ChannelArgs uint8

const (
	NoChannels     ChannelArgs = iota
	PublishChannel             // argument 1 is a channel published to (PUBLISH)
	SubscribeAll               // every argument from 1 is a channel subscribed to (SUBSCRIBE)
	PatternAll                 // every argument from 1 is a channel pattern (PSUBSCRIBE)
)

// A Spec describes one command to NewTable.
type Spec struct {
	// Name is the lower-case full name: "get", or "config|get" for a subcommand, whose
	// container must also be given.
	Name       string
	Categories Category
	KeySpecs   []KeySpec
	Channels   ChannelArgs
	// NoAuth commands (AUTH, HELLO, QUIT) may be run by every user, as in Redis.
	NoAuth bool
}

// A Command is one entry of a Table.
type Command struct {
	Spec
	ID     int
	Parent *Command
	Subs   []*Command // sorted by name
	// setGet marks SET, whose key is also read when a GET argument is given.
	setGet bool
	// migrate marks MIGRATE, whose keys are found as Redis's migrateGetKeys finds them (its
	// key specs are incomplete).
	migrate bool
}

// A Table is the set of commands the ACL system knows, each with an ID. It is read-only once
// made and safe for concurrent use.
type Table struct {
	cmds   []*Command // by ID
	top    []*Command // top-level commands sorted by name
	byName map[string]*Command
	match  func(pattern, s []byte) bool
	catMap [numCategories][]uint64 // the IDs in each category, as bitmaps
	words  int                     // bitmap words, room for every ID and the future-commands bit
}

// NewTable builds a table from specs; match is the glob matcher for key and channel patterns
// (Redis's stringmatchlen semantics). A subcommand's container must be among the specs.
func NewTable(specs []Spec, match func(pattern, s []byte) bool) *Table {
	t := &Table{byName: make(map[string]*Command, len(specs)), match: match}
	sorted := append([]Spec(nil), specs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, s := range sorted {
		c := &Command{Spec: s, ID: len(t.cmds), setGet: s.Name == "set", migrate: s.Name == "migrate"}
		t.cmds = append(t.cmds, c)
		t.byName[s.Name] = c
	}
	for _, c := range t.cmds {
		if i := strings.IndexByte(c.Name, '|'); i >= 0 {
			p := t.byName[c.Name[:i]]
			if p == nil {
				panic("acl: subcommand " + c.Name + " without its container")
			}
			c.Parent = p
			p.Subs = append(p.Subs, c)
		} else {
			t.top = append(t.top, c)
		}
	}
	t.words = (len(t.cmds) + 1 + 63) / 64
	for i := range t.catMap {
		t.catMap[i] = make([]uint64, t.words)
		for _, c := range t.cmds {
			if c.Categories&(1<<i) != 0 {
				t.catMap[i][c.ID/64] |= 1 << (c.ID % 64)
			}
		}
	}
	return t
}

// futureID is the bitmap position that +@all sets: the user may run commands not in the table.
func (t *Table) futureID() int { return len(t.cmds) }

// Lookup returns the command named name ("get", "config|get"), in any case, or nil.
func (t *Table) Lookup(name string) *Command { return t.byName[strings.ToLower(name)] }

// ByID returns the command with the given ID.
func (t *Table) ByID(id int) *Command { return t.cmds[id] }

// InCategory returns the full names of the commands in category cat, in table order.
func (t *Table) InCategory(cat Category) []string {
	var out []string
	var walk func([]*Command)
	walk = func(cs []*Command) {
		for _, c := range cs {
			if c.Categories&cat != 0 {
				out = append(out, c.Name)
			}
			walk(c.Subs)
		}
	}
	walk(t.top)
	return out
}

// countCat counts the commands of category i that the bitmap allows (on) and denies (off).
func (t *Table) countCat(bm []uint64, i int) (on, off int) {
	for w, cw := range t.catMap[i] {
		on += bits.OnesCount64(bm[w] & cw)
		off += bits.OnesCount64(^bm[w] & cw)
	}
	return on, off
}

// Range returns the first and last argument index and the step of the keys ks locates in a
// command's arguments (args[0] the command's name); first > last when it names none. The
// cluster's routing reads every command's keys this way.
func (ks *KeySpec) Range(args [][]byte) (first, last, step int) { return keyRange(ks, args) }

// keyRange returns the first and last argument index and the step of key spec ks for a command
// of n arguments; first > last when the spec names no argument.
func keyRange(ks *KeySpec, args [][]byte) (first, last, step int) {
	n := len(args)
	if ks.KeyNum {
		// No keys when the number is not one, or the keys would pass the arguments: the
		// command itself then fails (Redis's invalid key spec).
		if ks.Index >= n {
			return 1, 0, 1
		}
		num, ok := parseCount(args[ks.Index])
		step = max(ks.KeyStep, 1)
		first = ks.Index + ks.FirstKey
		if !ok || num <= 0 || num > n || first+(num-1)*step >= n {
			return 1, 0, step
		}
		return first, first + (num-1)*step, step
	}
	first = ks.Index
	last = first + ks.LastKey
	if ks.LastKey < 0 {
		last = n + ks.LastKey
	}
	if last >= n {
		last = n - 1
	}
	return first, last, max(ks.KeyStep, 1)
}

// parseCount parses a non-negative decimal count as Redis's string2ll would accept it.
func parseCount(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// MigrateKeys returns the index in args of MIGRATE's first key and the number of its keys, as
// Redis 7.0's migrateGetKeys finds them: argument 3, or with a KEYS option (looked for from
// argument 6 on, stepping over AUTH's and AUTH2's arguments) every argument after it, and no
// key when KEYS comes with a key in argument 3.
func MigrateKeys(args [][]byte) (first, n int) {
	if len(args) < 4 {
		return 0, 0
	}
	first, n = 3, 1
	for i := 6; i < len(args); i++ {
		switch {
		case equalFold(args[i], "keys"):
			if len(args[3]) > 0 {
				return 0, 0
			}
			return i + 1, len(args) - i - 1
		case equalFold(args[i], "auth"):
			i++
		case equalFold(args[i], "auth2"):
			i += 2
		}
	}
	return first, n
}

// keyFlags returns the flags of spec ks for these arguments: SET's key is read only when a GET
// argument is given, as Redis's setGetKeys decides.
func (c *Command) keyFlags(ks *KeySpec, args [][]byte) KeyFlags {
	f := ks.Flags
	if c.setGet {
		if len(args) > 3 && hasGet(args) {
			f |= KeyAccess
		} else {
			f &^= KeyAccess
		}
	}
	return f
}

func hasGet(args [][]byte) bool {
	for _, a := range args[3:] {
		if len(a) == 3 && a[0]|0x20 == 'g' && a[1]|0x20 == 'e' && a[2]|0x20 == 't' {
			return true
		}
	}
	return false
}
