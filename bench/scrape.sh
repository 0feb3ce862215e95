#!/usr/bin/env bash
# Measures what bloomd's monitoring costs BF.ADD: throughput and bloomd's CPU time per command
# with a /metrics scrape every second (every filter selected: metrics-filter-pattern '*')
# against no scrape, alternating in ROUNDS rounds so that other load on the machine falls on
# both. Needs redis-benchmark (Debian's redis-tools) and curl.
#
#   bench/scrape.sh                       # 4 rounds of 500k BF.ADD, -c 50 -P 16
#   N=1000000 ROUNDS=6 bench/scrape.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport

N=${N:-500000}
ROUNDS=${ROUNDS:-4}
PORT=${PORT:-$(freeport)}
MPORT=${MPORT:-$(freeport)}
for p in redis-benchmark redis-cli curl; do
  command -v $p >/dev/null || { echo "scrape.sh: $p not found" >&2; exit 1; }
done
go build -o "$tmp/bloomd" ./cmd/bloomd
"$tmp/bloomd" --port "$PORT" --dir "$tmp" --appendonly no --save "" --metrics-port "$MPORT" \
  --metrics-filter-pattern '*' --loglevel warning &
pids+=($!)
bloomd=$!
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$PORT" BF.RESERVE bf 0.01 10000000 >/dev/null
for i in $(seq 100); do redis-cli -p "$PORT" BF.RESERVE "f$i" 0.01 10000 >/dev/null; done

cpu() { awk '{print $14+$15}' "/proc/$bloomd/stat"; } # utime+stime in clock ticks
hz=$(getconf CLK_TCK)
run() { # $1: label
  local c0 c1 out
  c0=$(cpu)
  out=$(redis-benchmark -p "$PORT" -n "$N" -c 50 -P 16 -r 10000000 -q BF.ADD bf __rand_int__ | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1)
  c1=$(cpu)
  printf '%-10s %14s   %6.0f ns CPU/command\n' "$1" "${out%% *} ops/s" "$(echo "($c1-$c0)*1000000000/$hz/$N" | bc -l)"
}
for r in $(seq "$ROUNDS"); do
  run none
  ( while :; do curl -s -o /dev/null "http://127.0.0.1:$MPORT/metrics"; sleep 1; done ) &
  scraper=$!
  pids+=($scraper)
  run scrape/1s
  kill "$scraper"
done
echo "one scrape: $(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$MPORT/metrics") s, $(curl -s "http://127.0.0.1:$MPORT/metrics" | wc -l) lines"
