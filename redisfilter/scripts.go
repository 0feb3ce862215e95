package redisfilter

import "github.com/redis/go-redis/v9"

// The Lua scripts. Each one checks the stored parameters and then reads or writes the bits in the
// same call, so a check and its effect can never be separated by another client's change.
//
// Every script validates everything before its first write: the parameters (HGET, a read) and
// the type of the data key (the first SETBIT or BITFIELD fails with WRONGTYPE before it writes).
// A Redis script that fails after writing keeps its writes, so this order is what guarantees that
// a call which returns an error has changed nothing. On a missing filter, an add writes the
// parameters before the first bit, in the same atomic call, so bits never exist without the
// parameters that give them meaning; a test answers "absent" without writing anything.
//
// Operations (ARGV after the check arguments): 'i' creates or checks the parameters only,
// 'a' adds, 't' tests, 'r' removes (counting filters). Results are strings of '0' and '1', one
// per key, which are cheaper to send and decode than arrays of integers.

// mismatchPrefix starts the error reply a script sends when the stored parameters differ; the
// rest of the reply is the stored parameter line (empty when bits exist without parameters).
const mismatchPrefix = "BLOOMMISMATCH"

// nativeHeader checks the parameter line of a native-layout filter.
// KEYS[1]: the parameter hash; KEYS[2]: the data key.
// ARGV[1]: the parameter line; ARGV[2]: op; ARGV[3]: number of keys.
const nativeHeader = `
local op, n = ARGV[2], tonumber(ARGV[3])
local stored = redis.call('HGET', KEYS[1], 'params')
if not stored then
  if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('BLOOMMISMATCH ') end
  if op ~= 'a' and op ~= 'i' then return string.rep('0', n) end
  redis.call('HSET', KEYS[1], 'params', ARGV[1])
elseif stored ~= ARGV[1] then
  return redis.error_reply('BLOOMMISMATCH ' .. stored)
end
local a = 4
`

// redissonHeader checks (or, on a missing filter, writes as Redisson's tryInit does) the four
// fields of Redisson's config hash, compared as strings as Redisson compares them.
// KEYS[1]: "{name}:config"; KEYS[2]: the bitmap "name".
// ARGV[1..4]: size, hashIterations, expectedInsertions, falseProbability; ARGV[5]: op;
// ARGV[6]: number of keys.
const redissonHeader = `
local op, n = ARGV[5], tonumber(ARGV[6])
local c = redis.call('HMGET', KEYS[1], 'size', 'hashIterations', 'expectedInsertions', 'falseProbability')
if not c[1] and not c[2] and not c[3] and not c[4] then
  if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('BLOOMMISMATCH ') end
  if op ~= 'a' and op ~= 'i' then return string.rep('0', n) end
  redis.call('HSET', KEYS[1], 'size', ARGV[1], 'hashIterations', ARGV[2], 'expectedInsertions', ARGV[3], 'falseProbability', ARGV[4])
elseif c[1] ~= ARGV[1] or c[2] ~= ARGV[2] or c[3] ~= ARGV[3] or c[4] ~= ARGV[4] then
  return redis.error_reply('BLOOMMISMATCH redisson size=' .. (c[1] or '') .. ' hashIterations=' .. (c[2] or '') ..
    ' expectedInsertions=' .. (c[3] or '') .. ' falseProbability=' .. (c[4] or ''))
end
local a = 7
`

// bitsBody sets or tests bit offsets of KEYS[2]. ARGV[a]: offsets per key, or 0 when each key's
// offsets are preceded by their count (the parts of a split filter get different numbers of a
// key's positions); then the offsets. Add answers 1 for a key when at least one of its bits was
// clear (Guava's put); test answers 1 when all are set, and stops at the first clear bit.
//
// One SETBIT or GETBIT per bit: measured on Redis 7.0, this costs the server less than batching
// the bits into BITFIELD SET/GET u1 commands (whose argument parsing dominates), and a test of an
// absent key usually stops after one or two bits.
const bitsBody = `
local stride, out, j = tonumber(ARGV[a]), {}, a + 1
for i = 1, n do
  local c = stride
  if c == 0 then c = tonumber(ARGV[j]); j = j + 1 end
  local r = 0
  if op == 'a' then
    for q = j, j + c - 1 do
      if redis.call('SETBIT', KEYS[2], ARGV[q], 1) == 0 then r = 1 end
    end
  else
    r = 1
    for q = j, j + c - 1 do
      if redis.call('GETBIT', KEYS[2], ARGV[q]) == 0 then r = 0; break end
    end
  end
  out[i] = r
  j = j + c
end
return table.concat(out)
`

// countersBody increments, tests or decrements 4-bit counters of KEYS[2] with BITFIELD (u4,
// OVERFLOW SAT: a counter stops at 15 and then stays there, since its true count is unknown).
// ARGV[a]: counters per key (k); then the counter indexes. Add answers 1 when a counter was 0
// (the key was definitely new); test answers 1 when all counters are nonzero. Remove takes one
// key: it first reads the counters and, if the key is definitely absent (a counter below the
// number of times the key uses it, not counting saturated ones), answers 0 and changes nothing;
// otherwise it decrements every unsaturated counter once per use and answers 1.
const countersBody = `
local k, out, j = tonumber(ARGV[a]), {}, a + 1
for i = 1, n do
  local args = {}
  if op == 'a' then
    args[1] = 'OVERFLOW'; args[2] = 'SAT'
    for q = j, j + k - 1 do
      args[#args+1] = 'INCRBY'; args[#args+1] = 'u4'; args[#args+1] = '#' .. ARGV[q]; args[#args+1] = 1
    end
    local v = redis.call('BITFIELD', KEYS[2], unpack(args))
    local r = 0
    for _, x in ipairs(v) do if x == 1 then r = 1 end end
    out[i] = r
  else
    for q = j, j + k - 1 do
      args[#args+1] = 'GET'; args[#args+1] = 'u4'; args[#args+1] = '#' .. ARGV[q]
    end
    local v = redis.call('BITFIELD', KEYS[2], unpack(args))
    local r = 1
    if op == 't' then
      for _, x in ipairs(v) do if x == 0 then r = 0; break end end
    else
      local uses, val = {}, {}
      for q = j, j + k - 1 do
        uses[ARGV[q]] = (uses[ARGV[q]] or 0) + 1
        val[ARGV[q]] = v[q - j + 1]
      end
      for c, u in pairs(uses) do
        if val[c] < 15 and val[c] < u then r = 0 end
      end
      if r == 1 then
        local dec = {'OVERFLOW', 'SAT'}
        for q = j, j + k - 1 do
          if val[ARGV[q]] < 15 then
            dec[#dec+1] = 'INCRBY'; dec[#dec+1] = 'u4'; dec[#dec+1] = '#' .. ARGV[q]; dec[#dec+1] = -1
          end
        end
        if #dec > 2 then redis.call('BITFIELD', KEYS[2], unpack(dec)) end
      end
    end
    out[i] = r
  end
  j = j + k
end
return table.concat(out)
`

// scalableScript adds to or tests a chain of bitmaps that grows inside the script.
// KEYS[1]: the parameter hash (fields params, links, c0, c1, ...: the chain's length and the
// number of keys added to each link); KEYS[2..L+1]: the bitmaps of links 0..L-1.
// ARGV[1]: the parameter line; ARGV[2]: op; ARGV[3]: number of keys; ARGV[4]: L, the number of
// links the client sent (for adds, one more than it believes exist, so the chain can grow);
// ARGV[5]: the most links the chain may have; ARGV[6..5+L]: each link's capacity;
// ARGV[6+L..5+2L]: each link's k; then for each key, for each link in order, that link's k bit
// offsets.
//
// A key is present when all its bits are set in some existing link (newest first). Add puts a
// key that is not present into the newest link; when that link already holds its capacity, the
// script appends a new link first. If the chain needs a link the client did not send (or has
// more links than the client knows), the script stops and answers with the results so far and
// the chain's length; the client resends the rest. A chain at its most links stops growing and
// adds to its newest link beyond capacity. The reply is {results, links}.
const scalableScript = `
local op, n, L, maxl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local stored = redis.call('HGET', KEYS[1], 'params')
local links
if not stored then
  if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('BLOOMMISMATCH ') end
  if op ~= 'a' and op ~= 'i' then return {string.rep('0', n), 0} end
  redis.call('HSET', KEYS[1], 'params', ARGV[1], 'links', 1, 'c0', 0)
  links = 1
elseif stored ~= ARGV[1] then
  return redis.error_reply('BLOOMMISMATCH ' .. stored)
else
  links = tonumber(redis.call('HGET', KEYS[1], 'links'))
end
if links > L then return {'', links} end
if op == 'a' then
  -- Links this call may create must not exist yet: growing into a key of another type would fail
  -- after earlier keys of the call were written.
  for i = links + 1, L do
    if redis.call('EXISTS', KEYS[1 + i]) == 1 then
      return redis.error_reply('BLOOMMISMATCH ' .. (stored or ARGV[1]) .. ' unexpected=' .. KEYS[1 + i])
    end
  end
end
local caps, ks, off, stride = {}, {}, {}, 0
for i = 1, L do
  caps[i] = tonumber(ARGV[5 + i]); ks[i] = tonumber(ARGV[5 + L + i]); off[i] = stride; stride = stride + ks[i]
end
local counts = {}
if op == 'a' then
  for i = 1, links do counts[i] = tonumber(redis.call('HGET', KEYS[1], 'c' .. (i - 1)) or '0') end
end
local base, out, dirty = 6 + 2 * L, {}, false
for x = 1, n do
  local j = base + (x - 1) * stride
  local present = false
  for i = links, 1, -1 do
    local all = true
    for q = j + off[i], j + off[i] + ks[i] - 1 do
      if redis.call('GETBIT', KEYS[1 + i], ARGV[q]) == 0 then all = false; break end
    end
    if all then present = true; break end
  end
  if op ~= 'a' then
    out[x] = present and 1 or 0
  elseif present then
    out[x] = 0
  else
    if counts[links] >= caps[links] and links < maxl then
      if links >= L then break end
      links = links + 1
      counts[links] = 0
    end
    for q = j + off[links], j + off[links] + ks[links] - 1 do
      redis.call('SETBIT', KEYS[1 + links], ARGV[q], 1)
    end
    counts[links] = counts[links] + 1
    dirty = true
    out[x] = 1
  end
end
if dirty then
  local h = {'links', links}
  for i = 1, links do h[#h + 1] = 'c' .. (i - 1); h[#h + 1] = counts[i] end
  redis.call('HSET', KEYS[1], unpack(h))
end
return {table.concat(out), links}
`

var (
	nativeScript   = redis.NewScript(nativeHeader + bitsBody)
	redissonScript = redis.NewScript(redissonHeader + bitsBody)
	countingScript = redis.NewScript(nativeHeader + countersBody)
	chainScript    = redis.NewScript(scalableScript)
)
