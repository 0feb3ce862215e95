#!/usr/bin/env bash
# Runs the benchmarks behind BENCHMARKS.md and rewrites its tables.
#
#   bench/run.sh                       # lists the sections and what each costs
#   bench/run.sh library batch         # runs those sections, then rewrites their tables
#   bench/run.sh all                   # every section but library-1e8 (run that one by name)
#   bench/run.sh tables [section...]   # rewrites tables from bench/results/ without running
#
# Each section keeps its raw output in bench/results/SECTION-NAME.txt, headed by "# key: value"
# lines (the command, the date, the machine, the load average at start and end), and then
# replaces the lines between <!-- bench:SECTION --> and <!-- /bench:SECTION --> in BENCHMARKS.md.
# Go benchmark output becomes tables through benchstat (go tool benchstat, a tool of this
# module: medians with 95% confidence intervals, which need 6 runs); scripts that print their
# own tables (server-cpu.sh, cf_cpu.sh, internal/persist/bench.sh, scrape.sh) are quoted as they
# print them. A section whose outside program is missing says so and keeps its old results.
#
# Environment: REDISBLOOM_SO names a RedisBloom 2.6 module (redisbloom.so, built from
# RedisBloom's sources for the installed redis-server) for the sections that compare with it.
# NOTE, if set, is written into the raw output's header and printed above the table (to mark a
# run made on a busy machine, say). SCALING_N and SCALING_ROUNDS shorten the scaling section.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/bench
results=$bench/results
doc=$root/BENCHMARKS.md

# name|cost|what, in the order of BENCHMARKS.md.
sections=(
  "library|6 min|every filter type against bits-and-blooms and blobloom, n = 1e6 and 1e7"
  "library-1e8|25 min, 8 GB|the same at n = 1e8 (not part of all)"
  "batch|3 min, 1 GB|AddMany/TestMany against random and dependent loads, n = 1e7 and 1e8"
  "memory|1 min|bits per key and measured false-positive rate of every type at p = 0.1, 0.01, 0.001"
  "bloomd|11 min|bloomd against RedisBloom: server CPU per BF.* command and PING at -P 1 and -P 16 (REDISBLOOM_SO)"
  "scaling|1.5 min per step|throughput and CPU per command against io-threads, client pinned apart (peer: REDISBLOOM_SO)"
  "redisfilter|3 min|redisfilter's forms against RedisBloom on the same redis-server (REDISBLOOM_SO)"
  "durability|5 min, 1 GB of disk|bloomd's appendfsync settings against each other; snapshot save and load"
  "rdb|2 min, 6 GB, 3 GB of disk|a 1 GB filter in Redis's formats: RDB save and load, MIGRATE, against RedisBloom (REDISBLOOM_SO)"
  "snapshot|15 min, 5 GB|BF.ADD latency during BGSAVE and BGREWRITEAOF of a 2.1 GB filter, save time, memory; against Redis + RedisBloom (REDISBLOOM_SO); ITEMS sets the size"
  "cuckoo|4 min|the cuckoo filter against the Bloom filters at equal FPP"
  "cuckoo-bloomd|2 min|bloomd against RedisBloom: server CPU per CF.* command (REDISBLOOM_SO)"
  "replication|3 min|a primary's CPU per BF.ADD with 0, 1 and 2 replicas"
  "fullsync|4 min, 4 GB, 2 GB of disk|a replica's full sync of a 1 GB filter under BF.ADD clients against cp + sync of its snapshot; with redis-server (REDISBLOOM_SO)"
  "monitoring|3 min|bloomd's CPU per BF.ADD with a /metrics scrape every second, and without"
  "acl|1 min|the permission check per command: the default user and a user with three key patterns"
  "cluster|4 min, 1 GB|a three-primary cluster against one node, a redirection's cost, failover time, resharding a 1 GB filter"
)

usage() {
  echo "usage: bench/run.sh SECTION... | all | tables [SECTION...]"
  echo
  printf '  %-14s %-20s %s\n' section cost measures
  for s in "${sections[@]}"; do
    IFS='|' read -r name cost what <<<"$s"
    printf '  %-14s %-20s %s\n' "$name" "$cost" "$what"
  done
  echo
  echo "Raw output goes to bench/results/, the tables into BENCHMARKS.md."
}

known() {
  local s
  for s in "${sections[@]}"; do [ "${s%%|*}" = "$1" ] && return 0; done
  return 1
}

machine() {
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(go version | cut -d' ' -f3), $(uname -sr)"
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# measure SECTION FILE CMD...: runs CMD with its output going to a scratch file headed by the
# command, date, machine and load averages, then moves it to bench/results/FILE. A failed run
# leaves the old file in place.
measure() {
  local section=$1 file=$2
  shift 2
  local tmp
  tmp=$(mktemp)
  {
    echo "# command: bench/run.sh $section"
    local run="$*"
    echo "# runs: ${run//$root\//}"
    echo "# date: $(date -u +%Y-%m-%d)"
    echo "# machine: $(machine)"
    echo "# load average at start: $(loadavg)"
    [ -z "${NOTE:-}" ] || echo "# note: $NOTE"
  } >"$tmp"
  echo "bench/run.sh: $section: $*" >&2
  if ! "$@" >>"$tmp"; then
    echo "bench/run.sh: $section failed; bench/results/$file unchanged" >&2
    rm -f "$tmp"
    return 1
  fi
  echo "# load average at end: $(loadavg)" >>"$tmp"
  mkdir -p "$results"
  chmod 644 "$tmp"
  mv "$tmp" "$results/$file"
}

# meta FILE: the line above each table, from the file's header.
meta() {
  local f=$results/$1
  get() { sed -n "s/^# $1: //p" "$f" | head -1; }
  local date machine cmd l0 l1
  date=$(get date)
  machine=$(get machine)
  cmd=$(get command)
  l0=$(get 'load average at start')
  l1=$(get 'load average at end')
  local load="load average $l0 at start, $l1 at end"
  [ -n "$l0" ] || load="load average $l1 at the end"
  [ -n "$l1" ] || load="load average not recorded"
  printf '%s; %s. Run on %s: `%s` ([raw output](bench/results/%s)).\n' \
    "$machine" "$load" "$date" "$cmd" "$1"
  local note
  note=$(get note)
  [ -z "$note" ] || printf 'Note: %s\n' "$note"
  echo
}

# stat FILE BENCHSTAT-ARGS... -- TABLE-ARGS...: benchstat's CSV of FILE as one Markdown table.
stat() {
  local f=$results/$1
  shift
  local bs=() tb=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do bs+=("$1"); shift; done
  shift
  tb=("$@")
  (cd "$bench" && go tool benchstat -format csv "${bs[@]}" "$f" 2>/dev/null | go run ./benchtable table "${tb[@]}")
}

# quote FILE: the lines of FILE that are not its header, as they are.
quote() { grep -v '^# ' "$results/$1"; }

splice() { (cd "$bench" && go run ./benchtable splice -doc "$doc" -region "$1"); }

need_rb() {
  if [ -z "${REDISBLOOM_SO:-}" ] || [ ! -r "$REDISBLOOM_SO" ]; then
    echo "bench/run.sh: $1: skipped: set REDISBLOOM_SO to a RedisBloom 2.6 module (redisbloom.so) built for this redis-server" >&2
    return 1
  fi
}

# gotest DIR ARGS...: go test in DIR, keeping only the lines benchstat reads.
gotest() {
  local dir=$1 out
  shift
  out=$(mktemp)
  if ! (cd "$dir" && go test -run '^$' "$@") >"$out"; then
    cat "$out" >&2
    rm -f "$out"
    return 1
  fi
  grep -E '^(Benchmark|goos|goarch|pkg|cpu|[a-z-]+:)' "$out" || true
  rm -f "$out"
}

# library: with blobloom when Debian's source package is installed (bench/blobloom.sh).
libbench() {
  if [ -f /usr/share/gocode/src/github.com/greatroar/blobloom/go.mod ]; then
    "$bench/blobloom.sh" "$@" 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)'
  else
    echo "# blobloom: not measured; apt-get install golang-github-greatroar-blobloom-dev"
    gotest "$bench" "$@"
  fi
}

lib_ops='op=(Add|TestPresent|TestAbsent|AddMany|TestManyPresent|TestManyAbsent)'
lib_names='fpp%=measured FPP,bitsandblooms=bits-and-blooms,TestManyPresent=TestMany present,TestManyAbsent=TestMany absent,TestPresent=Test present,TestAbsent=Test absent'

run_section() {
  case $1 in
  library) measure library library-1e6-1e7.txt libbench -bench "Filters/n=1e[67]/$lib_ops/" -count 6 -benchtime 0.5s -timeout 0 ;;
  library-1e8) measure library-1e8 library-1e8.txt libbench -bench "Filters/n=1e8/$lib_ops/" -large -count 6 -benchtime 0.5s -timeout 0 ;;
  batch) measure batch batch.txt gotest "$bench" -bench 'Filters/n=1e[78]/op=(TestPresent|AddMany|TestManyPresent|TestManyAbsent|RandomLoad|DependentLoad)/impl=(classic|blocked|pages-4KiB|pages-2MiB)$' -large -count 6 -benchtime 0.5s -timeout 0 ;;
  memory) measure memory memory-fpp.txt env BLOOM_FPP_N=1000000 sh -c "cd '$root' && go test -count 1 -run '^TestFPPTable\$' -v . | grep '^ *|' | sed 's/^ *//'" ;;
  bloomd) need_rb bloomd && measure bloomd bloomd-vs-redisbloom.txt env N=600000 ROUNDS=12 "$bench/server-cpu.sh" ;;
  scaling) measure scaling scaling.txt env N="${SCALING_N:-1000000}" ROUNDS="${SCALING_ROUNDS:-3}" "$bench/scaling.sh" ;;
  redisfilter) need_rb redisfilter && measure redisfilter redisfilter.txt gotest "$root/redisfilter" -bench . -benchtime 1s -count 6 ;;
  durability) measure durability durability.txt env N=200000 ROUNDS=3 GB=1 "$root/internal/persist/bench.sh" ;;
  rdb) need_rb rdb && measure rdb rdb.txt env GB=1 "$bench/rdb.sh" ;;
  snapshot) measure snapshot snapshot.txt env ITEMS="${ITEMS:-1200000000}" REQUESTS="${REQUESTS:-400000}" ROUNDS="${ROUNDS:-3}" "$bench/snapshot.sh" ;;
  cuckoo) measure cuckoo cuckoo.txt gotest "$root" -bench CuckooVsBloom -benchtime 300000x -count 6 -timeout 0 ;;
  cuckoo-bloomd) need_rb cuckoo-bloomd && measure cuckoo-bloomd cuckoo-bloomd-vs-redisbloom.txt env N=500000 "$bench/cf_cpu.sh" ;;
  replication) measure replication replication.txt gotest "$root/internal/repl" -bench PrimaryCPU -benchtime 200000x -count 6 ;;
  fullsync) measure fullsync fullsync.txt env GB=1 "$bench/fullsync.sh" ;;
  monitoring) measure monitoring monitoring.txt env N=300000 ROUNDS=4 "$bench/scrape.sh" ;;
  acl) measure acl acl-check.txt gotest "$root/internal/acl" -bench Check -benchtime 2000000x -count 6 ;;
  cluster) measure cluster cluster.txt env N=1000000 ROUNDS=3 FILTER_MB=1024 "$bench/cluster.sh" ;;
  esac
}

render_section() {
  local f
  case $1 in
  library) f=library-1e6-1e7.txt ;;
  library-1e8) f=library-1e8.txt ;;
  batch) f=batch.txt ;;
  memory) f=memory-fpp.txt ;;
  bloomd) f=bloomd-vs-redisbloom.txt ;;
  scaling) f=scaling.txt ;;
  redisfilter) f=redisfilter.txt ;;
  durability) f=durability.txt ;;
  rdb) f=rdb.txt ;;
  snapshot) f=snapshot.txt ;;
  cuckoo) f=cuckoo.txt ;;
  cuckoo-bloomd) f=cuckoo-bloomd-vs-redisbloom.txt ;;
  replication) f=replication.txt ;;
  fullsync) f=fullsync.txt ;;
  monitoring) f=monitoring.txt ;;
  acl) f=acl-check.txt ;;
  cluster) f=cluster.txt ;;
  esac
  if [ ! -f "$results/$f" ]; then
    echo "bench/run.sh: $1: no bench/results/$f yet; run bench/run.sh $1" >&2
    return 0
  fi
  {
    meta "$f"
    case $1 in
    library | library-1e8)
      stat "$f" -table /n -row /impl -col /op -filter '/impl:(classic OR blocked OR blocked-p0.005 OR scalable OR scalable-blocked OR counting OR bitsandblooms OR blobloom OR blobloom-sync)' -- \
        -units bits/key,fpp%,cpu-sec/op -base bitsandblooms -row-head filter -rename "$lib_names"
      ;;
    batch)
      stat "$f" -table /n -row /impl -col /op -- -units cpu-sec/op -row-head 'filter or baseline' \
        -rename "$lib_names,pages-4KiB=memory (4 KiB pages),pages-2MiB=memory (2 MiB pages),RandomLoad=random load,DependentLoad=dependent load"
      ;;
    redisfilter)
      stat "$f" -row /impl -col .name -- -units keys/s -row-head implementation
      ;;
    cuckoo)
      stat "$f" -table /n -row /impl -col /op -- -units bits/key,FPP,sec/op -row-head filter -rename "FPP=measured FPP"
      ;;
    replication)
      stat "$f" -row /replicas -col .name -- -units primary-cpu-sec/cmd,cmds/s -row-head replicas -rename 'PrimaryCPU=primary CPU per BF.ADD,cmds/s=commands/s'
      ;;
    acl)
      stat "$f" -row /user -col .name -- -units sec/op -row-head user -rename 'Check=ns per check,3-key-patterns=three key patterns (~a:* %R~b:* %W~c:*),default=default (+@all ~* &*)'
      ;;
    bloomd | scaling | durability | memory | rdb | snapshot | fullsync)
      quote "$f"
      ;;
    cuckoo-bloomd | monitoring | cluster)
      echo '```'
      quote "$f"
      echo '```'
      ;;
    esac
  } | splice "$1"
  echo "bench/run.sh: $1: BENCHMARKS.md rewritten from bench/results/$f" >&2
}

if [ $# -eq 0 ]; then
  usage
  exit 0
fi
only_tables=false
if [ "$1" = tables ]; then
  only_tables=true
  shift
  if [ $# -eq 0 ]; then
    for s in "${sections[@]}"; do set -- "$@" "${s%%|*}"; done
  fi
elif [ "$1" = all ]; then
  shift
  for s in "${sections[@]}"; do [ "${s%%|*}" = library-1e8 ] || set -- "$@" "${s%%|*}"; done
fi
for s in "$@"; do
  known "$s" || { echo "bench/run.sh: unknown section $s" >&2; usage >&2; exit 2; }
done
status=0
for s in "$@"; do
  if ! $only_tables; then
    run_section "$s" || { status=1; continue; }
  fi
  render_section "$s"
done
exit $status
