package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/script"
)

// This file connects internal/script to the server: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and
// SCRIPT, the script's client through which redis.call runs commands, the journaling of a
// script's effects, and busy-reply-threshold. internal/script's doc.go says what follows Redis
// 7.0 and how it is proved.

// Redis's replies of the scripting commands.
const (
	errNoScript      = "NOSCRIPT No matching script. Please use EVAL."
	errBusyScript    = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errNotBusy       = "NOTBUSY No scripts in execution right now."
	errUnkillable    = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errUnkillableRep = "UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed."
	msgKilled        = "Script killed by user with SCRIPT KILL..."
	msgShutdownKill  = "Script killed by SHUTDOWN NOSAVE"
)

// noScriptCommands are the commands Redis 7.0 flags "noscript" (refused from scripts), of
// those bloomd has; allowBusyCommands are those flagged "allow_busy" (answered while a script
// runs past busy-reply-threshold).
var (
	noScriptCommands = []string{
		"acl|cat", "acl|deluser", "acl|dryrun", "acl|genpass", "acl|getuser", "acl|list", "acl|load", "acl|log",
		"acl|save", "acl|setuser", "acl|users", "acl|whoami", "auth", "bgrewriteaof", "bgsave",
		"client|getname", "client|id", "client|info", "client|kill", "client|list", "client|no-evict",
		"client|no-touch", "client|setinfo", "client|setname", "config|get", "config|resetstat",
		"config|rewrite", "config|set", "discard", "eval", "eval_ro", "evalsha", "evalsha_ro", "exec", "hello",
		"latency|doctor", "latency|graph", "latency|histogram", "latency|history", "latency|latest",
		"latency|reset", "module|list", "monitor", "multi", "psubscribe", "psync", "punsubscribe", "quit",
		"replconf", "replicaof", "reset", "role", "save", "script|debug", "script|exists", "script|flush",
		"script|kill", "script|load", "shutdown", "slaveof", "subscribe", "sync", "unsubscribe", "wait",
	}
	allowBusyCommands = []string{"auth", "discard", "hello", "multi", "quit", "replconf", "reset", "script|kill", "shutdown"}
)

// registerScripting adds the scripting commands, and marks the commands registered before it
// with the flags that matter to scripts. It runs after every other register function.
func registerScripting(mx *Mux) {
	const stale = FlagStale
	evals := []struct {
		name string
		ro   bool
		h    Handler
	}{
		{"eval", false, func(c *Conn, a [][]byte) { c.eval(a, false, false) }},
		{"evalsha", false, func(c *Conn, a [][]byte) { c.eval(a, true, false) }},
		{"eval_ro", true, func(c *Conn, a [][]byte) { c.eval(a, false, true) }},
		{"evalsha_ro", true, func(c *Conn, a [][]byte) { c.eval(a, true, true) }},
	}
	for _, e := range evals {
		flags := FlagNoScript | stale | FlagNoMonitor | FlagNoMandatoryKeys | FlagMovableKeys
		summary, since := "Executes a server-side Lua script.", "2.6.0"
		if e.ro {
			flags |= FlagReadonly
			summary, since = "Executes a read-only server-side Lua script.", "7.0.0"
		}
		if strings.Contains(e.name, "sha") {
			summary = strings.Replace(summary, "server-side Lua script", "server-side Lua script by SHA1 digest", 1)
		}
		mx.Handle(&Command{Name: e.name, Arity: -3, Flags: flags, Since: since, Group: "scripting", Summary: summary, Handler: e.h})
	}
	sc := &Command{Name: "script", Arity: -2, Since: "2.6.0", Group: "scripting", Summary: "A container for Lua scripts management commands.", Subcommands: map[string]*Command{}}
	mx.Handle(sc)
	sub := func(name string, arity int, flags Flags, since, summary string, h Handler) {
		sc.Subcommands[name] = &Command{Name: "script|" + name, Arity: arity, Flags: flags, Since: since, Group: "scripting", Summary: summary, Handler: h}
	}
	sub("load", 3, stale, "2.6.0", "Loads a server-side Lua script to the script cache.", scriptLoadCmd)
	sub("exists", -3, 0, "2.6.0", "Determines whether server-side Lua scripts exist in the script cache.", scriptExistsCmd)
	sub("flush", -2, 0, "2.6.0", "Removes all server-side Lua scripts from the script cache.", scriptFlushCmd)
	sub("kill", 2, 0, "2.6.0", "Terminates a server-side Lua script during execution.", scriptKillCmd)
	sub("debug", 3, 0, "3.2.0", "Sets the debug mode of server-side Lua scripts.", scriptDebugCmd)
	sub("help", 2, FlagLoading|stale, "5.0.0", "Returns helpful text about the different subcommands.", helpCmd(
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DEBUG (YES|SYNC|NO)", "    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.", "    * SYNC: Synchronously flush the scripts cache.",
		"KILL", "    Kill the currently executing Lua script.",
		"LOAD <script>", "    Load a script into the scripts cache without executing it.",
		"HELP", "    Prints this help."))

	mark := func(names []string, f Flags) {
		for _, n := range names {
			parent, child, isSub := strings.Cut(n, "|")
			c := mx.m[parent]
			if c != nil && isSub {
				c = c.Subcommands[child]
			}
			if c != nil {
				c.Flags |= f
			}
		}
	}
	mark(noScriptCommands, FlagNoScript)
	mark(allowBusyCommands, FlagAllowBusy)
}

// initScripting makes the script engine and the script's client.
func (s *Server) initScripting() {
	s.scripts = script.New(script.Options{
		LogLevel: func() int {
			switch s.config().LogLevel {
			case "debug":
				return 0
			case "verbose":
				return 1
			case "notice":
				return 2
			}
			return 3
		},
		MemoryBudget: s.scriptMemoryBudget,
	})
	s.busyMs.Store(s.cfg.BusyReplyThreshold)
}

// scriptMemoryBudget is how much a running script may grow the heap by: half of what the
// memory ceiling leaves the keyspace now, so that a runaway script is stopped well before the
// process runs out.
func (s *Server) scriptMemoryBudget() int64 {
	room := s.ceiling.bytes - s.ks.used.Load()
	if room <= 0 {
		return 1 << 20
	}
	return max(room/2, 1<<20)
}

// A scriptRun is the script running now, as SCRIPT KILL, SHUTDOWN and the busy timer see it.
type scriptRun struct {
	mu       sync.Mutex
	wrote    bool // a write command ran: SCRIPT KILL may not stop it
	killed   bool
	obey     bool // sent by a primary or loaded from the log: cannot be killed
	shutdown atomic.Bool
	busy     atomic.Bool

	// The goroutine that serves the caller's event loop while the script is busy (under the
	// server's scriptMu).
	helperStop, helperDone chan struct{}
}

// kill stops the script unless it wrote; it returns the error reply, or "" for OK.
func (r *scriptRun) kill(e *script.Engine) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.obey:
		return errUnkillableRep
	case r.wrote:
		return errUnkillable
	}
	r.killed = true
	e.Kill(msgKilled)
	return ""
}

// willWrite records that a write command is about to run, unless the script was killed.
func (r *scriptRun) willWrite() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed {
		return false
	}
	r.wrote = true
	return true
}

func (c *Conn) eval(args [][]byte, bySHA, ro bool) {
	s := c.srv
	if !c.replApplier && s.overMaxmemory() && c.scriptDeniesOOM(args[1], bySHA) {
		// A script with a shebang that may write without allow-oom is a deny-oom command
		// (Redis's evalGetCommandFlags), refused before anything else.
		s.stats.oom.Add(1)
		c.w.Error(errOOM)
		return
	}
	if s.monitors.Load() > 0 {
		// EVAL is flagged skip_monitor, as in Redis, and feeds MONITOR here, ahead of the
		// commands its script runs, which MONITOR shows as the "lua" client's.
		s.feedMonitors(c, args)
	}
	if bySHA && len(args[1]) != 40 {
		c.w.Error(errNoScript)
		return
	}
	n, ok := resp.ParseInt(args[2])
	switch {
	case !ok:
		c.w.Error(errNotInt)
		return
	case n > int64(len(args)-3):
		c.w.Error("ERR Number of keys can't be greater than number of args")
		return
	case n < 0:
		c.w.Error("ERR Number of keys can't be negative")
		return
	}
	var sc *script.Script
	if bySHA {
		if sc = s.scripts.Lookup(args[1]); sc == nil {
			c.w.Error(errNoScript)
			return
		}
	} else {
		var err error
		if sc, err = s.scripts.Load(args[1]); err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
	}
	if msg := c.scriptPrepare(sc.Flags, ro); msg != "" {
		c.w.Error(msg)
		return
	}
	req := &script.Request{Script: sc, Keys: args[3 : 3+n], Args: args[3+n:], Proto: c.w.Proto}
	h := &scriptHost{s: s, caller: c, readOnly: ro || sc.Flags&script.FlagNoWrites != 0,
		allowOOM:   sc.Flags&(script.FlagAllowOOM|script.FlagCompat) == script.FlagAllowOOM,
		oomAtStart: s.overMaxmemory(), inTx: c.multiWrites != 0, sha: sc.SHA,
		run: &scriptRun{obey: c.replApplier}, slot: c.clusterSlot, crossSlot: sc.Flags&(script.FlagAllowCrossSlot|script.FlagCompat) != 0}
	req.Host = h
	var reply []byte
	var msg string
	if c.inExclusive {
		// Inside EXEC: the transaction already runs alone, and its journal record holds the
		// script's effects.
		reply, msg = s.runScript(h, req)
	} else {
		// The script runs here, on the connection's goroutine or its event loop's, alone. The
		// other connections wait for it; past busy-reply-threshold they are answered -BUSY,
		// those of this event loop by a goroutine that serves the loop meanwhile (serveBusy).
		// A script that waits for another, which passes busy-reply-threshold meanwhile, is
		// refused -BUSY as any command arriving then is.
		c.leaveGate()
		run := func() { reply, msg = s.runScript(h, req) }
		if c.replApplier {
			s.gate.exclusive(run)
		} else if !s.gate.tryExclusive(run) {
			c.busied = true
			c.w.Error(errBusyScript)
			return
		}
		c.takeScriptJournal(h)
	}
	c.scriptReply(reply, msg)
}

// scriptDeniesOOM reports whether the script that EVAL or EVALSHA names declares flags
// (a shebang) that make it a deny-oom command: neither allow-oom nor no-writes.
func (c *Conn) scriptDeniesOOM(body []byte, bySHA bool) bool {
	var flags script.Flags
	sha := body
	if !bySHA {
		sha = []byte(script.SHA1Hex(body))
	}
	switch sc := c.srv.scripts.Lookup(sha); {
	case sc != nil:
		flags = sc.Flags
	case bySHA:
		return false
	default:
		f, _, err := script.ParseShebang(body)
		if err != nil {
			return false
		}
		flags = f
	}
	return flags&(script.FlagCompat|script.FlagAllowOOM|script.FlagNoWrites) == 0
}

func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}

func (c *Conn) scriptReply(reply []byte, msg string) {
	if msg != "" {
		c.w.Error(msg)
		return
	}
	c.w.Raw(reply)
}

// takeScriptJournal makes c's reply wait for the records of h's script.
func (c *Conn) takeScriptJournal(h *scriptHost) {
	if h.wait != nil {
		c.wait = h.wait
	}
	if h.woff > c.woff {
		c.woff = h.woff
	}
}

// scriptPrepare applies Redis 7.0's scriptPrepareForRun checks to a script about to run, and
// returns the error reply that refuses it, or "".
func (c *Conn) scriptPrepare(flags script.Flags, ro bool) string {
	s := c.srv
	stale := !c.replApplier && s.repl.IsReplica() && s.repl.Stale()
	if flags&script.FlagCompat != 0 {
		if stale {
			return errMasterDown
		}
		return ""
	}
	if flags&script.FlagNoCluster != 0 && s.cluster != nil {
		return "ERR Can not run script on cluster, 'no-cluster' flag is set."
	}
	if stale && flags&script.FlagAllowStale == 0 {
		return "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script."
	}
	if flags&script.FlagNoWrites == 0 {
		if s.repl.IsReplica() && s.repl.ReadOnly() && !c.replApplier {
			return "READONLY Can not run script with write flag on readonly replica"
		}
		if ro {
			return "ERR Can not execute a script with write flag using *_ro command."
		}
		if !s.repl.IsReplica() && s.minReplicas.Load() && !s.repl.EnoughReplicas() {
			return errNoReplicas
		}
	}
	if flags&(script.FlagAllowOOM|script.FlagNoWrites) == 0 && s.overMaxmemory() && !c.replApplier {
		return "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
	}
	return ""
}

// overMaxmemory reports whether used memory is over maxmemory, as Redis's OOM state before a
// command.
func (s *Server) overMaxmemory() bool {
	m := s.maxmemory.Load()
	return m > 0 && s.ks.used.Load() > m && !s.ks.loading.Load()
}

// runScript runs a script while nothing else runs, through the server's script client, and
// journals its effects: nothing if it wrote nothing, the one write alone, or its writes
// between MULTI and EXEC, as Redis 7.0 propagates them; inside a transaction they are part of
// the transaction's record. So a replay of the log, or a replica, applies the effects and
// never runs Lua.
func (s *Server) runScript(h *scriptHost, req *script.Request) ([]byte, string) {
	sc := s.scriptClient()
	caller := h.caller
	sc.script = h
	sc.acct.Store(caller.acct.Load())
	sc.replApplier = caller.replApplier
	sc.inExclusive = true
	h.sc = sc
	s.scriptMu.Lock()
	s.scriptRun.Store(h.run)
	s.scriptMu.Unlock()
	run := h.run
	req.Tick = func(elapsed time.Duration) {
		ms := s.busyMs.Load()
		if ms <= 0 || elapsed < time.Duration(ms)*time.Millisecond || run.busy.Load() {
			return
		}
		s.scriptMu.Lock()
		defer s.scriptMu.Unlock()
		if s.scriptRun.Load() != run {
			return
		}
		run.busy.Store(true)
		s.gate.setBusy()
		s.log.Warn(fmt.Sprintf("Slow script detected: still in execution after %d milliseconds. You can try killing the script using the SCRIPT KILL command. Script name is: %s.", elapsed.Milliseconds(), h.sha))
		if lp := caller.lp; lp != nil {
			run.helperStop, run.helperDone = make(chan struct{}), make(chan struct{})
			go lp.serveBusy(caller, run.helperStop, run.helperDone)
		}
	}
	if lp := caller.lp; lp != nil {
		lp.beforeScript() // see serveBusy
	}
	reply, msg := s.scripts.Run(req)
	s.scriptMu.Lock()
	s.scriptRun.Store(nil)
	s.scriptMu.Unlock()
	if run.helperStop != nil {
		// The loop is this goroutine's again once its helper has stopped.
		close(run.helperStop)
		caller.lp.wake()
		<-run.helperDone
	}
	sc.script = nil
	sc.inExclusive = false
	sc.acct.Store(nil)
	if !h.run.shutdown.Load() && !h.inTx {
		switch len(h.effects) {
		case 0:
		case 1:
			sc.appendJournal(s.journal, h.effects[0])
		default:
			sc.appendJournal(s.journal, [][]byte{[]byte("MULTI")})
			for _, e := range h.effects {
				sc.appendJournal(s.journal, e)
			}
			sc.appendJournal(s.journal, [][]byte{[]byte("EXEC")})
		}
	}
	h.wait, h.woff = sc.wait, sc.woff
	sc.wait = nil
	return reply, msg
}

// scriptClient returns the connection through which scripts run their commands, as Redis's
// Lua client: authenticated, with the caller's user while a script runs.
func (s *Server) scriptClient() *Conn {
	if s.scriptConn == nil {
		c := s.newConn(nil)
		c.authed = true
		c.name = "lua"
		c.scriptClient = true
		s.scriptConn = c
	}
	return s.scriptConn
}

// A scriptHost is a running script's view of the server (script.Host).
type scriptHost struct {
	s          *Server
	sc         *Conn // the script client
	caller     *Conn
	run        *scriptRun
	sha        string
	readOnly   bool // EVAL_RO, EVALSHA_RO or a no-writes script
	allowOOM   bool
	oomAtStart bool
	inTx       bool       // the caller runs EXEC: effects join its transaction
	slot       int        // cluster mode: the slot of the keys used so far, -1 before any
	crossSlot  bool       // allow-cross-slot-keys, or no shebang
	effects    [][][]byte // the journal records of the script's writes
	wait       func() error
	woff       int64
}

// record keeps a journal record of a write the script made.
func (h *scriptHost) record(args [][]byte) {
	if h.inTx {
		h.caller.propagate(args)
		return
	}
	h.effects = append(h.effects, copyArgs(args))
}

// lookup resolves a command and its subcommand as Redis's lookupCommand: nil if unknown.
func (s *Server) lookupFull(args [][]byte) *Command {
	cmd := s.mux.Lookup(args[0])
	if cmd == nil || cmd.Subcommands == nil || len(args) < 2 && cmd.Handler != nil {
		return cmd
	}
	if len(args) < 2 {
		return cmd
	}
	return cmd.Subcommands[strings.ToLower(string(args[1]))]
}

// Call runs one command for the script, with Redis 7.0's scriptCall checks in its order.
func (h *scriptHost) Call(args [][]byte, proto int) ([]byte, string) {
	s, sc := h.s, h.sc
	cmd := s.lookupFull(args)
	switch {
	case cmd == nil:
		return nil, "ERR Unknown Redis command called from script"
	case cmd.Flags&FlagModule == 0 && (cmd.Arity > 0 && len(args) != cmd.Arity || len(args) < -cmd.Arity):
		return nil, "ERR Wrong number of args calling Redis command from script"
	case cmd.Flags&FlagNoScript != 0:
		return nil, "ERR This Redis command is not allowed from script"
	case !sc.replApplier && s.repl.IsReplica() && s.repl.Stale() && cmd.Flags&FlagStale == 0:
		return nil, "ERR Can not execute the command on a stale replica"
	}
	if r, i := sc.aclAllows(cmd, args); r != acl.Allowed {
		return nil, h.aclDenied(cmd, args, r, i)
	}
	write := cmd.Flags&FlagWrite != 0
	if write {
		if h.readOnly {
			return nil, "ERR Write commands are not allowed from read-only scripts."
		}
		if !h.run.wrote {
			if s.repl.IsReplica() && s.repl.ReadOnly() && !sc.replApplier {
				return nil, errReadOnly
			}
			if !s.repl.IsReplica() && s.minReplicas.Load() && !s.repl.EnoughReplicas() {
				return nil, errNoReplicas
			}
		}
	}
	if !h.allowOOM && !sc.replApplier && !h.run.wrote && h.oomAtStart && cmd.Flags&FlagDenyOOM != 0 && s.maxmemory.Load() > 0 {
		return nil, errOOM
	}
	if write && !h.run.willWrite() {
		return nil, "ERR " + msgKilled
	}
	if msg := h.caller.scriptClusterCheck(cmd, args, h.crossSlot, &h.slot); msg != "" {
		return nil, msg
	}
	sc.setProto(proto)
	sc.call(cmd, args)
	sc.flushStats()
	out := append([]byte(nil), sc.w.Bytes()...)
	sc.w.Truncate(0)
	return out, ""
}

// aclDenied logs a denial inside a script (context "lua") and returns Redis's error.
func (h *scriptHost) aclDenied(cmd *Command, args [][]byte, r acl.Result, idx int) string {
	sc := h.sc
	object := cmd.Name
	reason := "can't run this command or subcommand"
	switch r {
	case acl.DeniedKey:
		object, reason = string(args[idx]), "can't access at least one of the keys mentioned in the command arguments"
	case acl.DeniedChannel:
		object, reason = string(args[idx]), "can't publish to the channel mentioned in the command"
	}
	sc.srv.acl.denied[r].Add(1)
	sc.cur.Store(cmd)
	user := "default"
	if a := sc.acct.Load(); a != nil {
		user = a.Name()
	}
	sc.srv.acl.log.Add(r, acl.ContextLua, object, user, strings.TrimSuffix(sc.info(time.Now(), false), "\n"), time.Now())
	return "ERR The user executing the script " + reason
}

// CheckACL answers redis.acl_check_cmd.
func (h *scriptHost) CheckACL(args [][]byte) (bool, bool) {
	cmd := h.s.lookupFull(args)
	if cmd == nil {
		return false, false
	}
	r, _ := h.sc.aclAllows(cmd, args)
	return r == acl.Allowed, true
}

// Log writes a redis.log line to bloomd's log.
func (h *scriptHost) Log(level int, msg string) {
	l := h.s.log
	switch level {
	case 0, 1:
		l.Debug(msg, "source", "script")
	case 2:
		l.Info(msg, "source", "script")
	default:
		l.Warn(msg, "source", "script")
	}
}

func scriptLoadCmd(c *Conn, args [][]byte) {
	sc, err := c.srv.scripts.Load(args[2])
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	c.w.BulkString(sc.SHA)
}

func scriptExistsCmd(c *Conn, args [][]byte) {
	c.w.Array(len(args) - 2)
	for _, a := range args[2:] {
		if c.srv.scripts.Exists(a) {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
	}
}

func scriptFlushCmd(c *Conn, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !equalFold(args[2], "sync") && !equalFold(args[2], "async") {
		c.w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	c.srv.scripts.Flush()
	c.w.OK()
}

func scriptKillCmd(c *Conn, args [][]byte) {
	s := c.srv
	s.scriptMu.Lock()
	run := s.scriptRun.Load()
	s.scriptMu.Unlock()
	if run == nil {
		c.w.Error(errNotBusy)
		return
	}
	if msg := run.kill(s.scripts); msg != "" {
		c.w.Error(msg)
		return
	}
	s.log.Warn("Lua script killed by user with SCRIPT KILL.")
	c.w.OK()
}

// scriptDebugCmd answers SCRIPT DEBUG: bloomd has no Lua debugger (LDB), so NO, which turns
// debugging off, succeeds, and YES and SYNC are refused with an error that says so.
func scriptDebugCmd(c *Conn, args [][]byte) {
	switch {
	case equalFold(args[2], "no"):
		c.w.OK()
	case equalFold(args[2], "yes"), equalFold(args[2], "sync"):
		c.w.Error("ERR SCRIPT DEBUG is not supported: bloomd has no Lua debugger")
	default:
		c.w.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	}
}

// scriptShutdown is SHUTDOWN's part while a script runs past busy-reply-threshold: only
// NOSAVE may stop the server then, and it stops the script first, whose writes are not
// journaled (as in Redis, where the process ends before they propagate). It returns the
// error reply that refuses SHUTDOWN, or "".
func (s *Server) scriptShutdown(nosave bool) string {
	s.scriptMu.Lock()
	run := s.scriptRun.Load()
	s.scriptMu.Unlock()
	if run == nil || !run.busy.Load() {
		return ""
	}
	if !nosave {
		return errBusyScript
	}
	run.shutdown.Store(true)
	s.scripts.Kill(msgShutdownKill)
	return ""
}

// appendScriptMemory appends INFO memory's scripting fields, as Redis 7.0 names them.
func (s *Server) appendScriptMemory(b []byte) []byte {
	st := s.scripts.Stats()
	scripts := st.BodyBytes + st.Scripts*96 // each cached script's entry, as Redis counts its dict
	for _, f := range []struct {
		name string
		v    string
	}{
		{"used_memory_lua", strconv.FormatInt(st.LuaBytes, 10)},
		{"used_memory_vm_eval", strconv.FormatInt(st.LuaBytes, 10)},
		{"used_memory_lua_human", humanBytes(st.LuaBytes)},
		{"used_memory_scripts_eval", strconv.FormatInt(scripts, 10)},
		{"number_of_cached_scripts", strconv.FormatInt(st.Scripts, 10)},
		{"number_of_functions", "0"},
		{"used_memory_vm_functions", "0"},
		{"used_memory_vm_total", strconv.FormatInt(st.LuaBytes, 10)},
		{"used_memory_vm_total_human", humanBytes(st.LuaBytes)},
		{"used_memory_functions", "0"},
		{"used_memory_scripts", strconv.FormatInt(scripts, 10)},
		{"used_memory_scripts_human", humanBytes(scripts)},
	} {
		b = append(b, f.name...)
		b = append(b, ':')
		b = append(b, f.v...)
		b = append(b, '\r', '\n')
	}
	return b
}

// busy-reply-threshold, and its old name lua-time-limit: milliseconds.
func init() {
	for _, name := range []string{"busy-reply-threshold", "lua-time-limit"} {
		params = append(params, param{name, true,
			func(c *Config) string { return strconv.FormatInt(c.BusyReplyThreshold, 10) },
			int64Param(func(c *Config) *int64 { return &c.BusyReplyThreshold }, 0, math.MaxInt64/int64(time.Millisecond))})
	}
}
