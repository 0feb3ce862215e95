#!/usr/bin/env bash
# Interleaved A/B comparison of two commits: builds this module's benchmark binary at each (in
# scratch worktrees under /tmp), then runs them in turn, ROUNDS times, so that a machine whose
# speed drifts during the run affects both alike; benchstat compares the two sets. For example:
#
#	ROUNDS=6 bench/ab.sh fd32257 HEAD 'Filters/n=1e6/op=(Add|TestPresent|TestAbsent)/impl=(classic|blocked|bitsandblooms)$'
#
# ARGS adds flags to every run, e.g. ARGS=-large for the n = 1e8 benchmarks.
#
# benchstat: go install golang.org/x/perf/cmd/benchstat@latest
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 OLD-COMMIT NEW-COMMIT BENCH-REGEXP" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/bloom-ab.XXXXXX)
trap 'git -C "$root" worktree remove --force "$work/a" 2>/dev/null; git -C "$root" worktree remove --force "$work/b" 2>/dev/null' EXIT
for side in a b; do
	rev=$1
	[ "$side" = b ] && rev=$2
	git -C "$root" worktree add -q --detach "$work/$side" "$rev"
	(cd "$work/$side/bench" && go test -c -o "$work/$side.test")
done
: >"$work/old.txt"
: >"$work/new.txt"
for _ in $(seq "${ROUNDS:-6}"); do
	"$work/a.test" -test.run '^$' -test.bench "$3" -test.count 1 ${ARGS:-} | grep '^Benchmark' >>"$work/old.txt"
	"$work/b.test" -test.run '^$' -test.bench "$3" -test.count 1 ${ARGS:-} | grep '^Benchmark' >>"$work/new.txt"
done
echo "results: $work/old.txt ($1) and $work/new.txt ($2)" >&2
benchstat "$work/old.txt" "$work/new.txt"
