#!/usr/bin/env bash
# Measures the server CPU time per command of bloomd against RedisBloom, under redis-benchmark
# (Debian's redis-tools), both servers measured in the same run: the table of BENCHMARKS.md's
# "What does bloomd cost per command, against RedisBloom?" section (bench/run.sh bloomd).
#
#   REDISBLOOM_SO=/path/to/redisbloom.so bench/server-cpu.sh
#   REDISBLOOM_SO=... N=500000 ROUNDS=5 bench/server-cpu.sh
#
# REDISBLOOM_SO names the RedisBloom module (redisbloom.so, built from RedisBloom's sources for the
# installed redis-server); without it the script says so and measures bloomd alone.
#
# CPU per command is the server process's utime + stime (from /proc/PID/stat) over the run,
# divided by the commands of the run. Each server has one filter sized for 10M items
# (BF.RESERVE bf 0.01 10000000, 11.4 MiB), made anew at the start of every round and first given
# 100k items unmeasured, so that its pages are in memory. The tests:
# BF.ADD, BF.EXISTS, BF.MADD and BF.MEXISTS of 10 items, random items from 100M (-r 100000000),
# 50 clients, at -P 1 and -P 16, neither server persisting anything; EVALSHA of the Spring
# example's script "return redis.call('BF.ADD', KEYS[1], KEYS[2])" (the filter and the item as
# its two keys), loaded with SCRIPT LOAD; then BF.ADD on two more
# servers with appendonly yes and appendfsync everysec. SETBIT and GETBIT, what a filter kept in
# a plain Redis string costs per bit (the Spring helper's and Redisson's layouts), run at random
# offsets of a 12.5 MB string (10^8 bits, made whole at the start of every round and given 100k
# bits unmeasured), on the same servers, driven by bench/bitload (redis-benchmark's random
# numbers are zero-padded, which Redis refuses as bit offsets) with the same clients and depths:
# for them the "RedisBloom" server is plain redis-server (the module is loaded but not used). PING comes first: what a command costs
# that does no work, the floor of each server's read-parse-reply path. Within a round each test runs on both
# servers back to back, the first server alternating by round; the table gives the median per
# command, and the ratio's median and range over the rounds (each round's ratio taken between
# runs a few seconds apart), so that load from other processes skews a round, not the result.
# Environment: N (commands per single-item test at -P 16, 1M; a third of that at -P 1, where
# each command costs ten times more; the 10-item tests run a fifth), ROUNDS (3),
# TESTS (a pattern selecting tests by name, e.g. 'MADD|MEXISTS'), BLOOMD_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport

N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
TESTS=${TESTS:-.}
R=100000000
for p in redis-server redis-cli redis-benchmark python3 go; do
  command -v $p >/dev/null || { echo "server-cpu.sh: $p not found (apt-get install redis-server redis-tools python3)" >&2; exit 1; }
done
rb=${REDISBLOOM_SO:-}
if [ -z "$rb" ]; then
  echo "server-cpu.sh: REDISBLOOM_SO is not set: measuring bloomd alone, without RedisBloom." >&2
  echo "server-cpu.sh: build RedisBloom 2.6 (redisbloom.so) for this redis-server and set REDISBLOOM_SO to compare." >&2
elif [ ! -r "$rb" ]; then
  echo "server-cpu.sh: REDISBLOOM_SO=$rb cannot be read" >&2
  exit 1
fi
tck=$(getconf CLK_TCK)



go build -o "$tmp/bin/bloomd" ./cmd/bloomd
(cd bench && go build -o "$tmp/bin/bitload" ./bitload) # SETBIT, GETBIT: see bench/bitload

declare -A port pid
# start NAME KIND AOF: starts a server (KIND bloomd or redisbloom) with or without an append-only
# log (AOF yes or no; appendfsync everysec), on a free loopback port.
start() {
  local name=$1 kind=$2 aof=$3 p
  p=$(freeport)
  mkdir -p "$tmp/$name"
  if [ "$kind" = bloomd ]; then
    "$tmp/bin/bloomd" --port "$p" --bind 127.0.0.1 --dir "$tmp/$name" --appendonly "$aof" --appendfsync everysec \
      --save "" --loglevel warning ${BLOOMD_ARGS:-} >"$tmp/$name.log" 2>&1 &
  else
    redis-server --port "$p" --bind 127.0.0.1 --dir "$tmp/$name" --appendonly "$aof" --appendfsync everysec \
      --save "" --loglevel warning --loadmodule "$rb" >"$tmp/$name.log" 2>&1 &
  fi
  pids+=($!)
  pid[$name]=$!
  port[$name]=$p
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$p" PING 2>/dev/null)" = PONG ] && return
    sleep 0.05
  done
  echo "server-cpu.sh: $name does not answer on port $p" >&2
  cat "$tmp/$name.log" >&2
  exit 1
}

servers=(bloomd)
start bloomd bloomd no
start bloomd-aof bloomd yes
if [ -n "$rb" ]; then
  servers=(redisbloom bloomd)
  start redisbloom redisbloom no
  start redisbloom-aof redisbloom yes
fi

# cpu NAME: the server's utime + stime in clock ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/${pid[$1]}/stat"; }

items10=$(printf ' __rand_int__%.0s' $(seq 10))
# test NAME PIPE AOF COMMANDS CMD...: one test in this round, on every server.
run() {
  local round=$1 test=$2 pipe=$3 aof=$4 n=$5
  shift 5
  [[ "$test" =~ $TESTS ]] || return 0
  local order=("${servers[@]}")
  if ((round % 2 == 0)) && ((${#order[@]} == 2)); then order=("${order[1]}" "${order[0]}"); fi
  for s in "${order[@]}"; do
    local name=$s
    [ "$aof" = yes ] && name=$s-aof
    local before after rps
    before=$(cpu "$name")
    if [ "$test" = SETBIT ] || [ "$test" = GETBIT ]; then
      rps=$("$tmp/bin/bitload" -addr "127.0.0.1:${port[$name]}" -cmd "$test" -key "$2" -c 50 -n "$n" -r "$R" -P "$pipe" |
        tr -d '"' | cut -d, -f2)
    else
      rps=$(redis-benchmark -h 127.0.0.1 -p "${port[$name]}" -c 50 -n "$n" -r "$R" -P "$pipe" --csv "$@" 2>/dev/null |
        tail -1 | tr -d '"' | cut -d, -f2)
    fi
    after=$(cpu "$name")
    echo "$round $test $pipe $aof $s $(((after - before))) $n $rps" >>"$tmp/results"
  done
}

# The Spring example's BF.ADD script, loaded on every server (SCRIPT LOAD gives its SHA-1).
script="return redis.call('BF.ADD', KEYS[1], KEYS[2])"
for s in "${servers[@]}"; do
  sha=$(redis-cli -p "${port[$s]}" SCRIPT LOAD "$script")
done

for round in $(seq "$ROUNDS"); do
  for s in "${servers[@]}"; do
    for name in "$s" "$s-aof"; do
      redis-cli -p "${port[$name]}" DEL bf bits >/dev/null
      redis-cli -p "${port[$name]}" BF.RESERVE bf 0.01 10000000 >/dev/null
      redis-cli -p "${port[$name]}" SETBIT bits $((R - 1)) 0 >/dev/null
    done
  done
  # Fault the new filters' pages in (100k random items): the tests measure commands on a filter
  # in memory, not the kernel's first touch of its pages.
  for s in "${servers[@]}"; do
    for name in "$s" "$s-aof"; do
      redis-benchmark -h 127.0.0.1 -p "${port[$name]}" -c 10 -n 10000 -r "$R" -P 16 BF.MADD bf $items10 >/dev/null 2>&1
      "$tmp/bin/bitload" -addr "127.0.0.1:${port[$name]}" -cmd SETBIT -key bits -c 10 -n 100000 -r "$R" -P 16 >/dev/null
    done
  done
  for pipe in 16 1; do
    n=$N
    [ "$pipe" = 1 ] && n=$((N / 3))
    run "$round" PING "$pipe" no "$n" PING
    run "$round" BF.ADD "$pipe" no "$n" BF.ADD bf __rand_int__
    run "$round" BF.EXISTS "$pipe" no "$n" BF.EXISTS bf __rand_int__
    run "$round" BF.MADD "$pipe" no $((n / 5)) BF.MADD bf $items10
    run "$round" BF.MEXISTS "$pipe" no $((n / 5)) BF.MEXISTS bf $items10
    run "$round" EVALSHA:BF.ADD "$pipe" no "$n" EVALSHA "$sha" 2 bf __rand_int__
    run "$round" BF.ADD "$pipe" yes "$n" BF.ADD bf __rand_int__
    run "$round" SETBIT "$pipe" no "$n" SETBIT bits
    run "$round" GETBIT "$pipe" no "$n" GETBIT bits
  done
  echo "round $round of $ROUNDS done" >&2
done

echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), redis-server $(redis-server --version | cut -d' ' -f3 | cut -d= -f2), load average before the run's end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$N commands per single-item test at -P 16 and $((N / 3)) at -P 1, a fifth of that per 10-item test; -c 50, -r $R; $ROUNDS rounds."
echo
echo "| command | -P | appendonly | RedisBloom µs/cmd | bloomd µs/cmd | bloomd/RedisBloom (range) | bloomd ops/s |"
echo "|---|---:|---|---:|---:|---:|---:|"
awk -v tck="$tck" '
  function sort(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t } }
  function median(list,   n, a) { n = split(list, a, " "); if (n == 0) return ""; sort(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function lo(list,   n, a) { n = split(list, a, " "); sort(a, n); return a[1] }
  function hi(list,   n, a) { n = split(list, a, " "); sort(a, n); return a[n] }
  {
    k = $2 SUBSEP $3 SUBSEP $4
    if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
    us = $6 * 1e6 / tck / $7
    cost[$1, k, $5] = us; c[k, $5] = c[k, $5] " " us; ops[k, $5] = ops[k, $5] " " $8
  }
  END {
    for (i = 1; i <= nk; i++) {
      k = order[i]; split(k, f, SUBSEP)
      ratios = ""
      for (key in cost) { split(key, g, SUBSEP); if (g[2] SUBSEP g[3] SUBSEP g[4] == k && g[5] == "bloomd" && ((g[1], k, "redisbloom") in cost)) ratios = ratios " " cost[key] / cost[g[1], k, "redisbloom"] }
      rbc = median(c[k, "redisbloom"])
      printf "| `%s` | %d | %s | %s | %.2f | %s | %.0f |\n", f[1], f[2], f[3], (rbc == "" ? "-" : sprintf("%.2f", rbc)), median(c[k, "bloomd"]),
        (ratios == "" ? "-" : sprintf("%.2f (%.2f–%.2f)", median(ratios), lo(ratios), hi(ratios))), median(ops[k, "bloomd"])
    }
  }' "$tmp/results"
