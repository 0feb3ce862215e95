// Package redact keeps passwords out of what bloomd shows about the commands it runs and the
// command line it runs with: MONITOR's feed, SLOWLOG GET's entries and the debug port's
// /debug/pprof/cmdline.
//
// # Which arguments, and whose rules
//
// The rules are Redis 7.0.15's (the callers of redactClientCommandArgument), one per command,
// looked up by the command table's name (For): AUTH's password and user name; HELLO's AUTH
// user name and password; every argument of ACL SETUSER from the user name on; the value of
// each sensitive setting (masterauth, masteruser, requirepass: Redis's SENSITIVE_CONFIG) in
// CONFIG SET; and MIGRATE's AUTH password and AUTH2 user name and password. Each named argument
// is shown as "(redacted)", exactly as Redis shows it. The rule of a command is found by its
// name, so a command added to the table later (MIGRATE) is covered from the start.
//
// Redis also keeps commands flagged admin out of MONITOR altogether (CONFIG SET and ACL SETUSER
// among them), and EXEC out of the slow log; the server's command table has those flags.
//
// # What differs on purpose
//
// Redis redacts from inside each command, after parsing, so a command that fails to parse
// before it reaches its secret shows the secret in clear: "AUTH a b c" (a syntax error), "HELLO
// 4 AUTH user pass" (a bad protocol version), "HELLO 3 FOO AUTH user pass", "CONFIG SET
// requirepass x masterauth" (an odd count). These rules read the arguments as the command would
// if it parsed them, whatever the errors: every argument of an AUTH with too many, the (up to)
// two words after any AUTH of a HELLO, and the value after each sensitive setting. The outcome
// of every well-formed command is Redis's, byte for byte.
//
// TestRules checks each rule, MIGRATE's included (bloomd has no MIGRATE yet); the server's
// TestRedactionMatchesRedis runs the same commands against bloomd and a real redis-server 7.0
// and compares MONITOR's feed and SLOWLOG GET.
package redact
