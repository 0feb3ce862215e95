package bloom

// Building blocks for filters made of several Filters, such as RedisBloom's scalable chain: they
// hash each key once and probe many sub-filters, and size all of them before allocating any.

// AddHashed is Add for a key already hashed by f.Scheme().Hash, which gives (h1, h2).
// A filter made of several sub-filters with one scheme hashes each key once and calls AddHashed
// and TestHashed on each. It is safe for concurrent use and allocates nothing.
func (f *Filter) AddHashed(h1, h2 uint64) bool { return f.add(h1, h2) }

// AddHashedIf is AddHashed for a filter that keeps a budget of keys, such as the newest link of a
// scalable chain: it reads the key's bits once, and when one of them is clear it calls admit,
// setting the bits only if admit returns true. present reports that every bit was already set
// (admit is not called, nothing changes); added reports that admit agreed and the bits were set;
// both false means admit refused and nothing changed. One pass over the key's bits thus does the
// work of TestHashed followed by AddHashed. It is safe for concurrent use (as AddHashed) and
// allocates nothing; admit must not call back into f.
func (f *Filter) AddHashedIf(h1, h2 uint64, admit func() bool) (added, present bool) {
	return f.addIf(h1, h2, admit)
}

// PrefetchHashed asks the CPU to bring the words of a key already hashed to (h1, h2) into its
// cache, without waiting for them, so that a TestHashed or AddHashed of the key soon after finds
// them there. Batch code calls it a few keys ahead of the key it works on, so that the cache
// misses of several keys overlap. It changes nothing and is safe for concurrent use.
func (f *Filter) PrefetchHashed(h1, h2 uint64) {
	if f.k > maxFastK {
		return
	}
	var idx [maxFastK]uint64
	f.locate(h1, h2, idx[:f.k])
	for i := range f.k {
		idx[i] >>= 6
	}
	prefetchWords(f.bits, idx[:f.k])
}

// PrefetchLocate is PrefetchHashed that also writes the key's k bit positions to pos, and returns
// pos[:k]: a caller that prefetches a key's words and then adds or tests the key (AddLocatedIf,
// TestLocated) computes the positions once. When pos is shorter than k it only prefetches, and
// returns nil. It changes nothing in f, is safe for concurrent use and allocates nothing.
func (f *Filter) PrefetchLocate(h1, h2 uint64, pos []uint64) []uint64 {
	if f.k > len(pos) || f.k > maxFastK {
		f.PrefetchHashed(h1, h2)
		return nil
	}
	pos = pos[:f.k]
	f.locate(h1, h2, pos)
	var idx [maxFastK]uint64
	for i, b := range pos {
		idx[i] = b >> 6
	}
	prefetchWords(f.bits, idx[:f.k])
	return pos
}

// AddLocatedIf is AddHashedIf for a key hashed to (h1, h2) whose positions in f PrefetchLocate
// returned as pos; with any other pos (of another length than k) it computes them again.
func (f *Filter) AddLocatedIf(h1, h2 uint64, pos []uint64, admit func() bool) (added, present bool) {
	if len(pos) != f.k || f.k > maxFastK {
		return f.addIf(h1, h2, admit)
	}
	var p probe
	return f.setIf(&p, f.gatherAt(pos, &p), admit)
}

// TestLocated is TestHashed for a key hashed to (h1, h2) whose positions in f PrefetchLocate
// returned as pos; with any other pos (of another length than k) it computes them again.
func (f *Filter) TestLocated(h1, h2 uint64, pos []uint64) bool {
	if len(pos) != f.k {
		return f.test(h1, h2)
	}
	for _, b := range pos {
		if !f.bits.get(b) {
			return false
		}
	}
	return true
}

// TestHashed is Test for a key already hashed by f.Scheme().Hash, which gives (h1, h2).
// It is safe for concurrent use and allocates nothing.
func (f *Filter) TestHashed(h1, h2 uint64) bool { return f.test(h1, h2) }

// CheckAlloc reports, as ErrTooLarge, an allocation of the given number of bytes that cannot fit
// in this machine's memory; the constructors of this package refuse such sizes in the same way.
// Decoders of multi-filter formats call it with the total of all sub-filters before allocating
// the first, so that a crafted header is refused instead of aborting the process.
func CheckAlloc(bytes uint64) error { return checkAlloc(bytes) }
