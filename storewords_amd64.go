package bloom

// storeWords sets dst[i] to the little-endian word at src[8*i:] for every i < len(dst); src
// holds at least 8*len(dst) bytes. Each word is replaced atomically (an aligned 8-byte store),
// without the full fence of atomic.StoreUint64, which held loading a filter's bits to about
// 1 GB/s. Written in assembly because Go has no relaxed atomic store: a plain Go store of a word
// that adds OR into concurrently would be a data race.
//
//go:noescape
func storeWords(dst []uint64, src []byte)
