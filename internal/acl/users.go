package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// An Account is a user name's place in a Users registry. Connections keep the Account they
// authenticated as and read its current User before each command, so changes to the user apply
// to their next command.
type Account struct {
	name    string
	cur     atomic.Pointer[User]
	removed atomic.Bool
}

// User returns the account's current user. It does not allocate.
func (a *Account) User() *User { return a.cur.Load() }

// Name returns the account's user name.
func (a *Account) Name() string { return a.name }

// Removed reports whether the user was deleted (ACL DELUSER, or dropped by ACL LOAD): its
// connections are to be closed.
func (a *Account) Removed() bool { return a.removed.Load() }

// remove marks the account removed, then makes its User one that allows nothing (off, no
// password, no command, key or channel): a connection that took the account while it was being
// deleted, which the registry's OnChange could not close, has no permission left, and the
// permission check pays nothing for it (a user that may do everything is still one flag test).
func (a *Account) remove(t *Table) {
	a.removed.Store(true)
	a.cur.Store(t.newUser(a.name))
}

// Users is the registry of users. It is safe for concurrent use. The "default" user always
// exists.
type Users struct {
	t  *Table
	mu sync.Mutex
	m  map[string]*Account
	// OnChange, if set, is called (without the registry's lock) with the accounts whose
	// connections must be closed: users deleted, or replaced by ACL LOAD.
	OnChange func(closed []*Account)
	// OnChannelsRevoked, if set, is called (without the registry's lock) when SetUser takes
	// channel permissions away from an existing user, so that its subscribed connections can be
	// checked against the new rules, as Redis 7.0 does.
	OnChannelsRevoked func(a *Account, now *User)
}

// NewUsers returns a registry holding only the default user (on, nopass, ~* &* +@all).
func NewUsers(t *Table) *Users {
	us := &Users{t: t, m: map[string]*Account{}}
	a := &Account{name: "default"}
	a.cur.Store(t.NewDefaultUser())
	us.m["default"] = a
	return us
}

// Table returns the command table the users are checked against.
func (us *Users) Table() *Table { return us.t }

// Default returns the default user's account.
func (us *Users) Default() *Account {
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.m["default"]
}

// Get returns the account named name, or nil.
func (us *Users) Get(name string) *Account {
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.m[name]
}

// Names returns the user names, sorted (as ACL USERS lists them).
func (us *Users) Names() []string {
	us.mu.Lock()
	defer us.mu.Unlock()
	names := make([]string, 0, len(us.m))
	for n := range us.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// List returns every user as a "user NAME RULES" line, sorted by name, as ACL LIST and the
// aclfile show them.
func (us *Users) List() []string {
	us.mu.Lock()
	accts := make([]*Account, 0, len(us.m))
	for _, a := range us.m {
		accts = append(accts, a)
	}
	us.mu.Unlock()
	slices.SortFunc(accts, func(a, b *Account) int { return strings.Compare(a.name, b.name) })
	out := make([]string, len(accts))
	for i, a := range accts {
		out[i] = "user " + a.name + " " + a.User().Describe()
	}
	return out
}

// ErrUsernameSpaces is Redis's error for a user name with a space or NUL byte.
//
//lint:ignore ST1005 Redis 7.0's wording, which clients match
var ErrUsernameSpaces = errors.New("Usernames can't contain spaces or null characters")

// SetUser applies rules to the user named name, creating it (off, no permissions) if missing,
// as ACL SETUSER does: all rules apply or none. As in Redis 7.0, turning a user off stops new
// authentications but leaves its connections open.
func (us *Users) SetUser(name string, rules []string) error {
	if hasSpaces(name) {
		return ErrUsernameSpaces
	}
	us.mu.Lock()
	a := us.m[name]
	base := us.t.newUser(name)
	if a != nil {
		base = a.User()
	}
	v, err := base.SetUser(rules)
	if err != nil {
		us.mu.Unlock()
		return err
	}
	if a == nil {
		a = &Account{name: name}
		us.m[name] = a
	}
	old := a.User()
	a.cur.Store(v)
	us.mu.Unlock()
	if old != nil && us.OnChannelsRevoked != nil && channelsRevoked(old, v) {
		us.OnChannelsRevoked(a, v)
	}
	return nil
}

// channelsRevoked reports whether now may lack a channel permission that old had: now does not
// allow every channel and its patterns do not include all of old's (Redis's test).
func channelsRevoked(old, now *User) bool {
	if now.allChannels {
		return false
	}
	if old.allChannels {
		return true
	}
	for _, c := range old.channels {
		if !slices.Contains(now.channels, c) {
			return true
		}
	}
	return false
}

// ErrDeleteDefault is Redis's error for ACL DELUSER default.
//
//lint:ignore ST1005 Redis 7.0's wording, which clients match
var ErrDeleteDefault = errors.New("The 'default' user cannot be removed")

// Delete removes the named users and returns how many existed. The default user cannot be
// removed; naming it removes nothing. Deleted users' connections are closed (OnChange).
func (us *Users) Delete(names []string) (int, error) {
	if slices.Contains(names, "default") {
		return 0, ErrDeleteDefault
	}
	us.mu.Lock()
	var gone []*Account
	for _, n := range names {
		if a := us.m[n]; a != nil {
			delete(us.m, n)
			a.remove(us.t)
			gone = append(gone, a)
		}
	}
	us.mu.Unlock()
	if len(gone) > 0 && us.OnChange != nil {
		us.OnChange(gone)
	}
	return len(gone), nil
}

// SetDefaultPassword makes pass the default user's only password, or makes it nopass if pass
// is empty: what requirepass does in Redis.
func (us *Users) SetDefaultPassword(pass string) {
	rules := []string{"resetpass", "nopass"}
	if pass != "" {
		rules = []string{"resetpass", ">" + pass}
	}
	if err := us.SetUser("default", rules); err != nil {
		panic(err)
	}
}

// Authenticate returns the account of name if pass authenticates it, or nil: no such user,
// user off, or wrong password.
func (us *Users) Authenticate(name string, pass []byte) *Account {
	a := us.Get(name)
	if a == nil || !a.User().CheckPassword(pass) {
		return nil
	}
	return a
}

// A Definition is one user as a config file or aclfile line defines it.
type Definition struct {
	Name  string
	Rules []string
}

// build checks the config file's user lines and returns their users; the default user, if not
// among them, is as NewDefaultUser makes it, and if among them is reset first, as Redis does.
// A repeated user name is an error. Nothing is changed.
func (t *Table) build(defs []Definition) (map[string]*User, error) {
	users := map[string]*User{}
	for _, d := range defs {
		if _, dup := users[d.Name]; dup {
			return nil, fmt.Errorf("Error in user declaration '%s': Duplicate user found. A user can only be defined once in config files", d.Name)
		}
		if hasSpaces(d.Name) {
			return nil, ErrUsernameSpaces
		}
		base := t.newUser(d.Name)
		rules := d.Rules
		if d.Name == "default" {
			base = t.NewDefaultUser()
			rules = append([]string{"reset"}, rules...)
		}
		u, err := base.SetUser(rules)
		if err != nil {
			return nil, err
		}
		users[d.Name] = u
	}
	if users["default"] == nil {
		users["default"] = t.NewDefaultUser()
	}
	return users, nil
}

// Replace swaps the whole set of users for users (as ACL LOAD does once the file is valid). The
// default account is kept (its connections stay, with the new default user's permissions);
// every other old account is removed and its connections closed, as Redis frees every old user.
func (us *Users) Replace(users map[string]*User) {
	us.mu.Lock()
	old := us.m
	us.m = make(map[string]*Account, len(users))
	var gone []*Account
	for n, a := range old {
		if n == "default" {
			a.cur.Store(users[n])
			us.m[n] = a
			continue
		}
		a.remove(us.t)
		gone = append(gone, a)
	}
	for n, u := range users {
		if n != "default" {
			a := &Account{name: n}
			a.cur.Store(u)
			us.m[n] = a
		}
	}
	us.mu.Unlock()
	if len(gone) > 0 && us.OnChange != nil {
		us.OnChange(gone)
	}
}

// LoadDefinitions replaces the users with defs (the config file's user lines at startup).
func (us *Users) LoadDefinitions(defs []Definition) error {
	users, err := us.t.build(defs)
	if err != nil {
		return err
	}
	us.Replace(users)
	return nil
}
