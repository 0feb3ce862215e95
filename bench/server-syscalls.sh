#!/usr/bin/env bash
# Counts the system calls and context switches per command of bloomd and RedisBloom under the
# same redis-benchmark load, both loaded at once, so that other work on the machine changes both
# alike: what bench/server-cpu.sh's CPU times come from, in numbers that load moves less.
#
#   REDISBLOOM_SO=/path/to/redisbloom.so bench/server-syscalls.sh                 # BF.EXISTS, -P 1
#   REDISBLOOM_SO=... bench/server-syscalls.sh 16 400000 BF.ADD bf __rand_int__   # P N COMMAND...
#   AOF=yes OTHER=/path/to/older/bloomd REDISBLOOM_SO=... bench/server-syscalls.sh
#
# Each server (bloomd built from this tree; RedisBloom when REDISBLOOM_SO names its module;
# OTHER, another bloomd binary, e.g. an older build) gets a free loopback port, a filter reserved
# for 10M items (BF.RESERVE bf 0.01 10000000) and 100k items unmeasured, then one redis-benchmark
# each (-c 50 -r 100000000), all at once, while `perf stat` counts the server's system calls
# (syscalls:sys_enter_* tracepoints), context switches and task clock. Prints per command: CPU
# (utime + stime from /proc/PID/stat, then each apart as user and system), the syscalls that
# matter, context switches. AOF=yes runs every server with appendonly yes and appendfsync
# everysec. Needs perf (linux-perf) with access to the tracepoints (root, or
# kernel.perf_event_paranoid <= -1).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport

P=${1:-1}
N=${2:-100000}
shift 2 2>/dev/null || true
[ $# -gt 0 ] || set -- BF.EXISTS bf __rand_int__
for p in redis-server redis-cli redis-benchmark python3 go perf; do
  command -v $p >/dev/null || { echo "server-syscalls.sh: $p not found (apt-get install redis-server redis-tools python3 linux-perf)" >&2; exit 1; }
done
rb=${REDISBLOOM_SO:-}
[ -n "$rb" ] || echo "server-syscalls.sh: REDISBLOOM_SO is not set: counting bloomd alone." >&2


go build -o "$tmp/bin/bloomd" ./cmd/bloomd
names=(bloomd)
bins=("$tmp/bin/bloomd")
if [ -n "${OTHER:-}" ]; then names+=(other); bins+=("$OTHER"); fi
if [ -n "$rb" ]; then names+=(redisbloom); bins+=(redis-server); fi

declare -A port pid
items10=$(printf ' __rand_int__%.0s' $(seq 10))
for i in "${!names[@]}"; do
  name=${names[$i]} bin=${bins[$i]} p=$(freeport)
  mkdir -p "$tmp/$name"
  args=(--port "$p" --bind 127.0.0.1 --dir "$tmp/$name" --appendonly "${AOF:-no}" --appendfsync everysec --save "" --loglevel warning)
  if [ "$name" = redisbloom ]; then args+=(--loadmodule "$rb"); fi
  "$bin" "${args[@]}" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  pid[$name]=$! port[$name]=$p
  for _ in $(seq 100); do
    [ "$(redis-cli -p "$p" PING 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
  redis-cli -p "$p" BF.RESERVE bf 0.01 10000000 >/dev/null
  redis-benchmark -h 127.0.0.1 -p "$p" -c 10 -n 10000 -r 100000000 -P 16 BF.MADD bf $items10 >/dev/null 2>&1
done

events=syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,context-switches,task-clock
declare -A utime0 stime0 perfpid benchpid
for name in "${names[@]}"; do
  read -r utime0[$name] stime0[$name] < <(awk '{ print $14, $15 }' "/proc/${pid[$name]}/stat")
  perf stat -x, -e "$events" -p "${pid[$name]}" -o "$tmp/$name.perf" &
  perfpid[$name]=$!
done
sleep 0.3
for name in "${names[@]}"; do
  redis-benchmark -h 127.0.0.1 -p "${port[$name]}" -c 50 -n "$N" -r 100000000 -P "$P" --csv "$@" >"$tmp/$name.bench" 2>/dev/null &
  benchpid[$name]=$!
done
declare -A utime1 stime1
for name in "${names[@]}"; do
  wait "${benchpid[$name]}"
  read -r utime1[$name] stime1[$name] < <(awk '{ print $14, $15 }' "/proc/${pid[$name]}/stat")
  kill -INT "${perfpid[$name]}"
done
sleep 0.5

echo "$* at -P $P, $N commands per server, -c 50, appendonly ${AOF:-no}; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| server | CPU µs/cmd | user | system | read | write(v) | epoll | io_uring_enter | futex | nanosleep | all syscalls | context switches |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for name in "${names[@]}"; do
  awk -F, -v n="$N" -v name="$name" -v ut=$((utime1[$name] - utime0[$name])) -v st=$((stime1[$name] - stime0[$name])) -v tck="$(getconf CLK_TCK)" '
    $1 ~ /^[0-9.]+$/ { v[$3] = $1 }
    function c(e) { return v["syscalls:sys_enter_" e] / n }
    END {
      all = 0; for (k in v) if (k ~ /^syscalls:/) all += v[k]
      printf "| %s | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f | %.4f | %.4f | %.3f | %.3f |\n", name, (ut + st) * 1e6 / tck / n,
        ut * 1e6 / tck / n, st * 1e6 / tck / n,
        c("read"), c("write") + c("writev"), c("epoll_wait") + c("epoll_pwait"), c("io_uring_enter"), c("futex"), c("nanosleep"), all / n, v["context-switches"] / n
    }' "$tmp/$name.perf"
done
