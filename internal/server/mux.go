package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/metrics"
	"github.com/bloomd/bloom/internal/redact"
	"github.com/bloomd/bloom/internal/resp"
)

// A Handler runs one command for a connection and writes its reply to the connection.
// args[0] is the command name as the client sent it; the slices are valid only during the call.
type Handler func(c *Conn, args [][]byte)

// Flags describe a command to the table, to COMMAND INFO and to the durability layer.
type Flags uint32

const (
	FlagWrite     Flags = 1 << iota // changes the keyspace: journaled when it succeeds
	FlagReadonly                    // reads the keyspace only
	FlagDenyOOM                     // refused while used memory is over maxmemory
	FlagFast                        // O(1) or O(log n)
	FlagNoAuth                      // allowed before authentication (AUTH, HELLO, QUIT)
	FlagExclusive                   // runs while no other command runs (EXEC, RENAME, FLUSHALL)
	FlagNoMulti                     // executed at once inside MULTI, never queued
	FlagModule                      // a RedisBloom command: arity checked when it runs, as modules do
	FlagAdmin                       // administrative (CONFIG, CLIENT KILL)
	FlagLoading                     // allowed while loading
	FlagStale                       // allowed on a stale replica
	FlagNoMonitor                   // never shown in MONITOR's feed (Redis's CMD_SKIP_MONITOR)
	FlagNoSlowlog                   // never entered in the slow log (Redis's CMD_SKIP_SLOWLOG)
	// FlagChangesData marks a command that changes data although its module registers it
	// read-only (CF.COMPACT): COMMAND shows it as RedisBloom does, but a read-only replica
	// refuses it as a write, so that its data stays its primary's.
	FlagChangesData
	FlagNoScript        // refused when a script calls it
	FlagAllowBusy       // answered while a script runs past busy-reply-threshold
	FlagNoMandatoryKeys // COMMAND INFO's no_mandatory_keys
	FlagMovableKeys     // COMMAND INFO's movablekeys: keys found from the arguments
	FlagAsking          // allowed on a slot being imported after ASKING (RESTORE-ASKING)
)

var flagNames = []struct {
	f    Flags
	name string
}{
	// Redis 7's order (addReplyCommandFlags).
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"}, {FlagModule, "module"},
	{FlagAdmin, "admin"}, {FlagNoScript, "noscript"}, {FlagLoading, "loading"}, {FlagStale, "stale"},
	{FlagNoMonitor, "skip_monitor"}, {FlagNoSlowlog, "skip_slowlog"}, {FlagAsking, "asking"}, {FlagFast, "fast"},
	{FlagNoAuth, "no_auth"}, {FlagNoMandatoryKeys, "no_mandatory_keys"}, {FlagNoMulti, "no_multi"},
	{FlagMovableKeys, "movablekeys"}, {FlagAllowBusy, "allow_busy"},
}

// A Command is one entry of the command table.
type Command struct {
	// Name is the command's name in lower case, as errors and COMMAND report it ("bf.add");
	// a subcommand's is "container|sub" ("client|setname").
	Name string
	// Arity follows Redis: n means exactly n arguments, -n at least n, argv[0] counted.
	Arity int
	// MaxArgs, if positive, is the most arguments accepted, argv[0] counted.
	MaxArgs int
	Flags   Flags
	// FirstKey, LastKey and Step locate the key arguments, as in COMMAND INFO.
	FirstKey, LastKey, Step int
	// Summary, Since and Group are what COMMAND DOCS reports.
	Summary, Since, Group string
	Handler               Handler
	// Subcommands, if not nil, make this a container command (CLIENT, CONFIG, COMMAND): the
	// second argument selects the subcommand. Handler, if also set, serves the bare command.
	Subcommands map[string]*Command

	stats *metrics.Command // what INFO commandstats reports; set by the Server
	acl   *acl.Command     // the command in the ACL table; set by the Server
	mask  redact.Rule      // the arguments MONITOR and the slow log hide; set by the Server
}

// A Mux is a command table: it maps command names, case-insensitively, to Commands, in the
// style of http.ServeMux. Register every command before serving; lookups are not synchronized
// with registration.
type Mux struct {
	m map[string]*Command
}

// NewMux returns an empty table.
func NewMux() *Mux { return &Mux{m: make(map[string]*Command)} }

// Handle registers cmd under cmd.Name. It panics if the name is taken or cmd is malformed, as
// http.ServeMux does for conflicting patterns.
func (mx *Mux) Handle(cmd *Command) {
	if cmd.Name != strings.ToLower(cmd.Name) || cmd.Name == "" {
		panic(fmt.Sprintf("server: command name %q is not lower case", cmd.Name))
	}
	if cmd.Arity == 0 || cmd.Handler == nil && cmd.Subcommands == nil {
		panic(fmt.Sprintf("server: command %q needs an arity and a handler or subcommands", cmd.Name))
	}
	if _, dup := mx.m[cmd.Name]; dup {
		panic(fmt.Sprintf("server: command %q registered twice", cmd.Name))
	}
	mx.m[cmd.Name] = cmd
}

// HandleFunc registers a handler for name with the given arity and flags.
func (mx *Mux) HandleFunc(name string, arity int, flags Flags, h Handler) {
	mx.Handle(&Command{Name: name, Arity: arity, Flags: flags, Handler: h, FirstKey: 0})
}

// Lookup returns the command named name, in any case, or nil. It does not allocate.
func (mx *Mux) Lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return mx.m[strings.ToLower(string(name))]
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return mx.m[string(buf[:len(name)])]
}

// Commands returns every registered command, sorted by name.
func (mx *Mux) Commands() []*Command {
	cmds := make([]*Command, 0, len(mx.m))
	for _, c := range mx.m {
		cmds = append(cmds, c)
	}
	slices.SortFunc(cmds, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return cmds
}

// shown returns args as MONITOR and the slow log show them: with the secrets the command's
// redaction rule names (internal/redact) replaced by "(redacted)".
func (cmd *Command) shown(args [][]byte) [][]byte { return redact.Args(cmd.mask, args) }

// arityOK reports whether n arguments (argv[0] counted) suit cmd.
func (cmd *Command) arityOK(n int) bool {
	if cmd.Arity > 0 && n != cmd.Arity || cmd.Arity < 0 && n < -cmd.Arity {
		return false
	}
	return cmd.MaxArgs <= 0 || n <= cmd.MaxArgs
}

// equalFold is resp.EqualFold.
func equalFold(b []byte, s string) bool { return resp.EqualFold(b, s) }
