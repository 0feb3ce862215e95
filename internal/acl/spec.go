package acl

import "strings"

// Traits are what the server's command table says of a command; DefaultSpec turns them into
// the command's ACL Spec.
type Traits struct {
	Write, Readonly, Admin, Fast, NoAuth bool
	// FirstKey, LastKey and Step are the legacy key positions (COMMAND INFO's 4th-6th fields).
	FirstKey, LastKey, Step int
}

// DefaultSpec returns the ACL spec of the command named name (lower case, "container|sub" for
// a subcommand): Redis 7.0's categories and key specs for the commands Redis has (read off a
// live redis-server 7.0); for BF.* and CF.* the categories that Redis 8 gives RedisBloom's
// commands, derived from their flags as Redis derives implicit categories (write -> @write,
// readonly -> @read, fast -> @fast else @slow, admin -> @admin @dangerous) plus @bloom or
// @cuckoo, and key specs that say what each does to its key.
func DefaultSpec(name string, tr Traits) Spec {
	s := Spec{Name: name, NoAuth: tr.NoAuth}
	switch name {
	case "publish":
		s.Channels = PublishChannel
	case "subscribe":
		s.Channels = SubscribeAll
	case "psubscribe":
		s.Channels = PatternAll
	}
	if rc, ok := redisCommands[name]; ok {
		for _, c := range strings.Fields(rc.cats) {
			s.Categories |= CategoryByName(c)
		}
		s.KeySpecs = rc.keys
		return s
	}
	if tr.Write {
		s.Categories |= CatWrite
	}
	if tr.Readonly {
		s.Categories |= CatRead
	}
	if tr.Admin {
		s.Categories |= CatAdmin | CatDangerous
	}
	if tr.Fast || strings.HasSuffix(name, ".reserve") {
		// RedisBloom under Redis 8 adds @fast to BF.RESERVE and CF.RESERVE explicitly.
		s.Categories |= CatFast
	} else {
		s.Categories |= CatSlow
	}
	switch {
	case strings.HasPrefix(name, "bf."):
		s.Categories |= CatBloom
	case strings.HasPrefix(name, "cf."):
		s.Categories |= CatCuckoo
	}
	if tr.FirstKey > 0 {
		var f KeyFlags
		switch {
		case strings.HasSuffix(name, ".reserve"):
			f = KeyRW | KeyInsert // creates the filter; refuses an existing key
		case name == "cf.del":
			f = KeyRW | KeyDelete
		case tr.Write:
			f = KeyRW | KeyUpdate // adds items, and says whether each was new
		case tr.Readonly:
			f = KeyRO | KeyAccess
		default:
			f = KeyRW | KeyAccess | KeyUpdate
		}
		last := tr.LastKey - tr.FirstKey
		if tr.LastKey < 0 {
			last = tr.LastKey
		}
		s.KeySpecs = []KeySpec{{Flags: f, Index: tr.FirstKey, LastKey: last, KeyStep: max(tr.Step, 1)}}
	}
	return s
}
