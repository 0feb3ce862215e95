package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// A Host runs the Redis commands a script calls, in the server that runs the script. Its
// methods are called from the goroutine that called Engine.Run, during that call.
type Host interface {
	// Call runs one command (args[0] is its name) as the script's client and returns its
	// reply, one RESP value in protocol proto (2 or 3). A command refused before it ran
	// returns refused instead: the error text with its code ("ERR Unknown Redis command
	// called from script", "OOM command not allowed ..."), as Redis's scriptCall words it.
	Call(args [][]byte, proto int) (reply []byte, refused string)
	// CheckACL answers redis.acl_check_cmd: whether the caller's user may run args; known is
	// false for an unknown command.
	CheckACL(args [][]byte) (allowed, known bool)
	// Log writes a redis.log line at level (0 debug, 1 verbose, 2 notice, 3 warning).
	Log(level int, msg string)
}

// A Script is a compiled script of the cache.
type Script struct {
	SHA   string // 40 lower-case hex digits of the body's SHA-1
	Body  []byte
	Flags Flags
	proto *lua.FunctionProto
}

// A Request is one run of a script.
type Request struct {
	Script     *Script
	Keys, Args [][]byte
	Proto      int // the caller's protocol: the reply is written in it
	Host       Host
	// Tick, if set, is called about every millisecond while the script runs, from another
	// goroutine, with the time it has run: the server's busy-reply-threshold.
	Tick func(elapsed time.Duration)
}

// Options configure an Engine.
type Options struct {
	// Version is what redis.REDIS_VERSION says ("7.0.15"); VersionNum is REDIS_VERSION_NUM.
	Version    string
	VersionNum int
	// LogLevel returns the server's verbosity as redis.log compares it (0 debug ... 3
	// warning): lines below it are dropped.
	LogLevel func() int
	// MemoryBudget returns how many bytes the Go heap may grow by while a script runs before
	// the script is stopped; nil or a value <= 0 for no bound.
	MemoryBudget func() int64
}

// Errors of Engine.Kill.
var (
	ErrNotBusy = errors.New("script: no script is running")
)

// An Engine keeps the script cache and one Lua interpreter, as Redis does: every script runs
// in the same sandboxed state, one at a time. Load, Lookup, Exists, Flush and Run may be
// called from any goroutine; Run serialises the runs. Kill and Running may be called while a
// script runs.
type Engine struct {
	opts Options

	runMu   sync.Mutex // held by a run, and by Flush
	st      *state
	rng     rand48 // math.random's state: kept for the life of the Engine, as Redis's
	cacheMu sync.Mutex
	scripts map[string]*Script
	bodies  atomic.Int64 // bytes of the cached bodies, for INFO's used_memory_scripts_eval
	count   atomic.Int64 // cached scripts

	cur atomic.Pointer[run] // the running script, nil if none
	wd  watchdog
}

// New returns an Engine with an empty cache.
func New(opts Options) *Engine {
	if opts.Version == "" {
		opts.Version, opts.VersionNum = "7.0.15", 0x0007000f
	}
	e := &Engine{opts: opts, scripts: make(map[string]*Script), rng: newRand48()}
	e.st = newState(e)
	return e
}

// SHA1Hex returns the lower-case hex SHA-1 of b, as Redis names scripts.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Load compiles body and adds it to the cache (SCRIPT LOAD, and EVAL of a new body). A body
// already cached is not compiled again. The error's text is Redis's reply without "ERR ".
func (e *Engine) Load(body []byte) (*Script, error) {
	sha := SHA1Hex(body)
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if s := e.scripts[sha]; s != nil {
		return s, nil
	}
	flags, n, err := ParseShebang(body)
	if err != nil {
		return nil, err
	}
	proto, err := compile(body[n:])
	if err != nil {
		return nil, err
	}
	s := &Script{SHA: sha, Body: append([]byte(nil), body...), Flags: flags, proto: proto}
	e.scripts[sha] = s
	e.bodies.Add(int64(len(body)))
	e.count.Add(1)
	return s, nil
}

// compile compiles a script body with the chunk name Redis gives it, "@user_script", so that
// errors say "user_script:LINE:". A syntax error reads as Redis's frame "Error compiling
// script (new function): user_script:LINE: ...", with the parser's own words after it.
func compile(body []byte) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(string(body)), chunkName)
	if err != nil {
		return nil, errors.New("Error compiling script (new function): " + syntaxError(err, body))
	}
	proto, err := lua.Compile(chunk, chunkName)
	if err != nil {
		return nil, errors.New("Error compiling script (new function): " + chunkName + ": " + strings.TrimSpace(err.Error()))
	}
	// A main chunk has no "arg" table in Lua 5.1 (it is vararg only); gopher-lua would make
	// one on every call.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return proto, nil
}

const chunkName = "user_script"

// syntaxError words a parse error as Lua 5.1 does: "user_script:LINE: MESSAGE near 'TOKEN'"
// ('<eof>' at the end of the body, on its last line).
func syntaxError(err error, body []byte) string {
	var pe *parse.Error
	if !errors.As(err, &pe) {
		return chunkName + ": " + strings.TrimSpace(err.Error())
	}
	msg := strings.TrimSpace(pe.Message)
	switch msg {
	case "parse error", "syntax error":
		msg = "unexpected symbol"
	case "unterminated string":
		msg = "unfinished string"
	}
	line, tok := pe.Pos.Line, "'"+pe.Token+"'"
	if line == parse.EOF {
		line, tok = 1+strings.Count(string(body), "\n"), "'<eof>'"
	}
	return chunkName + ":" + itoa(line) + ": " + msg + " near " + tok
}

func itoa(n int) string { return formatNumber(float64(n)) }

// Lookup returns the cached script with the given SHA-1 (any case), or nil.
func (e *Engine) Lookup(sha []byte) *Script {
	if len(sha) != 40 {
		return nil
	}
	key := strings.ToLower(string(sha))
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	return e.scripts[key]
}

// Exists reports whether a script with the given SHA-1 (any case) is cached.
func (e *Engine) Exists(sha []byte) bool { return e.Lookup(sha) != nil }

// Flush empties the cache and starts a fresh interpreter (SCRIPT FLUSH). It waits for a
// running script to end.
func (e *Engine) Flush() {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	e.scripts = make(map[string]*Script)
	e.bodies.Store(0)
	e.count.Store(0)
	e.st.L.Close()
	e.st = newState(e)
}

// Stats is what INFO reports of scripting.
type Stats struct {
	Scripts    int64 // number_of_cached_scripts
	BodyBytes  int64 // the cached bodies
	LuaBytes   int64 // the interpreter's estimated heap (used_memory_lua)
	RunningSHA string
}

// Stats returns the cache's size and the interpreter's estimated memory.
func (e *Engine) Stats() Stats {
	s := Stats{Scripts: e.count.Load(), BodyBytes: e.bodies.Load(), LuaBytes: luaBaseBytes + 2*e.bodies.Load()}
	if r := e.cur.Load(); r != nil {
		s.RunningSHA = r.sha
	}
	return s
}

// luaBaseBytes is the estimated size of a fresh interpreter with its libraries (Redis 7.0's
// reports 31744 for its own).
const luaBaseBytes = 31744

// Running reports whether a script runs now, and if so whether it has written (see
// Wrote).
func (e *Engine) Running() bool { return e.cur.Load() != nil }

// Kill stops the running script at its next instruction with the error msg (Redis's "Script
// killed by user with SCRIPT KILL..." for SCRIPT KILL): a pcall inside the script cannot
// catch it for long, since every following instruction raises it again. It returns
// ErrNotBusy if no script runs.
func (e *Engine) Kill(msg string) error {
	r := e.cur.Load()
	if r == nil {
		return ErrNotBusy
	}
	r.kill(msg)
	return nil
}

// A run is the state of one running script; it is the Lua state's context, whose
// cancellation stops the script.
type run struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	why    atomic.Pointer[string]
	sha    string
	req    *Request
	proto  int // the protocol of the script's own client (redis.setresp)
}

func (r *run) kill(msg string) {
	if r.why.CompareAndSwap(nil, &msg) {
		r.cancel(errors.New(msg))
	}
}

// Run runs a script and returns its reply in req.Proto, or an error reply's text (with its
// code, without "-"). Runs are serialised.
func (e *Engine) Run(req *Request) (reply []byte, errMsg string) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	r := &run{sha: req.Script.SHA, req: req, proto: 2}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	e.cur.Store(r)
	defer func() {
		e.cur.Store(nil)
		r.cancel(nil)
	}()
	stop := e.watch(r)
	defer stop()
	return e.st.call(r)
}
