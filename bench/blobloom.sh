#!/usr/bin/env bash
# Runs this module's benchmarks with greatroar/blobloom among the peers, in a scratch copy of the
# module under /tmp. The module proxy refuses blobloom, so its source comes from Debian's package
# golang-github-greatroar-blobloom-dev (apt-get install it first), and it never enters this
# repository: only the adapter below, written into the scratch copy, refers to it. Blobloom takes
# a 64-bit hash from its caller; the adapter gives it xxhash64 of the key, the fastest hash a Go
# program would likely use. Arguments are passed to go test, for example:
#
#	bench/blobloom.sh -bench 'Filters/n=1e6/' -count 6 | tee blobloom.txt
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/share/gocode/src/github.com/greatroar/blobloom
if [ ! -f "$src/go.mod" ]; then
	echo "blobloom.sh: $src not found; apt-get install golang-github-greatroar-blobloom-dev" >&2
	exit 1
fi
work=$(mktemp -d /tmp/bloom-bench-blobloom.XXXXXX)
cp "$here"/*.go "$here"/go.mod "$here"/go.sum "$work"/
cat >"$work/blobloom_test.go" <<'EOF'
package bench

import (
	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
)

func init() {
	extraImpls = append(extraImpls,
		impl{"blobloom", func(n uint64) (subject, error) {
			f := blobloom.NewOptimized(blobloom.Config{Capacity: n, FPRate: p})
			return subject{
				add:   func(key []byte) { f.Add(xxhash.Sum64(key)) },
				test:  func(key []byte) bool { return f.Has(xxhash.Sum64(key)) },
				reset: f.Clear,
				bits:  f.NumBits,
			}, nil
		}},
		impl{"blobloom-sync", func(n uint64) (subject, error) {
			f := blobloom.NewSyncOptimized(blobloom.Config{Capacity: n, FPRate: p})
			return subject{
				add:   func(key []byte) { f.Add(xxhash.Sum64(key)) },
				test:  func(key []byte) bool { return f.Has(xxhash.Sum64(key)) },
				reset: (*blobloom.Filter)(f).Clear,
				bits:  (*blobloom.Filter)(f).NumBits,
			}, nil
		}})
}
EOF
root=$(cd "$here/.." && pwd)
cd "$work"
go mod edit -module bloombench.local/blobloom -replace "github.com/bloomd/bloom=$root" \
	-replace "github.com/greatroar/blobloom=$src" -require github.com/greatroar/blobloom@v0.7.1
go get github.com/cespare/xxhash/v2@v2.3.0 2>/dev/null
go mod tidy
echo "scratch module: $work" >&2
go test -run '^$' "$@"
