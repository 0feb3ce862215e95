#!/usr/bin/env bash
# Measures bloomd's throughput with redis-benchmark (Debian's redis-tools), against Debian's
# redis-server answering GET key:__rand_int__ in the same run: the table of BENCHMARKS.md's
# "bloomd throughput" section.
#
#   internal/server/bench.sh                 # 3 rounds of 1M requests per test
#   N=2000000 ROUNDS=5 internal/server/bench.sh
#
# Every round runs GET (redis-server), BF.ADD and BF.EXISTS (bloomd) one after the other at
# -P 1 and -P 16, with -c 50 clients and random items (-r, __rand_int__); the table shows the
# median of the rounds, so that a burst of other load on the machine skews one round, not the
# result. BF.ADD and BF.EXISTS go to one filter reserved for the 1M distinct items
# (BF.RESERVE bf 0.01 1000000), as an application sizes its filter.
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
R=1000000
REDIS_PORT=${REDIS_PORT:-16379}
BLOOMD_PORT=${BLOOMD_PORT:-16380}
for p in redis-server redis-cli redis-benchmark; do
  command -v $p >/dev/null || { echo "bench.sh: $p not found (apt-get install redis-server redis-tools)" >&2; exit 1; }
done

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/bloomd" ./cmd/bloomd
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$tmp" --loglevel warning >"$tmp/redis.log" 2>&1 &
pids+=($!)
# Neither server keeps data files here: the cost of bloomd's append-only log is measured by
# internal/persist/bench.sh.
mkdir -p "$tmp/bloomd-data"
"$tmp/bloomd" --port "$BLOOMD_PORT" --dir "$tmp/bloomd-data" --appendonly no --save "" --loglevel warning ${BLOOMD_ARGS:-} >"$tmp/bloomd.log" 2>&1 &
pids+=($!)
for port in "$REDIS_PORT" "$BLOOMD_PORT"; do
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
  redis-cli -p "$port" PING >/dev/null || { echo "bench.sh: nothing answers on port $port" >&2; cat "$tmp"/*.log >&2; exit 1; }
done
redis-cli -p "$BLOOMD_PORT" BF.RESERVE bf 0.01 "$R" >/dev/null

# bench ROUND PORT P NAME ARGS...: one redis-benchmark run; appends
# "round name P rps p50 p99" to the results.
bench() {
  local round=$1 port=$2 pipe=$3 name=$4
  shift 4
  redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$N" -r "$R" -P "$pipe" --csv "$@" 2>/dev/null |
    tail -1 | tr -d '"' |
    awk -F, -v r="$round" -v n="$name" -v p="$pipe" '{ print r, n, p, $2, $5, $7 }' >>"$tmp/results"
}

for round in $(seq "$ROUNDS"); do
  for pipe in 1 16; do
    bench "$round" "$REDIS_PORT" "$pipe" GET GET key:__rand_int__
    bench "$round" "$BLOOMD_PORT" "$pipe" BF.ADD BF.ADD bf __rand_int__
    bench "$round" "$BLOOMD_PORT" "$pipe" BF.EXISTS BF.EXISTS bf __rand_int__
  done
  echo "round $round of $ROUNDS done" >&2
done

echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), redis-server $(redis-server --version | cut -d' ' -f3 | cut -d= -f2), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Requests: $N per test, -c 50, -r $R; medians of $ROUNDS rounds. The ratio is the median of the"
echo "rounds' ratios, each against the GET run of the same round (the runs of a round follow each other)."
echo
echo "| command | server | -P | ops/s | × redis GET | p50 ms | p99 ms |"
echo "|---|---|---:|---:|---:|---:|---:|"
awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { rps[$1, $2, $3] = $4; k = $2 " " $3; keys[k] = 1; r[k] = r[k] " " $4; p50[k] = p50[k] " " $5; p99[k] = p99[k] " " $6; rounds[$1] = 1 }
  END {
    split("GET BF.ADD BF.EXISTS", names, " ")
    for (pi = 1; pi <= 2; pi++) {
      p = (pi == 1) ? 1 : 16
      for (i = 1; i <= 3; i++) {
        k = names[i] " " p
        ratios = ""
        for (rd in rounds) ratios = ratios " " rps[rd, names[i], p] / rps[rd, "GET", p]
        server = (names[i] == "GET") ? "redis-server" : "bloomd"
        cmd = (names[i] == "GET") ? "GET key:__rand_int__" : names[i] " bf __rand_int__"
        printf "| `%s` | %s | %d | %.0f | %.2f | %.3f | %.3f |\n", cmd, server, p, median(r[k]), median(ratios), median(p50[k]), median(p99[k])
      }
    }
  }' "$tmp/results"
