#!/usr/bin/env bash
# Server CPU time per CF command: bloomd against redis-server with the RedisBloom module, in the
# same run, driven by redis-benchmark (Debian's redis-tools) with 50 clients. CPU time is the
# server process's user+system time (/proc/PID/stat) over the requests, divided by their number,
# so other load on the machine changes it less than it changes throughput.
#
#   REDISBLOOM_SO=/path/to/redisbloom.so bench/cf_cpu.sh
#   N=1000000 P=16 REDISBLOOM_SO=... bench/cf_cpu.sh
#
# Each server gets CF.RESERVE cf 2000000, then N CF.ADD, N CF.EXISTS and N CF.DEL of random items
# (__rand_int__ over 1M values), pipelined P deep.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport
: "${REDISBLOOM_SO:?set REDISBLOOM_SO to a RedisBloom 2.6 module (redisbloom.so)}"
N=${N:-500000}
P=${P:-16}
REDIS_PORT=${REDIS_PORT:-$(freeport)}
BLOOMD_PORT=${BLOOMD_PORT:-$(freeport)}

go build -o "$tmp/bloomd" ./cmd/bloomd
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" \
  --loglevel warning --loadmodule "$REDISBLOOM_SO" >"$tmp/redis.log" 2>&1 &
pids+=($!); rpid=$!
"$tmp/bloomd" --port "$BLOOMD_PORT" --bind 127.0.0.1 --appendonly no --save "" --dir "$tmp" \
  >"$tmp/bloomd.log" 2>&1 &
pids+=($!); bpid=$!
for port in "$REDIS_PORT" "$BLOOMD_PORT"; do
  for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$port" CF.RESERVE cf 2000000 >/dev/null
done

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

printf '%-10s %-12s %12s %12s %8s\n' command server "cpu ns/op" "ops/s" ratio
for cmd in CF.ADD CF.EXISTS CF.DEL; do
  declare -A ns=()
  for server in redisbloom bloomd; do
    if [ $server = redisbloom ]; then port=$REDIS_PORT; pid=$rpid; else port=$BLOOMD_PORT; pid=$bpid; fi
    before=$(cpu $pid)
    out=$(redis-benchmark -p "$port" -c 50 -n "$N" -P "$P" -r 1000000 -q $cmd cf item:__rand_int__ 2>/dev/null | tr '\r' '\n' | grep -a 'requests per second' | tail -1)
    after=$(cpu $pid)
    ns[$server]=$(( (after - before) * 1000000000 / ticks / N ))
    rps=$(echo "$out" | awk '{for(i=1;i<=NF;i++) if ($(i+1)=="requests") print $i}')
    printf '%-10s %-12s %12s %12s\n' $cmd $server "${ns[$server]}" "$rps"
  done
  awk -v a="${ns[redisbloom]}" -v b="${ns[bloomd]}" -v c=$cmd 'BEGIN { if (b > 0) printf "%-10s %-12s %12s %12s %8.2f\n", c, "ratio", "", "", a / b }'
done
