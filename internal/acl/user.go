package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/bloomd/bloom/internal/redact"
)

const (
	permRead  uint8 = 1
	permWrite uint8 = 2
	permAll         = permRead | permWrite
)

type keyPattern struct {
	pat  string
	perm uint8
}

// User flags, in the order ACL LIST shows them.
const (
	flagOn uint8 = 1 << iota
	flagOff
	flagNoPass
	flagSkipSanitize
	flagSanitize
)

var userFlagNames = []string{"on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload"}

// A User is one ACL user: its flags, password hashes and permissions. A User is immutable:
// SetUser returns a changed copy, so a *User may be read from any goroutine.
type User struct {
	t     *Table
	name  string
	flags uint8
	pass  [][sha256.Size]byte

	allKeys, allChannels, allCommands bool
	// all is the fast path of Check: every command, key and channel allowed.
	all       bool
	cmds      []uint64 // allowed command IDs; bit len(t.cmds) is "future commands" (+@all)
	firstArgs map[int][]string
	keys      []keyPattern
	channels  []string
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// Enabled reports whether the user may authenticate ("on").
func (u *User) Enabled() bool { return u.flags&flagOn != 0 }

// NoPass reports whether any password authenticates the user.
func (u *User) NoPass() bool { return u.flags&flagNoPass != 0 }

// newUser returns a user as Redis 7.0 creates one: off, no password, no command, key or
// channel (acl-pubsub-default resetchannels).
func (t *Table) newUser(name string) *User {
	return &User{t: t, name: name, flags: flagOff, cmds: make([]uint64, t.words)}
}

// NewDefaultUser returns the "default" user as Redis makes it: on, nopass, ~* &* +@all.
func (t *Table) NewDefaultUser() *User {
	u, err := t.newUser("default").SetUser([]string{"+@all", "~*", "&*", "on", "nopass"})
	if err != nil {
		panic(err)
	}
	return u
}

// NewUser returns a new user named name with rules applied, as ACL SETUSER does for a user that
// does not exist yet.
func (t *Table) NewUser(name string, rules []string) (*User, error) {
	return t.newUser(name).SetUser(rules)
}

func (u *User) clone() *User {
	v := *u
	v.pass = slices.Clone(u.pass)
	v.cmds = slices.Clone(u.cmds)
	v.keys = slices.Clone(u.keys)
	v.channels = slices.Clone(u.channels)
	if u.firstArgs != nil {
		v.firstArgs = make(map[int][]string, len(u.firstArgs))
		for k, a := range u.firstArgs {
			v.firstArgs[k] = slices.Clone(a)
		}
	}
	return &v
}

// A RuleError is a rule that ACL SETUSER refuses. Its Error is Redis 7.0's reply text without
// the "ERR " prefix.
type RuleError struct {
	Rule   string
	Reason string
	// Unknown is set when the rule names an unknown command or category.
	Unknown bool
}

func (e *RuleError) Error() string {
	return "Error in ACL SETUSER modifier '" + e.Rule + "': " + e.Reason
}

// Redact returns err as it may be logged or printed at start-up: with a password or password
// hash that it quotes from a refused rule (a *RuleError's '<pass' or '#hash', or the first words
// of an unclosed selector) shown as "(redacted)". ACL SETUSER's reply, which goes only to the
// client that sent the rule, keeps Redis's text; logs and start-up errors, which Redis prints in
// clear, use this. It returns err itself when there is nothing to hide; errors.Is and errors.As
// see through the result.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if re, ok := errors.AsType[*RuleError](err); ok && redact.SecretRule(re.Rule) {
		msg = strings.ReplaceAll(msg, "'"+re.Rule+"'", "'"+redact.Redacted+"'")
	}
	if se, ok := errors.AsType[*selectorError](err); ok {
		words := strings.Split(se.start, " ")
		for i, w := range words {
			if redact.SecretRule(strings.Trim(w, "()")) {
				words[i] = redact.Redacted
			}
		}
		msg = strings.ReplaceAll(msg, "'"+se.start+"'", "'"+strings.Join(words, " ")+"'")
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{err, msg}
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Redis 7.0's reasons (ACLSetUserStringError).
const (
	reasonSyntax     = "Syntax error"
	reasonUnknown    = "Unknown command or category name in ACL"
	reasonKeysAfter  = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	reasonChansAfter = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	reasonNoSuchPass = "The password you are trying to remove from the user does not exist"
	reasonBadHash    = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	reasonSubFirst   = "Allowing first-arg of a subcommand is not supported"
	reasonSelectors  = "selectors (rules in parentheses) are not supported by bloomd"
)

// ErrUnmatchedParen is returned for a rule list with an unclosed "(".
var ErrUnmatchedParen = errors.New("acl: unmatched parenthesis")

// SetUser returns a copy of u with rules applied in order, or the first refused rule's error
// (a *RuleError, or an error whose text is Redis's for an unclosed selector); u is unchanged
// either way. Rules in parentheses (Redis 7.0's selectors) are refused.
func (u *User) SetUser(rules []string) (*User, error) {
	merged, err := mergeSelectors(rules)
	if err != nil {
		return nil, err
	}
	v := u.clone()
	for _, r := range merged {
		if err := v.apply(r); err != nil {
			return nil, err
		}
	}
	v.all = v.allCommands && v.allKeys && v.allChannels
	return v, nil
}

// mergeSelectors joins the words of a selector written with spaces ("(~x", "+get)") into one
// rule, as Redis does before it applies them.
func mergeSelectors(rules []string) ([]string, error) {
	var out []string
	open := -1
	for i, r := range rules {
		if open < 0 && strings.HasPrefix(r, "(") && !strings.HasSuffix(r, ")") {
			open = i
			out = append(out, r)
			continue
		}
		if open >= 0 {
			out[len(out)-1] += " " + r
			if strings.HasSuffix(r, ")") {
				open = -1
			}
			continue
		}
		out = append(out, r)
	}
	if open >= 0 {
		return nil, &selectorError{rules[open]}
	}
	return out, nil
}

type selectorError struct{ start string }

func (e *selectorError) Error() string {
	return "Unmatched parenthesis in acl selector starting at '" + e.start + "'."
}

func (e *selectorError) Is(target error) bool { return target == ErrUnmatchedParen }

// hasSpaces reports what Redis's ACLStringHasSpaces does: a space or a NUL byte.
func hasSpaces(s string) bool { return strings.ContainsAny(s, " \x00") }

// HashPassword returns the SHA-256 of pass in lower-case hex, as ACL GETUSER shows it.
func HashPassword(pass []byte) string {
	h := sha256.Sum256(pass)
	return hex.EncodeToString(h[:])
}

func parseHash(s string) ([sha256.Size]byte, bool) {
	var h [sha256.Size]byte
	if len(s) != 2*sha256.Size {
		return h, false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h, false
		}
	}
	hex.Decode(h[:], []byte(s))
	return h, true
}

func (u *User) apply(op string) error {
	fail := func(reason string) error {
		return &RuleError{Rule: op, Reason: reason, Unknown: reason == reasonUnknown}
	}
	if op == "" {
		return nil
	}
	switch strings.ToLower(op) {
	case "on":
		u.flags = u.flags&^flagOff | flagOn
		return nil
	case "off":
		u.flags = u.flags&^flagOn | flagOff
		return nil
	case "skip-sanitize-payload":
		u.flags = u.flags&^flagSanitize | flagSkipSanitize
		return nil
	case "sanitize-payload":
		u.flags = u.flags&^flagSkipSanitize | flagSanitize
		return nil
	case "nopass":
		u.flags |= flagNoPass
		u.pass = nil
		return nil
	case "resetpass":
		u.flags &^= flagNoPass
		u.pass = nil
		return nil
	case "clearselectors":
		return nil
	case "reset":
		u.flags &^= flagNoPass
		u.pass = nil
		u.allKeys, u.keys = false, nil
		u.allChannels, u.channels = false, nil
		u.flags = u.flags&^(flagOn|flagSkipSanitize) | flagOff | flagSanitize
		u.setAll(false)
		return nil
	case "allkeys", "~*":
		u.allKeys, u.keys = true, nil
		return nil
	case "resetkeys":
		u.allKeys, u.keys = false, nil
		return nil
	case "allchannels", "&*":
		u.allChannels, u.channels = true, nil
		return nil
	case "resetchannels":
		u.allChannels, u.channels = false, nil
		return nil
	case "allcommands", "+@all":
		u.setAll(true)
		return nil
	case "nocommands", "-@all":
		u.setAll(false)
		return nil
	}
	switch op[0] {
	case '>', '#':
		var h [sha256.Size]byte
		if op[0] == '>' {
			h = sha256.Sum256([]byte(op[1:]))
		} else {
			var ok bool
			if h, ok = parseHash(op[1:]); !ok {
				return fail(reasonBadHash)
			}
		}
		if !slices.Contains(u.pass, h) {
			u.pass = append(u.pass, h)
		}
		u.flags &^= flagNoPass
		return nil
	case '<', '!':
		var h [sha256.Size]byte
		if op[0] == '<' {
			h = sha256.Sum256([]byte(op[1:]))
		} else {
			var ok bool
			if h, ok = parseHash(op[1:]); !ok {
				return fail(reasonBadHash)
			}
		}
		i := slices.Index(u.pass, h)
		if i < 0 {
			return fail(reasonNoSuchPass)
		}
		u.pass = slices.Delete(u.pass, i, i+1)
		return nil
	case '(':
		if op[len(op)-1] == ')' {
			return fail(reasonSelectors)
		}
	case '~', '%':
		if u.allKeys {
			return fail(reasonKeysAfter)
		}
		perm, off := permAll, 1
		if op[0] == '%' {
			perm = 0
			for ; off < len(op); off++ {
				c := op[off] | 0x20
				if c == 'r' && perm&permRead == 0 {
					perm |= permRead
				} else if c == 'w' && perm&permWrite == 0 {
					perm |= permWrite
				} else if op[off] == '~' {
					off++
					break
				} else {
					return fail(reasonSyntax)
				}
			}
			if perm == 0 {
				return fail(reasonSyntax)
			}
		}
		pat := op[off:]
		if hasSpaces(pat) {
			return fail(reasonSyntax)
		}
		if i := slices.IndexFunc(u.keys, func(k keyPattern) bool { return k.pat == pat }); i >= 0 {
			u.keys[i].perm |= perm
		} else {
			u.keys = append(u.keys, keyPattern{pat, perm})
		}
		return nil
	case '&':
		if u.allChannels {
			return fail(reasonChansAfter)
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return fail(reasonSyntax)
		}
		if !slices.Contains(u.channels, pat) {
			u.channels = append(u.channels, pat)
		}
		return nil
	case '+', '-':
		allow := op[0] == '+'
		if len(op) > 1 && op[1] == '@' {
			cat := CategoryByName(op[2:])
			if cat == 0 {
				return fail(reasonUnknown)
			}
			u.setCategory(cat, allow)
			return nil
		}
		name := op[1:]
		if !allow || !strings.Contains(name, "|") {
			c := u.t.Lookup(name)
			if c == nil {
				return fail(reasonUnknown)
			}
			u.changePerm(c, allow)
			return nil
		}
		i := strings.LastIndexByte(name, '|')
		c := u.t.Lookup(name[:i])
		if c == nil {
			return fail(reasonUnknown)
		}
		if c.Parent != nil {
			return fail(reasonSubFirst)
		}
		if i == len(name)-1 {
			return fail(reasonSyntax)
		}
		if c.Subs != nil {
			sub := u.t.Lookup(name)
			if sub == nil {
				return fail(reasonUnknown)
			}
			u.changePerm(sub, true)
			return nil
		}
		u.addFirstArg(c.ID, name[i+1:])
		return nil
	}
	return fail(reasonSyntax)
}

func (u *User) setAll(allow bool) {
	var w uint64
	if allow {
		w = ^uint64(0)
	}
	for i := range u.cmds {
		u.cmds[i] = w
	}
	u.allCommands = allow
	u.firstArgs = nil
}

func (u *User) bit(id int) bool { return u.cmds[id/64]&(1<<(id%64)) != 0 }

func (u *User) setBit(id int, v bool) {
	if v {
		u.cmds[id/64] |= 1 << (id % 64)
	} else {
		u.cmds[id/64] &^= 1 << (id % 64)
		u.allCommands = false
	}
}

// changePerm allows or denies a command and, for a container, each of its subcommands.
func (u *User) changePerm(c *Command, allow bool) {
	u.setBit(c.ID, allow)
	delete(u.firstArgs, c.ID)
	for _, s := range c.Subs {
		u.setBit(s.ID, allow)
	}
}

// setCategory applies +@cat or -@cat as Redis does: every command of the category, with all
// of a container's subcommands when the container itself is in it.
func (u *User) setCategory(cat Category, allow bool) {
	var walk func([]*Command)
	walk = func(cs []*Command) {
		for _, c := range cs {
			if c.Categories&cat != 0 {
				u.changePerm(c, allow)
			}
			walk(c.Subs)
		}
	}
	walk(u.t.top)
}

func (u *User) addFirstArg(id int, arg string) {
	if u.firstArgs == nil {
		u.firstArgs = map[int][]string{}
	}
	for _, a := range u.firstArgs[id] {
		if strings.EqualFold(a, arg) {
			return
		}
	}
	u.firstArgs[id] = append(u.firstArgs[id], arg)
}

// CheckPassword reports whether pass authenticates u: u is on, and nopass or pass's SHA-256
// equals one of u's hashes. The comparison takes the same time whatever the password.
func (u *User) CheckPassword(pass []byte) bool {
	if u.flags&flagOn == 0 {
		return false
	}
	if u.flags&flagNoPass != 0 {
		return true
	}
	h := sha256.Sum256(pass)
	ok := 0
	for i := range u.pass {
		ok |= subtle.ConstantTimeCompare(h[:], u.pass[i][:])
	}
	return ok == 1
}
