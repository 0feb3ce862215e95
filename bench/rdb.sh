#!/usr/bin/env bash
# Measures how fast a large Bloom filter moves in Redis's formats, bloomd against Redis with
# RedisBloom in the same run: the table of BENCHMARKS.md's "Moving a large filter in Redis's
# formats" section (bench/run.sh rdb).
#
#   REDISBLOOM_SO=/path/to/redisbloom.so bench/rdb.sh          # a filter of 1 GB
#   REDISBLOOM_SO=... GB=4 bench/rdb.sh
#
# bench/rdbmove (a Go program) starts the servers on free loopback ports, fills one filter of GB
# gigabytes with random bits on each (the same bits), and times: SAVE of dump.rdb; a start on
# it (until the server answers PING, the load done); each program started on the other's
# dump.rdb; MIGRATE ... COPY of the filter from each program to a fresh one of each, with the
# longest wait of a client adding to another key of the source meanwhile. It needs about
# 6 x GB of memory and 3 x GB of disk in TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh # $tmp, cleanup at exit

GB=${GB:-1}
for p in redis-server go; do
  command -v $p >/dev/null || { echo "rdb.sh: $p not found (apt-get install redis-server)" >&2; exit 1; }
done
if [ -z "${REDISBLOOM_SO:-}" ] || [ ! -r "$REDISBLOOM_SO" ]; then
  echo "rdb.sh: set REDISBLOOM_SO to a RedisBloom 2.6 module (redisbloom.so) built for this redis-server" >&2
  exit 1
fi
go build -o "$tmp/bloomd" ./cmd/bloomd
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), RedisBloom $(basename "$REDISBLOOM_SO")"
echo
(cd bench && go run ./rdbmove -bloomd "$tmp/bloomd" -redisbloom "$REDISBLOOM_SO" -gb "$GB" -dir "$tmp/data")
