// Package acl is bloomd's access control: users, the rules that say which commands, keys and
// publish/subscribe channels each may use, and the check made before every command. It follows
// Redis 7.0's ACL system (ACL SETUSER, GETUSER, LIST, the aclfile), with the same rule syntax, the
// same error texts and the same rendering of a user's rules, so that clients, Sentinel and tools
// written for Redis work unchanged.
//
// # Commands and categories
//
// A Table is the server's command table seen by the ACL system: every command and subcommand
// ("config|get") has an ID, a set of categories (@read, @write, @admin, ... as Redis 7.0 assigns
// them, plus @bloom for BF.* and @cuckoo for CF.*, as Redis 8 does) and key specs that locate
// its key arguments and say whether it reads or writes them.
//
// # Users and rules
//
// A User is immutable once made; SetUser applies rules to a copy, so a connection that holds a
// *User keeps a consistent view while another connection changes the user. A Users registry
// maps names to Accounts; an Account's current User is read with one atomic load, so changed
// permissions apply to the next command of every connection of that user. A deleted Account's
// User allows nothing, so a connection that took the account while it was being deleted (and
// that the deletion's closing of the user's connections missed) keeps no permission
// (TestRemovedAccountAllowsNothing).
//
// Rules are Redis 7.0's: on, off, >password, #sha256hex, <password, !sha256hex, nopass,
// resetpass, +command, -command, +command|sub, +@category, -@category, allcommands
// (= +@all), nocommands (= -@all), ~pattern, %R~pattern, %W~pattern, %RW~pattern, allkeys
// (= ~*), resetkeys, &pattern, allchannels (= &*), resetchannels, reset, and
// sanitize-payload / skip-sanitize-payload (kept and shown, without effect: bloomd has no
// RESTORE). Passwords are kept only as SHA-256 hashes and compared in constant time.
//
// Redis 7.0's selectors, rules in parentheses ("(~temp:* +get)"), are not supported: a rule
// in parentheses is refused with an error saying so, and "clearselectors" is accepted (there
// is never a selector to clear).
//
// # Rendering
//
// Describe renders a user as ACL LIST and the aclfile show it: flags, password hashes, keys,
// channels, then the command rules in Redis 7.0's canonical form (+@all or -@all, the
// categories that fit best, then single commands). Redis emits the single commands in the
// order of its command hash table, which depends on a random seed per process; bloomd emits
// them in the table's order (sorted by name), which is one of the orders Redis may print.
//
// # The check
//
// Check reports whether a user may run a command with given arguments and, if not, why
// (command, key or channel) and which argument. It does not allocate; a user with every
// command, key and channel allowed (the default user) is decided by one flag test.
package acl
