#!/usr/bin/env bash
# Measures a replica's full sync of a large Bloom filter while clients add to it: the table of
# BENCHMARKS.md's "How long does a full sync take?" section (bench/run.sh fullsync).
#
#   bench/fullsync.sh                                      # a filter of 1 GB, bloomd to bloomd
#   REDISBLOOM_SO=/path/to/redisbloom.so bench/fullsync.sh # and the rows with redis-server
#   GB=4 CLIENTS=8 bench/fullsync.sh
#
# bench/fullsync (a Go program) starts the servers on free loopback ports, fills one filter of
# GB gigabytes with random bits, and times each full sync from REPLICAOF to the replica's link
# up, under CLIENTS connections sending BF.ADD to the primary, against cp + sync of the bloomd
# replica's snapshot file on the same disk. It needs about 3 x GB of memory (4 x GB for the
# Redis rows) and 2 x GB of disk in TMPDIR, which should be the disk being measured.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, cleanup at exit

GB=${GB:-1}
CLIENTS=${CLIENTS:-4}
command -v go >/dev/null || { echo "fullsync.sh: go not found" >&2; exit 1; }
module=
if [ -n "${REDISBLOOM_SO:-}" ] && [ -r "$REDISBLOOM_SO" ] && command -v redis-server >/dev/null; then
  module=$REDISBLOOM_SO
else
  echo "fullsync.sh: REDISBLOOM_SO not set (or redis-server missing): bloomd to bloomd only" >&2
fi
go build -o "$tmp/bloomd" ./cmd/bloomd
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Disk of $tmp: $(df -h --output=source,fstype "$tmp" | tail -1 | tr -s ' ')"
[ -n "$module" ] && echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), RedisBloom $(basename "$module")"
echo
(cd bench && go run ./fullsync -bloomd "$tmp/bloomd" -redisbloom "$module" -gb "$GB" -clients "$CLIENTS" -dir "$tmp/data")
