package bloom

// prefetchWords asks the CPU to bring words[i] into the cache for each i in idx, without waiting
// for it: unlike a load, a prefetch retires at once, so the CPU goes on with other work while the
// misses are served. Every i must be below len(words); callers only pass indices they computed
// for the array (and a prefetch never faults anyway).
//
//go:noescape
func prefetchWords(words []uint64, idx []uint64)
