#!/usr/bin/env bash
# Measures bloomd as a Redis Cluster node: the throughput of three primaries against one node,
# what a redirection costs, the time a failover takes, and the resharding speed of a large
# filter: BENCHMARKS.md's "bloomd in a Redis Cluster" section (bench/run.sh cluster).
#
#   bench/cluster.sh
#   N=2000000 ROUNDS=5 FILTER_MB=1024 bench/cluster.sh
#
# Throughput: redis-benchmark (Debian's redis-tools) sends BF.ADD of random items, 50 clients,
# 16 commands per batch; against one bloomd node, then with --cluster against a cluster of three
# bloomd primaries, each client on one node with keys of that node's slots ({tag}), so that no
# command is redirected. CPU per command is the servers' utime + stime (/proc/PID/stat) over the
# run, summed over the three nodes, divided by the commands.
#
# Redirection: 10 clients at -P 1 send BF.EXISTS of a key of another node's slots to one node
# (every reply is -MOVED), then of a key of its own; the node's CPU per command and the
# commands per second (bench/lineload, since redis-benchmark stops at an error reply). A client pays one more round trip per redirection, and a cluster client
# only until it refreshes its slot map.
#
# Failover: three primaries with a replica each, cluster-node-timeout TIMEOUTS (1000 and 5000 ms);
# a primary is killed with SIGKILL and its replica's ROLE is polled every 50 ms until it says
# master; then the old primary is started again (it becomes a replica) and the next round kills
# the new primary. ROUNDS rounds per timeout.
#
# Resharding: a filter of FILTER_MB MB (BF.RESERVE at 1% for that size) in the first slot of one
# primary, moved with redis-cli --cluster reshard --cluster-slots 1 to another; the time of the
# reshard and MB/s. (internal/cluster's TestReshardFilterUnderLoad moves one while clients add
# to it, and checks every add.) Needs MIGRATE in bloomd.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, pids, cleanup at exit, freeport

N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
TIMEOUTS=${TIMEOUTS:-1000 5000}
FILTER_MB=${FILTER_MB:-1024}
for p in redis-cli redis-benchmark python3 go; do
  command -v $p >/dev/null || { echo "cluster.sh: $p not found (apt-get install redis-tools python3)" >&2; exit 1; }
done
tck=$(getconf CLK_TCK)
go build -o "$tmp/bin/bloomd" ./cmd/bloomd
(cd bench && go build -o "$tmp/bin/lineload" ./lineload)

declare -A port pid
# start NAME [ARGS...]: a bloomd node on a free port (a cluster node when ARGS say so).
start() {
  local name=$1 p
  shift
  p=$(freeport)
  mkdir -p "$tmp/$name"
  "$tmp/bin/bloomd" --port "$p" --bind 127.0.0.1 --dir "$tmp/$name" --appendonly no --save "" \
    --loglevel warning --proto-max-bulk-len 2047mb "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  pid[$name]=$!
  port[$name]=$p
  for _ in $(seq 200); do
    [ "$(redis-cli -p "$p" PING 2>/dev/null)" = PONG ] && return
    sleep 0.05
  done
  echo "cluster.sh: $name does not answer on port $p" >&2
  cat "$tmp/$name.log" >&2
  exit 1
}
# node NAME TIMEOUT: a cluster node whose bus port is free too.
node() { start "$1" --cluster-enabled yes --cluster-port "$(freeport)" --cluster-node-timeout "$2"; }
stop() { kill "${pid[$1]}" 2>/dev/null || true; wait "${pid[$1]}" 2>/dev/null || true; }
cpu() { # utime+stime of the named servers, in ticks
  local t=0 n
  for n in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/${pid[$n]}/stat"))); done
  echo $t
}
create() { # create REPLICAS NAME...: redis-cli --cluster create, then wait for cluster_state:ok
  local replicas=$1 n addrs=()
  shift
  for n in "$@"; do addrs+=("127.0.0.1:${port[$n]}"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$tmp/create.log" 2>&1 ||
    { cat "$tmp/create.log" >&2; exit 1; }
  for n in "$@"; do
    for _ in $(seq 300); do
      redis-cli -p "${port[$n]}" CLUSTER INFO | grep -q 'cluster_state:ok' && break
      sleep 0.1
    done
  done
}
rps() { tail -1 | cut -d, -f2 | tr -d '"'; } # requests per second of redis-benchmark --csv
keyof() { # keyof NAME: a key in a slot that node NAME serves
  local lo
  lo=$(redis-cli -p "${port[$1]}" CLUSTER NODES | awk '/myself/ {split($9, r, "-"); print r[1]}')
  python3 - "$lo" <<'PY'
import sys
def crc16(b):
    c = 0
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else c << 1
            c &= 0xffff
    return c
lo = int(sys.argv[1])
i = 0
while crc16(b"k%d" % i) & 16383 != lo:
    i += 1
print("k%d" % i)
PY
}

echo "## Throughput: BF.ADD, 50 clients, -P 16"
printf '%-28s %14s %18s\n' setup 'commands/s' 'CPU per command'
start single
for i in 1 2 3; do node "c$i" 5000; done
create 0 c1 c2 c3
for r in $(seq "$ROUNDS"); do
  c0=$(cpu single)
  out=$(redis-benchmark -p "${port[single]}" -c 50 -P 16 -n "$N" -r 100000000 --csv BF.ADD 'bf:{tag}' __rand_int__)
  c1=$(cpu single)
  printf '%-28s %14s %15.0f ns\n' "one node" "$(echo "$out" | rps)" "$(echo "($c1 - $c0) * 1000000000 / $tck / $N" | bc -l)"
  c0=$(cpu c1 c2 c3)
  out=$(redis-benchmark -p "${port[c1]}" --cluster -c 50 -P 16 -n "$N" -r 100000000 --csv BF.ADD 'bf:{tag}' __rand_int__)
  c1=$(cpu c1 c2 c3)
  printf '%-28s %14s %15.0f ns\n' "three primaries" "$(echo "$out" | rps)" "$(echo "($c1 - $c0) * 1000000000 / $tck / $N" | bc -l)"
done
stop single

echo
echo "## Redirection: BF.EXISTS to one node, 10 clients, -P 1"
printf '%-28s %14s %18s\n' reply 'commands/s' 'CPU per command'
own=$(keyof c1)
other=$(keyof c2)
redis-cli -p "${port[c1]}" BF.ADD "$own" x >/dev/null
n=$((N / 5))
for r in $(seq "$ROUNDS"); do
  for what in moved served; do
    k=$own
    [ $what = moved ] && k=$other
    c0=$(cpu c1)
    out=$("$tmp/bin/lineload" -addr "127.0.0.1:${port[c1]}" -c 10 -P 1 -n "$n" BF.EXISTS "$k" x)
    c1=$(cpu c1)
    printf '%-28s %14s %15.0f ns\n' "$what" "$out" "$(echo "($c1 - $c0) * 1000000000 / $tck / $n" | bc -l)"
  done
done

echo
echo "## Resharding: a ${FILTER_MB} MB filter in one slot, moved with redis-cli --cluster reshard"
if [ -z "$(redis-cli -p "${port[c1]}" COMMAND INFO MIGRATE)" ]; then
  echo "not measured: this bloomd has no MIGRATE"
else
  capacity=$((FILTER_MB * 1048576 * 8 * 10 / 96))
  redis-cli -p "${port[c1]}" BF.RESERVE "{$own}:big" 0.01 "$capacity" >/dev/null
  id1=$(redis-cli -p "${port[c1]}" CLUSTER MYID)
  id2=$(redis-cli -p "${port[c2]}" CLUSTER MYID)
  start_ns=$(date +%s%N)
  redis-cli --cluster reshard "127.0.0.1:${port[c1]}" --cluster-from "$id1" --cluster-to "$id2" --cluster-slots 1 \
    --cluster-yes --cluster-timeout 600000 >"$tmp/reshard.log" 2>&1 || { cat "$tmp/reshard.log" >&2; exit 1; }
  end_ns=$(date +%s%N)
  secs=$(echo "($end_ns - $start_ns) / 1000000000" | bc -l)
  printf 'moved in %.2f s: %.0f MB/s\n' "$secs" "$(echo "$FILTER_MB / $secs" | bc -l)"
fi
for i in 1 2 3; do stop "c$i"; done

echo
echo "## Failover: SIGKILL of a primary until its replica says ROLE master"
printf '%-28s %s\n' 'cluster-node-timeout' 'seconds'
for timeout in $TIMEOUTS; do
  names=()
  for i in 1 2 3 4 5 6; do node "f$timeout-$i" "$timeout"; names+=("f$timeout-$i"); done
  create 1 "${names[@]}"
  for r in $(seq "$ROUNDS"); do
    # The primary of slot 0 and its replica.
    victim=
    for n in "${names[@]}"; do
      redis-cli -p "${port[$n]}" CLUSTER NODES | grep myself | grep -q ' 0-' && victim=$n
    done
    vid=$(redis-cli -p "${port[$victim]}" CLUSTER MYID)
    replica=
    for n in "${names[@]}"; do
      [ "$(redis-cli -p "${port[$n]}" CLUSTER NODES | awk '/myself/ {print $4}')" = "$vid" ] && replica=$n
    done
    sleep 1
    kill -9 "${pid[$victim]}"
    wait "${pid[$victim]}" 2>/dev/null || true
    t0=$(date +%s%N)
    until [ "$(redis-cli -p "${port[$replica]}" ROLE 2>/dev/null | head -1)" = master ]; do sleep 0.05; done
    t1=$(date +%s%N)
    printf '%-28s %.2f\n' "$timeout ms" "$(echo "($t1 - $t0) / 1000000000" | bc -l)"
    # The old primary comes back, as the new one's replica.
    p=${port[$victim]}
    "$tmp/bin/bloomd" --port "$p" --bind 127.0.0.1 --dir "$tmp/$victim" --appendonly no --save "" --loglevel warning \
      --cluster-enabled yes --cluster-port "$(redis-cli -p "${port[$replica]}" CLUSTER NODES | grep "$vid" | sed 's/.*@\([0-9]*\).*/\1/')" \
      --cluster-node-timeout "$timeout" >>"$tmp/$victim.log" 2>&1 &
    pids+=($!)
    pid[$victim]=$!
    until [ "$(redis-cli -p "$p" ROLE 2>/dev/null | head -1)" = slave ]; do sleep 0.1; done
    until redis-cli -p "$p" CLUSTER INFO 2>/dev/null | grep -q cluster_state:ok; do sleep 0.1; done
  done
  for n in "${names[@]}"; do stop "$n"; done
done
