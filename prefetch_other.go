//go:build !amd64

package bloom

import "sync/atomic"

// prefetchWords loads words[i] for each i in idx, where no prefetch instruction is wired up: the
// loads overlap, but unlike prefetches they hold up the CPU until they complete. (Atomic loads
// are never removed as dead code.)
func prefetchWords(words []uint64, idx []uint64) {
	for _, i := range idx {
		atomic.LoadUint64(&words[i])
	}
}
