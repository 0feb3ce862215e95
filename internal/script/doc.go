// Package script runs Lua scripts as Redis 7.0.15 does for EVAL: Lua 5.1 (here gopher-lua),
// Redis's sandbox and libraries, its redis.* functions and its conversions between Lua values
// and RESP2/RESP3 replies, with its error texts. The server (internal/server, cmd_script.go)
// owns the commands EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, and is the Host through
// which redis.call runs commands; this package knows nothing of keys.
//
// # What follows Redis
//
// An Engine holds the script cache (SHA-1 of the body, looked up in any case) and one
// interpreter for every script, run one at a time. A script is compiled with the chunk name
// "@user_script", after an optional shebang line ("#!lua flags=no-writes,allow-oom,
// allow-stale,no-cluster,allow-cross-slot-keys") whose errors are Redis's (ParseShebang).
//
//   - The sandbox: the libraries string, table, math, coroutine, cjson, bit, struct and
//     cmsgpack, and the base functions Redis 7.0.15 leaves (no print, dofile, loadfile,
//     require, module, package, os, io, debug, getfenv, setfenv, newproxy). Every table
//     reachable from the globals is read-only ("Attempt to modify a readonly table"); reading a
//     missing global is an error ("Script attempted to access nonexistent global variable").
//   - redis.call and redis.pcall (arguments as strings, numbers as "%.17g"), error_reply,
//     status_reply, sha1hex, log, setresp, set_repl, replicate_commands, breakpoint, debug,
//     acl_check_cmd, the LOG_* and REPL_* constants, REDIS_VERSION(_NUM); pcall returns the
//     message of an error table, as Redis's pcall does.
//   - Replies to Lua: integers and doubles to numbers, bulk strings to strings, null bulk and
//     null array to false, status to {ok=...}, errors to {err=...}, RESP3 maps, sets, big
//     numbers, doubles and verbatim strings to Redis's tables, null to nil. Lua to replies:
//     numbers truncated to integers, true to 1, false to null (RESP3 booleans after
//     redis.setresp(3)), tables to arrays up to the first nil, and the err, ok, double,
//     big_number, verbatim_string, map and set tables, in the caller's protocol.
//   - Errors end as Redis words them: "ERR user_script:1: ... script: <sha>, on
//     @user_script:1.", the position being the function that raised the error or, for a
//     library function, its caller.
//   - math.random is Redis's redisLrand48, its state kept for the life of the server.
//   - cjson (lua-cjson 2.1.0), bit (LuaBitOp), struct and cmsgpack are written here, with their
//     number formats, table rules and error texts (each file says why no library did).
//
// TestScriptingTranscripts replays testdata/scripting/eval.txt, recorded from redis-server
// 7.0.15 (conversions both ways, pcall, error_reply, the sandbox, the libraries, shebangs),
// against bloomd and redis-server; testdata/redisbloom/resp2-scripting.txt, recorded from
// RedisBloom 2.6.28, does the same for scripts calling BF.* and CF.*; TestScriptBusy compares
// -BUSY, SCRIPT KILL and UNKILLABLE with redis-server.
//
// # What differs on purpose
//
//   - gopher-lua is not Lua 5.1's C code: some error texts of its parser and VM differ
//     (runtime errors do not name the variable: "attempt to index a nil value" where Lua says
//     "attempt to index local 't' (a nil value)"); the transcript's "bloomd:" notes list
//     them. The common ones are reworded to Lua's when the variable is not named (luaMessage).
//     Concatenation formats numbers with Go's shortest form ("x" .. 1/3), where tostring and
//     string.format follow C's "%.14g" and printf exactly; tables iterate in insertion order,
//     not in Lua's hash order, which shows in maps and cjson objects of several keys.
//   - A script flagged allow-oom runs deny-oom commands over maxmemory, but the server still
//     refuses a key that needs new memory past it (bloomd charges keys when they are made).
//   - redis.set_repl checks its argument and does nothing: a script's effects are always
//     journaled and replicated, so that the log and the replicas never lose writes the
//     keyspace has.
//   - There is no Lua debugger: SCRIPT DEBUG YES and SYNC are refused with an error that
//     says so; NO succeeds.
//   - A table error without an "err" field ("error({})") ends with "ERR Error running script:
//     the error object has no 'err' field"; redis-server 7.0.15 crashes on it.
//   - Memory: a script's heap growth is watched while it runs (memory.go) and bounded by what
//     the server's memory ceiling leaves (Options.MemoryBudget); a runaway script is stopped
//     with an error ("Script killed: its memory grew by more than N bytes ..."), where Redis
//     would let Lua allocate until the process fails. TestScriptMemoryBound proves it.
//
// # Running alone, busy scripts, effects
//
// These are the server's (cmd_script.go): a script runs while no other command runs (the
// server's gate); past busy-reply-threshold other clients get -BUSY and SCRIPT KILL stops a
// script that has not written (Kill here, checked at every instruction, so pcall cannot keep
// it alive); a script's writes reach the log and the replicas as the commands it ran,
// between MULTI and EXEC when there are several, so a replay never runs Lua
// (TestScriptingTranscripts replays the journal, TestScriptEffectsSurviveKill kills bloomd).
package script
