#!/usr/bin/env bash
# Measures bloomd's durability costs: the table of BENCHMARKS.md's "What do bloomd's durability
# settings cost?" section (bench/run.sh durability).
#
#   internal/persist/bench.sh                  # 3 rounds of 1M requests per test, 4 GB snapshot
#   N=2000000 ROUNDS=5 GB=8 internal/persist/bench.sh
#
# 1. BF.ADD throughput with redis-benchmark (Debian's redis-tools), -c 50 at -P 1 and -P 16, random
#    items into one filter reserved for them, with appendonly no (the baseline) and with
#    appendfsync no, everysec and always; medians of ROUNDS rounds, each round running every
#    setting one after the other. The number of fsyncs per second under always shows the group
#    commit at work.
# 2. Snapshot write and load: GB gigabytes of filters (BF.RESERVE of 200M items at 1%, 228 MiB
#    each, 100k items added to each), SAVE timed by the client, then a restart timed until the
#    server answers, with the page cache dropped for the snapshot first (cold) and not (warm);
#    bloomd logs its own MB/s for both. The disk's sequential read of the same file, cache
#    dropped, is the comparison for the cold load.
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
GB=${GB:-4}
R=1000000
PORT=${PORT:-16390}
for p in redis-cli redis-benchmark python3; do
  command -v $p >/dev/null || { echo "bench.sh: $p not found (apt-get install redis-tools python3)" >&2; exit 1; }
done

tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/bloomd" ./cmd/bloomd

# start DIR ARGS...: starts bloomd on DIR and waits until it answers.
start() {
  local dir=$1
  shift
  "$tmp/bloomd" --port "$PORT" --dir "$dir" --save "" --loglevel notice "$@" >>"$dir/bloomd.log" 2>&1 &
  pid=$!
  for _ in $(seq 6000); do
    [ "$(redis-cli -p "$PORT" PING 2>/dev/null)" = PONG ] && return 0 # not -LOADING
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  echo "bench.sh: bloomd did not start" >&2
  cat "$dir/bloomd.log" >&2
  exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

# bench ROUND NAME P: one redis-benchmark run of BF.ADD; appends "round name P rps p50 p99 fsyncs/s".
bench() {
  local round=$1 name=$2 pipe=$3 before after t0 t1
  before=$(redis-cli -p "$PORT" INFO persistence | tr -d '\r' | awk -F: '/^aof_fsyncs:/ { print $2 }')
  t0=$(date +%s.%N)
  redis-benchmark -h 127.0.0.1 -p "$PORT" -c 50 -n "$N" -r "$R" -P "$pipe" --csv BF.ADD bf __rand_int__ 2>/dev/null |
    tail -1 | tr -d '"' >"$tmp/line"
  t1=$(date +%s.%N)
  after=$(redis-cli -p "$PORT" INFO persistence | tr -d '\r' | awk -F: '/^aof_fsyncs:/ { print $2 }')
  awk -F, -v r="$round" -v n="$name" -v p="$pipe" -v b="${before:-0}" -v a="${after:-0}" -v t0="$t0" -v t1="$t1" \
    '{ printf "%s %s %s %s %s %s %.0f\n", r, n, p, $2, $5, $7, (a - b) / (t1 - t0) }' "$tmp/line" >>"$tmp/results"
}

for round in $(seq "$ROUNDS"); do
  for setting in "appendonly-no" "no" "everysec" "always"; do
    dir="$tmp/d-$setting-$round"
    mkdir -p "$dir"
    if [ "$setting" = appendonly-no ]; then
      start "$dir" --appendonly no
    else
      start "$dir" --appendonly yes --appendfsync "$setting"
    fi
    redis-cli -p "$PORT" BF.RESERVE bf 0.01 "$R" >/dev/null
    for pipe in 1 16; do
      bench "$round" "$setting" "$pipe"
    done
    stop
    rm -rf "$dir"
  done
  echo "round $round of $ROUNDS done" >&2
done

echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "BF.ADD, $N requests per test, -c 50, -r $R; medians of $ROUNDS rounds."
echo
echo "| appendfsync | -P | ops/s | × appendonly no | p50 ms | p99 ms | fsyncs/s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $2 " " $3; rps[k] = rps[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $6; fs[k] = fs[k] " " $7; base[$1 " " $3] = ($2 == "appendonly-no") ? $4 : base[$1 " " $3]; row[NR] = $0 }
  END {
    for (i = 1; i <= NR; i++) { split(row[i], f, " "); if (f[2] != "appendonly-no") ratio[f[2] " " f[3]] = ratio[f[2] " " f[3]] " " f[4] / base[f[1] " " f[3]] }
    n = split("appendonly-no no everysec always", names, " ")
    for (i = 1; i <= n; i++) for (p = 1; p <= 16; p += 15) {
      k = names[i] " " p
      r = (names[i] == "appendonly-no") ? "1.00" : sprintf("%.2f", median(ratio[k]))
      label = (names[i] == "appendonly-no") ? "(appendonly no)" : names[i]
      printf "| %s | %d | %.0f | %s | %.3f | %.3f | %.0f |\n", label, p, median(rps[k]), r, median(p50[k]), median(p99[k]), median(fs[k])
    }
  }' "$tmp/results"

# Snapshot write and load.
dir="$tmp/snap"
mkdir -p "$dir"
start "$dir" --appendonly no
filters=$(python3 -c "import math; print(max(1, math.ceil($GB * 2**30 / 239626528)))")
for i in $(seq "$filters"); do
  redis-cli -p "$PORT" BF.RESERVE "f$i" 0.01 200000000 >/dev/null
  seq 100000 | sed "s/^/BF.ADD f$i /" | redis-cli -p "$PORT" --pipe >/dev/null 2>&1
done
t0=$(date +%s.%N)
redis-cli -p "$PORT" SAVE >/dev/null
t1=$(date +%s.%N)
bytes=$(stat -c %s "$dir/dump.bdb")
stop
dropcache() {
  python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"
}
dropcache "$dir/dump.bdb"
d0=$(date +%s.%N)
cat "$dir/dump.bdb" >/dev/null
d1=$(date +%s.%N)
dropcache "$dir/dump.bdb"
c0=$(date +%s.%N)
start "$dir" --appendonly no
c1=$(date +%s.%N)
cold_log=$(grep -o 'MB/s=[0-9.]*' "$dir/bloomd.log" | tail -1 | cut -d= -f2)
stop
w0=$(date +%s.%N)
start "$dir" --appendonly no
w1=$(date +%s.%N)
warm_log=$(grep -o 'MB/s=[0-9.]*' "$dir/bloomd.log" | tail -1 | cut -d= -f2)
stop
echo
echo "Snapshot of $filters filters, $(awk -v b="$bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'):"
echo
echo "| operation | seconds | MB/s |"
echo "|---|---:|---:|"
awk -v b="$bytes" -v t0="$t0" -v t1="$t1" -v d0="$d0" -v d1="$d1" -v c0="$c0" -v c1="$c1" -v w0="$w0" -v w1="$w1" -v cl="$cold_log" -v wl="$warm_log" 'BEGIN {
  printf "| SAVE (written, synced, renamed) | %.2f | %.0f |\n", t1 - t0, b / 1e6 / (t1 - t0)
  printf "| disk sequential read (cat, cache dropped) | %.2f | %.0f |\n", d1 - d0, b / 1e6 / (d1 - d0)
  printf "| start-up, snapshot on disk (cache dropped) | %.2f | %.0f (bloomd logs %.0f for the load itself) |\n", c1 - c0, b / 1e6 / (c1 - c0), cl
  printf "| start-up, snapshot in the page cache | %.2f | %.0f (bloomd logs %.0f) |\n", w1 - w0, b / 1e6 / (w1 - w0), wl
}'
