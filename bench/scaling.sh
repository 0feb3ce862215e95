#!/usr/bin/env bash
# Measures how bloomd's throughput and CPU per command grow with its event loops (io-threads),
# against Redis + RedisBloom with the same io-threads: the table of BENCHMARKS.md's "Does bloomd
# use more cores?" section (bench/run.sh scaling).
#
#   bench/scaling.sh
#   REDISBLOOM_SO=/path/to/redisbloom.so N=2000000 ROUNDS=3 bench/scaling.sh
#
# The CPUs this script may use (its affinity, as taskset or a cgroup cpuset gives it) are split
# in two: the last CLIENT_CORES of them (default a quarter, at least one) run redis-benchmark,
# pinned there with taskset and given one thread per core; the others run the server, pinned
# there too. The server runs with io-threads 1, 2, ... up to one less than its cores (at least
# 1): bloomd's default leaves one core for the Go runtime, the journal and the rest, and Redis
# advises the same for its io-threads. With a single CPU in all, client and server share it, and
# the output says so. Every server is started anew for each io-threads value, with one filter
# sized for 10M items (BF.RESERVE bf 0.01 10000000, 11.4 MiB) first given 100k items unmeasured,
# and nothing persisted.
#
# Each test is BF.ADD or BF.EXISTS of random items from 100M (-r 100000000), from max(50, 8 x
# io-threads) clients, at each -P of PIPES; throughput is redis-benchmark's, CPU per command the
# server process's utime + stime (from /proc/PID/stat) over the run divided by its commands. Within
# a round each io-threads value runs on both servers back to back; the table gives medians over
# the rounds, and each server's throughput relative to its own at io-threads 1.
# Environment: N (commands per test at -P 16, 1M; a fifth of that at -P 1), ROUNDS (3), PIPES
# ("16 1"), CLIENT_CORES, THREADS (the io-threads values; default every one from 1 to the most
# when that is at most 8, else the powers of two and the most), BLOOMD_ARGS.
# REDISBLOOM_SO names the RedisBloom module; without it bloomd is measured alone.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport

N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
PIPES=${PIPES:-16 1}
R=100000000
for p in redis-server redis-cli redis-benchmark taskset python3 go; do
  command -v $p >/dev/null || { echo "scaling.sh: $p not found (apt-get install redis-server redis-tools util-linux python3)" >&2; exit 1; }
done
rb=${REDISBLOOM_SO:-}
if [ -z "$rb" ]; then
  echo "scaling.sh: REDISBLOOM_SO is not set: measuring bloomd alone, without RedisBloom." >&2
elif [ ! -r "$rb" ]; then
  echo "scaling.sh: REDISBLOOM_SO=$rb cannot be read" >&2
  exit 1
fi
tck=$(getconf CLK_TCK)

# The CPUs we may use, in order, and the split between client and server.
read -r -a cpus <<<"$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')"
total=${#cpus[@]}
if ((total == 1)); then
  client_cpus=${cpus[0]}
  server_cpus=${cpus[0]}
  shared="client and server share the only CPU"
  server_cores=1
else
  nc=${CLIENT_CORES:-$(((total + 2) / 4))}
  ((nc >= 1)) || nc=1
  ((nc < total)) || nc=$((total - 1))
  server_cores=$((total - nc))
  server_cpus=$(IFS=,; echo "${cpus[*]:0:server_cores}")
  client_cpus=$(IFS=,; echo "${cpus[*]:server_cores}")
  shared="client on its own CPUs"
fi
client_threads=$(echo "$client_cpus" | tr ',' '\n' | wc -l)
max_threads=$((server_cores > 1 ? server_cores - 1 : 1))
if [ -n "${THREADS:-}" ]; then
  steps=$THREADS
elif ((max_threads <= 8)); then
  steps=$(seq "$max_threads")
else
  steps=$(t=1; while ((t < max_threads)); do echo $t; t=$((t * 2)); done; echo "$max_threads")
fi

go build -o "$tmp/bin/bloomd" ./cmd/bloomd

servers=(bloomd)
[ -z "$rb" ] || servers=(redisbloom bloomd)

pid=
port=
# start KIND THREADS: starts a server (bloomd or redisbloom) pinned to the server CPUs, with
# THREADS io-threads, on a free loopback port; sets pid and port.
start() {
  local kind=$1 threads=$2
  port=$(freeport)
  rm -rf "$tmp/data"
  mkdir -p "$tmp/data"
  if [ "$kind" = bloomd ]; then
    taskset -c "$server_cpus" "$tmp/bin/bloomd" --port "$port" --bind 127.0.0.1 --dir "$tmp/data" \
      --appendonly no --save "" --loglevel warning --io-threads "$threads" ${BLOOMD_ARGS:-} >"$tmp/server.log" 2>&1 &
  else
    taskset -c "$server_cpus" redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/data" \
      --appendonly no --save "" --loglevel warning --io-threads "$threads" --io-threads-do-reads yes \
      --loadmodule "$rb" >"$tmp/server.log" 2>&1 &
  fi
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; then
      redis-cli -p "$port" BF.RESERVE bf 0.01 10000000 >/dev/null
      # Fault the filter's pages in: the tests measure commands on a filter in memory.
      bench BF.MADD 16 10 10000 BF.MADD bf $(printf ' __rand_int__%.0s' $(seq 10)) >/dev/null
      return
    fi
    sleep 0.05
  done
  echo "scaling.sh: $kind does not answer on port $port" >&2
  cat "$tmp/server.log" >&2
  exit 1
}

stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pids=()
}

# bench NAME PIPE CLIENTS REQUESTS CMD...: redis-benchmark pinned to the client CPUs; prints
# requests per second.
bench() {
  local pipe=$2 clients=$3 n=$4
  shift 4
  local threads=()
  ((client_threads == 1)) || threads=(--threads "$client_threads")
  taskset -c "$client_cpus" redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$n" -r "$R" -P "$pipe" \
    "${threads[@]}" --csv "$@" 2>/dev/null | tail -1 | tr -d '"' | cut -d, -f2
}

cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }

for round in $(seq "$ROUNDS"); do
  for threads in $steps; do
    order=("${servers[@]}")
    if ((round % 2 == 0)) && ((${#order[@]} == 2)); then order=("${order[1]}" "${order[0]}"); fi
    for s in "${order[@]}"; do
      start "$s" "$threads"
      clients=$((8 * threads > 50 ? 8 * threads : 50))
      for pipe in $PIPES; do
        n=$N
        [ "$pipe" = 1 ] && n=$((N / 5))
        for cmd in BF.ADD BF.EXISTS; do
          before=$(cpu)
          rps=$(bench "$cmd" "$pipe" "$clients" "$n" "$cmd" bf __rand_int__)
          after=$(cpu)
          echo "$round $s $threads $cmd $pipe $((after - before)) $n $rps" >>"$tmp/results"
        done
      done
      stop
    done
  done
  echo "round $round of $ROUNDS done" >&2
done

echo "Machine: $total CPUs usable ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(go version | cut -d' ' -f3), redis-server $(redis-server --version | cut -d' ' -f3 | cut -d= -f2), load average before the run's end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Server pinned to CPUs $server_cpus, redis-benchmark to CPUs $client_cpus (threads: $client_threads; $shared); io-threads $(echo $steps | tr ' ' ,)."
echo "$N commands per test at -P 16, $((N / 5)) at -P 1; max(50, 8 x io-threads) clients, -r $R; medians of $ROUNDS rounds."
echo
echo "| server | command | -P | io-threads | ops/s | × ops/s at io-threads 1 | server CPU µs/cmd | server CPU cores busy |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
awk -v tck="$tck" '
  function sort(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t } }
  function median(list,   n, a) { n = split(list, a, " "); sort(a, n); return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  {
    k = $2 SUBSEP $4 SUBSEP $5 SUBSEP $3
    if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
    us = $6 * 1e6 / tck / $7
    c[k] = c[k] " " us; ops[k] = ops[k] " " $8
    # cores busy: CPU seconds over wall seconds of the run (commands / ops per second)
    busy[k] = busy[k] " " ($8 > 0 ? ($6 / tck) / ($7 / $8) : 0)
  }
  END {
    # rows grouped by server, command and -P, io-threads ascending
    n = 0
    for (i = 1; i <= nk; i++) { split(order[i], f, SUBSEP); key[++n] = sprintf("%s\t%s\t%06d\t%06d", f[1], f[2], 1000 - f[3], f[4]); src[key[n]] = order[i] }
    sort2(key, n)
    for (i = 1; i <= n; i++) {
      k = src[key[i]]; split(k, f, SUBSEP)
      base = median(ops[f[1], f[2], f[3], 1])
      o = median(ops[k])
      printf "| %s | `%s` | %d | %d | %.0f | %.2f | %.2f | %.2f |\n", f[1], f[2], f[3], f[4], o, (base > 0 ? o / base : 0), median(c[k]), median(busy[k])
    }
  }
  function sort2(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } }
  ' "$tmp/results"
