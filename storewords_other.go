//go:build !amd64

package bloom

import (
	"encoding/binary"
	"sync/atomic"
)

// storeWords sets dst[i] to the little-endian word at src[8*i:] for every i < len(dst), each
// word atomically.
func storeWords(dst []uint64, src []byte) {
	for i := range dst {
		atomic.StoreUint64(&dst[i], binary.LittleEndian.Uint64(src[8*i:]))
	}
}
