package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/pubsub"
	"github.com/bloomd/bloom/internal/resp"
)

// aclState is the server's part of the ACL system (internal/acl): the table, the users, the
// log and the denial counters of INFO and /metrics.
type aclState struct {
	tab    *acl.Table
	users  *acl.Users
	log    *acl.Log
	file   string          // aclfile, "" for none
	denied [5]atomic.Int64 // by acl.Result: [DeniedCommand], [DeniedKey], [DeniedChannel], [DeniedAuth]
}

// aclTraits describes a command of the table to acl.DefaultSpec.
func aclTraits(c *Command) acl.Traits {
	return acl.Traits{
		Write: c.Flags&FlagWrite != 0, Readonly: c.Flags&FlagReadonly != 0, Admin: c.Flags&FlagAdmin != 0,
		Fast: c.Flags&FlagFast != 0, NoAuth: c.Flags&FlagNoAuth != 0,
		FirstKey: c.FirstKey, LastKey: c.LastKey, Step: c.Step,
	}
}

// initACL builds the ACL table from the command table (every command registered by now), and
// the users from requirepass, the config file's user lines or the aclfile.
func (s *Server) initACL(cfg *Config) error {
	var specs []acl.Spec
	var all []*Command
	for _, c := range s.mux.Commands() {
		all = append(all, c)
		for _, sub := range c.Subcommands {
			all = append(all, sub)
		}
	}
	for _, c := range all {
		specs = append(specs, acl.DefaultSpec(c.Name, aclTraits(c)))
	}
	s.acl.tab = acl.NewTable(specs, globMatch)
	for _, c := range all {
		c.acl = s.acl.tab.Lookup(c.Name)
	}
	s.acl.users = acl.NewUsers(s.acl.tab)
	s.acl.users.OnChange = s.closeAccounts
	s.acl.users.OnChannelsRevoked = s.closeRevokedSubscribers
	s.acl.log = acl.NewLog(cfg.ACLLogMaxLen)
	s.acl.file = cfg.ACLFile
	s.acl.users.SetDefaultPassword(cfg.Requirepass)
	if len(cfg.Users) > 0 {
		if err := s.acl.users.LoadDefinitions(cfg.Users); err != nil {
			return fmt.Errorf("server: user: %w", acl.Redact(err)) // no password in the start-up error
		}
		if !definesDefault(cfg.Users) {
			s.acl.users.SetDefaultPassword(cfg.Requirepass)
		}
	}
	if cfg.ACLFile != "" {
		if err := s.acl.users.LoadFile(cfg.ACLFile); err != nil {
			return fmt.Errorf("server: aborting startup because of ACL errors: %w", err)
		}
	}
	return nil
}

// configUserLines returns the user lines CONFIG REWRITE writes, as Redis does when there is no
// aclfile (nil when there is one: the users live there): every user as ACL LIST shows it, but
// the default user when it is just what requirepass makes it.
func (s *Server) configUserLines() []string {
	if s.acl.file != "" {
		return nil
	}
	plain := s.acl.tab.NewDefaultUser()
	if pass := *s.requirepass.Load(); pass != "" {
		plain, _ = plain.SetUser([]string{"resetpass", ">" + pass})
	}
	out := []string{}
	for _, l := range s.acl.users.List() {
		if l != "user default "+plain.Describe() {
			out = append(out, l)
		}
	}
	return out
}

func definesDefault(defs []acl.Definition) bool {
	for _, d := range defs {
		if d.Name == "default" {
			return true
		}
	}
	return false
}

// closeAccounts closes the connections of users deleted or replaced (acl.Users.OnChange).
func (s *Server) closeAccounts(gone []*acl.Account) {
	for _, o := range s.liveClients() {
		a := o.acct.Load()
		for _, g := range gone {
			if a == g {
				o.kill()
				break
			}
		}
	}
}

// closeRevokedSubscribers closes the connections of a that are subscribed to a channel or
// pattern its user may no longer use, as Redis 7.0 does when ACL SETUSER revokes channels.
func (s *Server) closeRevokedSubscribers(a *acl.Account, u *acl.User) {
	var kill []*Conn
	s.hub.Each(func(cl *pubsub.Client, name string, pattern bool) {
		if o, ok := cl.Subscriber().(*Conn); ok && o.acct.Load() == a && !u.CheckChannel([]byte(name), pattern) {
			kill = append(kill, o)
		}
	})
	for _, o := range kill {
		o.kill()
	}
}

// aclDenied answers a command that the connection's user may not run, as Redis 7.0 does, and
// logs it.
func (c *Conn) aclDenied(cmd *Command, args [][]byte, r acl.Result, idx int) {
	if c.acct.Load().Removed() {
		// The user was deleted (its User allows nothing): close the connection, as ACL
		// DELUSER closes the user's connections, without an answer.
		c.quit = true
		return
	}
	var msg, object string
	switch r {
	case acl.DeniedCommand:
		msg, object = "NOPERM this user has no permissions to run the '"+cmd.Name+"' command", cmd.Name
	case acl.DeniedKey:
		msg, object = "NOPERM this user has no permissions to access one of the keys used as arguments", string(args[idx])
	default:
		msg, object = "NOPERM this user has no permissions to access one of the channels used as arguments", string(args[idx])
	}
	c.logDenial(r, object, c.acct.Load().Name(), cmd)
	c.rejectCmd(cmd, msg)
}

// execDenied answers a queued command that the user may no longer run when EXEC runs it.
func (c *Conn) execDenied(cmd *Command, args [][]byte, r acl.Result, idx int) {
	if c.acct.Load().Removed() {
		c.quit = true // the user was deleted: answer, then close (see aclDenied)
	}
	reason, object := "no permission to execute the command or subcommand", cmd.Name
	switch r {
	case acl.DeniedKey:
		reason, object = "no permission to touch the specified keys", string(args[idx])
	case acl.DeniedChannel:
		reason, object = "no permission to access one of the channels used as arguments", string(args[idx])
	}
	c.logDenial(r, object, c.acct.Load().Name(), cmd)
	c.w.Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason)
}

// logDenial counts a denial of cmd and adds it to the ACL log; the client's line shows cmd as
// its current command, as Redis's does.
func (c *Conn) logDenial(r acl.Result, object, user string, cmd *Command) {
	c.srv.acl.denied[r].Add(1)
	ctx := acl.ContextToplevel
	if c.multi != nil || c.multiWrites != 0 {
		ctx = acl.ContextMulti
	}
	c.publish()
	c.cur.Store(cmd)
	c.srv.acl.log.Add(r, ctx, object, user, strings.TrimSuffix(c.info(time.Now(), true), "\n"), time.Now())
}

// aclAllows checks the connection's user before a command runs. Connections without a user
// (the replication stream, Server.Exec) may run anything.
func (c *Conn) aclAllows(cmd *Command, args [][]byte) (acl.Result, int) {
	a := c.acct.Load()
	if a == nil {
		return acl.Allowed, 0
	}
	return a.User().Check(cmd.acl, args)
}

// authenticate checks a user name (nil for AUTH's one-argument form: "default") and password,
// and on success makes the connection that user's. A failure is counted and logged.
func (c *Conn) authenticate(user, pass []byte) bool {
	name := "default"
	if user != nil {
		name = string(user)
	}
	a := c.srv.acl.users.Authenticate(name, pass)
	if a == nil {
		c.srv.log.Debug("authentication failed", "client", c.addr)
		return false
	}
	if hook := testHookAuthenticated.Load(); hook != nil {
		(*hook)(a)
	}
	prev := c.acct.Load()
	c.acct.Store(a)
	if a.Removed() {
		// Deleted since its password was checked. The deletion marks the account before it
		// closes the user's connections, and this connection took the account before reading
		// the mark: either the deletion saw this connection, or this sees the mark.
		c.acct.Store(prev)
		c.srv.log.Debug("authentication failed: the user was deleted meanwhile", "client", c.addr)
		return false
	}
	c.setAuthed(true)
	return true
}

// testHookAuthenticated, if set (by tests), runs between a password's check and the
// connection's taking its account: where another client may delete the user.
var testHookAuthenticated atomic.Pointer[func(a *acl.Account)]

func (c *Conn) authFailed(cmdName []byte, user []byte) {
	name := "default"
	if user != nil {
		name = string(user)
	}
	c.logDenial(acl.DeniedAuth, string(cmdName), name, c.srv.mux.Lookup(cmdName))
	c.w.Error(errWrongPass)
}

// defaultAuthed reports whether a new connection is authenticated at once: the default user is
// on and needs no password.
func (s *Server) defaultAuthed() bool {
	u := s.acl.users.Default().User()
	return u.NoPass() && u.Enabled()
}

func registerACL(mx *Mux) {
	a := FlagAdmin | FlagLoading | FlagStale
	ls := FlagLoading | FlagStale
	c := &Command{Name: "acl", Arity: -2, Since: "6.0.0", Group: "server", Summary: "A container for Access List Control commands.", Subcommands: map[string]*Command{}}
	mx.Handle(c)
	sub := func(name string, arity int, flags Flags, summary string, h Handler) {
		c.Subcommands[name] = &Command{Name: "acl|" + name, Arity: arity, Flags: flags, Since: "6.0.0", Group: "server", Summary: summary, Handler: h}
	}
	sub("cat", -2, ls, "Lists the ACL categories, or the commands inside a category.", aclCatCmd)
	sub("deluser", -3, a, "Deletes ACL users, and terminates their connections.", aclDelUserCmd)
	sub("dryrun", -4, a, "Simulates the execution of a command by a user, without executing the command.", aclDryRunCmd)
	sub("genpass", -2, ls, "Generates a pseudorandom, secure password that can be used to identify ACL users.", aclGenPassCmd)
	sub("getuser", 3, a, "Lists the ACL rules of a user.", aclGetUserCmd)
	sub("list", 2, a, "Dumps the effective rules in ACL file format.", aclListCmd)
	sub("load", 2, a, "Reloads the rules from the configured ACL file.", aclLoadCmd)
	sub("log", -2, a, "Lists recent security events generated due to ACL rules.", aclLogCmd)
	sub("save", 2, a, "Saves the effective ACL rules in the configured ACL file.", aclSaveCmd)
	sub("setuser", -3, a, "Creates and modifies an ACL user and its rules.", aclSetUserCmd)
	sub("users", 2, a, "Lists all ACL users.", aclUsersCmd)
	sub("whoami", 2, ls, "Returns the authenticated username of the current connection.", aclWhoAmICmd)
	sub("help", 2, ls, "Returns helpful text about the different subcommands.", helpCmd(
		"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Prints this help."))
}

// subcommandSyntax is Redis's error for a subcommand given too many arguments.
func subcommandSyntax(args [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + cString(args[1], 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP."
}

func aclSetUserCmd(c *Conn, args [][]byte) {
	rules := make([]string, len(args)-3)
	for i, r := range args[3:] {
		rules[i] = string(r)
	}
	if err := c.srv.acl.users.SetUser(string(args[2]), rules); err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.OK()
}

func aclDelUserCmd(c *Conn, args [][]byte) {
	names := make([]string, len(args)-2)
	for i, n := range args[2:] {
		names[i] = string(n)
	}
	n, err := c.srv.acl.users.Delete(names)
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.Int(int64(n))
}

func aclGetUserCmd(c *Conn, args [][]byte) {
	a := c.srv.acl.users.Get(string(args[2]))
	if a == nil {
		c.w.Null()
		return
	}
	u := a.User()
	c.w.Map(6)
	c.w.BulkString("flags")
	flags := u.Flags()
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("passwords")
	hashes := u.PasswordHashes()
	c.w.Array(len(hashes))
	for _, h := range hashes {
		c.w.BulkString(h)
	}
	c.w.BulkString("commands")
	c.w.BulkString(u.CommandRules())
	c.w.BulkString("keys")
	c.w.BulkString(u.KeyRules())
	c.w.BulkString("channels")
	c.w.BulkString(u.ChannelRules())
	c.w.BulkString("selectors")
	c.w.Array(0)
}

func aclListCmd(c *Conn, args [][]byte) {
	lines := c.srv.acl.users.List()
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.BulkString(l)
	}
}

func aclUsersCmd(c *Conn, args [][]byte) {
	names := c.srv.acl.users.Names()
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

func aclWhoAmICmd(c *Conn, args [][]byte) {
	a := c.acct.Load()
	if a == nil {
		c.w.Null()
		return
	}
	c.w.BulkString(a.Name())
}

func aclCatCmd(c *Conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(subcommandSyntax(args))
		return
	}
	if len(args) == 2 {
		names := acl.CategoryNames()
		c.w.Array(len(names))
		for _, n := range names {
			c.w.BulkString(n)
		}
		return
	}
	cat := acl.CategoryByName(string(args[2]))
	if cat == 0 {
		c.w.Error("ERR Unknown category '" + cString(args[2], 128) + "'")
		return
	}
	names := c.srv.acl.tab.InCategory(cat)
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

const genpassMaxBits = 4096

func aclGenPassCmd(c *Conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(subcommandSyntax(args))
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := resp.ParseInt(args[2])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		bits = n
	}
	if bits <= 0 || bits > genpassMaxBits {
		c.w.Error(fmt.Sprintf("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to %d", genpassMaxBits))
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	rand.Read(buf)
	c.w.BulkString(hex.EncodeToString(buf)[:chars])
}

func aclLogCmd(c *Conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(subcommandSyntax(args))
		return
	}
	count := int64(10)
	if len(args) == 3 {
		if equalFold(args[2], "reset") {
			c.srv.acl.log.Reset()
			c.w.OK()
			return
		}
		n, ok := resp.ParseInt(args[2])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		count = max(n, 0)
	}
	entries := c.srv.acl.log.Entries(int(min(count, 1<<20)))
	now := time.Now()
	c.w.Array(len(entries))
	for _, e := range entries {
		c.w.Map(7)
		c.w.BulkString("count")
		c.w.Int(e.Count)
		c.w.BulkString("reason")
		c.w.BulkString(e.ReasonName())
		c.w.BulkString("context")
		c.w.BulkString(e.Context)
		c.w.BulkString("object")
		c.w.BulkString(e.Object)
		c.w.BulkString("username")
		c.w.BulkString(e.Username)
		c.w.BulkString("age-seconds")
		c.w.Double(float64(now.Sub(e.Time).Milliseconds()) / 1000)
		c.w.BulkString("client-info")
		c.w.BulkString(e.ClientInfo)
	}
}

func aclDryRunCmd(c *Conn, args [][]byte) {
	a := c.srv.acl.users.Get(string(args[2]))
	if a == nil {
		c.w.Error("ERR User '" + string(args[2]) + "' not found")
		return
	}
	cargs := args[3:]
	cmd := c.srv.mux.Lookup(cargs[0])
	if cmd != nil && cmd.Subcommands != nil && len(cargs) >= 2 {
		cmd = cmd.Subcommands[strings.ToLower(string(cargs[1]))] // nil if no such subcommand, as in Redis
	}
	if cmd == nil || cmd.acl == nil {
		c.w.Error("ERR Command '" + string(cargs[0]) + "' not found")
		return
	}
	if !cmd.arityOK(len(cargs)) {
		c.w.Error("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	switch r, i := a.User().Check(cmd.acl, cargs); r {
	case acl.Allowed:
		c.w.OK()
	case acl.DeniedCommand:
		c.w.BulkString("This user has no permissions to run the '" + cmd.Name + "' command")
	case acl.DeniedKey:
		c.w.BulkString("This user has no permissions to access the '" + string(cargs[i]) + "' key")
	default:
		c.w.BulkString("This user has no permissions to access the '" + string(cargs[i]) + "' channel")
	}
}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func aclLoadCmd(c *Conn, args [][]byte) {
	if c.srv.acl.file == "" {
		c.w.Error(errNoACLFile)
		return
	}
	if err := c.srv.acl.users.LoadFile(c.srv.acl.file); err != nil {
		var fe *acl.FileError
		if !errors.As(err, &fe) {
			c.w.Error("ERR " + err.Error())
			return
		}
		c.w.Error("ERR " + fe.Msg)
		return
	}
	c.w.OK()
}

func aclSaveCmd(c *Conn, args [][]byte) {
	if c.srv.acl.file == "" {
		c.w.Error(errNoACLFile)
		return
	}
	if err := c.srv.acl.users.Save(c.srv.acl.file); err != nil {
		c.srv.log.Warn("ACL SAVE failed", "file", c.srv.acl.file, "err", err)
		c.w.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	c.w.OK()
}
