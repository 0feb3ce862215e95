#!/usr/bin/env bash
# Measures what a snapshot costs clients: the table of BENCHMARKS.md's "What does a snapshot cost
# clients?" section (bench/run.sh snapshot). bloomd, and Redis + RedisBloom when REDISBLOOM_SO
# names the module, each hold one NONSCALING filter of ITEMS items at ERROR (1.2e9 at 0.001:
# 2.1 GB of bits), every byte of it random (bench/snapcost fill), so that every page is in
# memory and a snapshot writes all of it. On each server a BF.ADD load from redis-benchmark
# (CLIENTS clients, -P 1, REQUESTS requests of random items from 2e9) runs, in each of ROUNDS
# rounds (each round runs every server in turn):
#
#   no snapshot     appendonly no, the baseline
#   BGSAVE          appendonly no, BGSAVE started again each time one ends, all through the run
#
# and then, on a server started anew with appendonly yes (appendfsync everysec):
#
#   no snapshot     the baseline of the next
#   BGREWRITEAOF    BGREWRITEAOF all through the run
#
# The table gives the medians over the rounds of redis-benchmark's p50, p99 and max latency, of
# the ratio of each round's p99 to the p99 of its baseline, of the requests per second, of the
# median time of the snapshots taken during a run, and of the most memory a run added: the
# largest proportional set size (Pss, /proc/PID/smaps_rollup) of the server and its child
# processes above its value before the run. bench/snapcost says how each is measured.
#
#   bench/snapshot.sh                                        # 2.1 GB, bloomd alone
#   REDISBLOOM_SO=/path/redisbloom.so bench/snapshot.sh       # and Redis + RedisBloom
#   ITEMS=110000000 REQUESTS=100000 ROUNDS=1 bench/snapshot.sh  # 200 MB, to iterate
#   OTHER=/path/to/older/bloomd bench/snapshot.sh             # and another build, after bloomd
#
# Environment: ITEMS (1200000000), ERROR (0.001), CLIENTS (20), REQUESTS (400000), ROUNDS (3),
# BLOOMD_ARGS, OTHER (another bloomd binary, measured the same way, labelled "bloomd (OTHER)").
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport

ITEMS=${ITEMS:-1200000000}
ERROR=${ERROR:-0.001}
CLIENTS=${CLIENTS:-20}
REQUESTS=${REQUESTS:-400000}
ROUNDS=${ROUNDS:-3}
for p in redis-server redis-cli redis-benchmark python3 go; do
  command -v $p >/dev/null || { echo "snapshot.sh: $p not found (apt-get install redis-server redis-tools python3)" >&2; exit 1; }
done
rb=${REDISBLOOM_SO:-}
if [ -z "$rb" ]; then
  echo "snapshot.sh: REDISBLOOM_SO is not set: measuring bloomd alone, without RedisBloom." >&2
elif [ ! -r "$rb" ]; then
  echo "snapshot.sh: REDISBLOOM_SO=$rb cannot be read" >&2
  exit 1
fi

go build -o "$tmp/bin/bloomd" ./cmd/bloomd
(cd bench && go build -o "$tmp/bin/snapcost" ./snapcost)

# start KIND AOF: starts a server (KIND bloomd or redis) with a fresh data directory and fills
# its filter; sets $port and $pid.
start() {
  local kind=$1 aof=$2
  port=$(freeport)
  rm -rf "$tmp/data"
  mkdir -p "$tmp/data"
  if [ "$kind" = bloomd ] || [ "$kind" = other ]; then
    bin=$tmp/bin/bloomd
    [ "$kind" = other ] && bin=$OTHER
    "$bin" --port "$port" --bind 127.0.0.1 --dir "$tmp/data" --appendonly "$aof" --appendfsync everysec --auto-aof-rewrite-percentage 0 \
      --save "" --loglevel warning ${BLOOMD_ARGS:-} >>"$tmp/$kind.log" 2>&1 &
  else
    redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp/data" --appendonly "$aof" --appendfsync everysec --auto-aof-rewrite-percentage 0 \
      --save "" --loglevel warning --loadmodule "$rb" >>"$tmp/$kind.log" 2>&1 &
  fi
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
  [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] || {
    echo "snapshot.sh: $kind does not answer on port $port" >&2
    cat "$tmp/$kind.log" >&2
    exit 1
  }
  "$tmp/bin/snapcost" fill -addr "127.0.0.1:$port" -items "$ITEMS" -error "$ERROR"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

# measure LABEL OP: one run of the load; appends its line to $tmp/rows.
measure() {
  "$tmp/bin/snapcost" run -addr "127.0.0.1:$port" -pid "$pid" -op "$2" -label "$1" \
    -clients "$CLIENTS" -requests "$REQUESTS" >>"$tmp/rows"
}

kinds=(bloomd)
[ -z "${OTHER:-}" ] || kinds+=(other)
[ -z "$rb" ] || kinds+=(redis)
# Each round runs every server in turn, started anew, so that load from other work that comes and
# goes during the run falls on all of them alike.
for _ in $(seq "$ROUNDS"); do
  for kind in "${kinds[@]}"; do
    start "$kind" no
    label=bloomd
    [ "$kind" = other ] && label="bloomd ($OTHER)"
    if [ "$kind" = redis ]; then
      v=$(redis-cli -p "$port" MODULE LIST | awk 'prev == "ver" { print; exit } { prev = $0 }')
      label="Redis $(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p') + RedisBloom $((v / 10000)).$((v / 100 % 100)).$((v % 100))"
    fi
    measure "$label" none
    measure "$label" BGSAVE
    stop
    start "$kind" yes
    measure "$label, appendonly everysec" none
    measure "$label, appendonly everysec" BGREWRITEAOF
    stop
  done
done

gb=$(python3 -c "import math; print(round($ITEMS * -math.log($ERROR) / math.log(2)**2 / 8 / 1e9, 2))")
echo "One NONSCALING filter of $ITEMS items at $ERROR ($gb GB of random bits); BF.ADD from redis-benchmark,"
echo "-c $CLIENTS -P 1, $REQUESTS requests per run; medians of $ROUNDS rounds."
echo
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1]) if l.strip()]
med = statistics.median
order, runs = [], {}
base = {}  # the last baseline p99 of each label, for the ratio of the run after it
ratios = {}
for label, op, p50, p99, mx, rps, saves, save, mem in rows:
    key = (label, op)
    if key not in runs:
        order.append(key)
        runs[key] = []
    runs[key].append((float(p50), float(p99), float(mx), float(rps), int(saves), float(save), float(mem)))
    if op == 'none':
        base[label] = float(p99)
    else:
        ratios.setdefault(key, []).append(float(p99) / base[label])
print('| server | during the run | p50 ms | p99 ms | max ms | p99 × no snapshot | requests/s | snapshot s | extra memory MB |')
print('|---|---|---:|---:|---:|---:|---:|---:|---:|')
for key in order:
    label, op = key
    r = runs[key]
    col = lambda i: med([x[i] for x in r])
    saves = [x[5] for x in r if x[5] >= 0]
    print('| %s | %s | %.3f | %.3f | %.1f | %s | %.0f | %s | %+.0f |' % (
        label, 'no snapshot' if op == 'none' else op, col(0), col(1), col(2),
        '%.2f' % med(ratios[key]) if key in ratios else '', col(3),
        '%.2f' % med(saves) if saves else '', col(6)))
PY
