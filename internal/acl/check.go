package acl

// A Result is the outcome of Check.
type Result uint8

const (
	Allowed       Result = iota
	DeniedCommand        // the user may not run the command
	DeniedKey            // the user may not access one of the keys
	DeniedChannel        // the user may not use one of the channels
	DeniedAuth           // authentication failed (for the log and counters; Check never returns it)
)

// Check reports whether u may run command c with args (args[0] is the command's name; for a
// subcommand args[1] is the subcommand's) and, if not, why and the index in args of the key or
// channel refused (0 for DeniedCommand). It follows Redis 7.0's ACLSelectorCheckCmd: the
// command bit (or an allowed first argument), then every key the command's key specs locate
// against the patterns with the permission the spec needs, then the channels of PUBLISH,
// SUBSCRIBE and PSUBSCRIBE. It does not allocate and is safe for concurrent use.
func (u *User) Check(c *Command, args [][]byte) (Result, int) {
	if u.all {
		return Allowed, 0
	}
	if !u.allCommands && !c.NoAuth && !u.bit(c.ID) && !u.firstArgOK(c, args) {
		return DeniedCommand, 0
	}
	if !u.allKeys && c.migrate {
		first, n := MigrateKeys(args)
		for k := first; k < first+n; k++ {
			if !u.keyOK(args[k], c.KeySpecs[0].Flags.perm()) {
				return DeniedKey, k
			}
		}
	} else if !u.allKeys {
		for i := range c.KeySpecs {
			ks := &c.KeySpecs[i]
			first, last, step := keyRange(ks, args)
			if first > last {
				continue
			}
			need := c.keyFlags(ks, args).perm()
			for k := first; k <= last; k += step {
				if !u.keyOK(args[k], need) {
					return DeniedKey, k
				}
			}
		}
	}
	if !u.allChannels && c.Channels != NoChannels {
		last := len(args) - 1
		if c.Channels == PublishChannel {
			last = min(last, 1)
		}
		for k := 1; k <= last; k++ {
			if !u.channelOK(args[k], c.Channels == PatternAll) {
				return DeniedChannel, k
			}
		}
	}
	return Allowed, 0
}

func (u *User) firstArgOK(c *Command, args [][]byte) bool {
	if len(args) < 2 || u.firstArgs == nil {
		return false
	}
	for _, a := range u.firstArgs[c.ID] {
		if equalFold(args[1], a) {
			return true
		}
	}
	return false
}

func (u *User) keyOK(key []byte, need uint8) bool {
	for i := range u.keys {
		k := &u.keys[i]
		if k.perm&need == need && u.t.match(stringBytes(k.pat), key) {
			return true
		}
	}
	return false
}

func (u *User) channelOK(ch []byte, pattern bool) bool {
	for _, p := range u.channels {
		if pattern && p == string(ch) || !pattern && u.t.match(stringBytes(p), ch) {
			return true
		}
	}
	return false
}

// CheckKey reports whether u may access key with the permission that flags need (as Redis's
// ACLUserCheckKeyPerm).
func (u *User) CheckKey(key []byte, flags KeyFlags) bool {
	return u.allKeys || u.keyOK(key, flags.perm())
}

// CheckChannel reports whether u may use channel ch; pattern is set for a PSUBSCRIBE pattern,
// which must equal one of u's channel patterns.
func (u *User) CheckChannel(ch []byte, pattern bool) bool {
	return u.allChannels || u.channelOK(ch, pattern)
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
