package persist

import (
	"fmt"

	"github.com/bloomd/bloom/internal/value"

	"github.com/bloomd/bloom/redisbloom"
)

// SnapshotSize returns the exact number of bytes WritePlainSnapshot will write for items, so that a
// snapshot can be sent on a wire behind its length (a replica's full sync) without being
// written twice. It fixes each filter's header as of the items (Item.Header is set from Links
// and Count where it was nil), as WritePlainSnapshot would.
func SnapshotSize(items []Item) (int64, error) {
	n := int64(snapHeaderSize + sectionSize)
	for i := range items {
		it := &items[i]
		meta := it.Value
		if it.Str != nil {
			n += int64(sectionSize + len(it.Key) + it.StrLen + 4)
			continue
		}
		if it.Hash != nil {
			n += int64(sectionSize + len(it.Key) + value.HashEncodedLen(*it.Hash) + 4)
			continue
		}
		if it.Cuckoo != nil {
			meta = redisbloom.CFHeader(it.Cuckoo)
			for _, s := range it.Cuckoo.FilterBytes() {
				n += int64(s + 4*pieces(s))
			}
		} else if it.Chain != nil {
			if it.Header == nil {
				h, err := headerAt(it.Chain, it.Links, it.Count)
				if err != nil {
					return 0, fmt.Errorf("persist: key %q: %w", it.Key, err)
				}
				it.Header = h
			}
			meta = it.Header
			sizes, err := linkBytes(meta)
			if err != nil {
				return 0, fmt.Errorf("persist: key %q: %w", it.Key, err)
			}
			for _, s := range sizes {
				n += int64(s + 4*pieces(s))
			}
		}
		n += int64(sectionSize + len(it.Key) + len(meta) + 4)
	}
	return n, nil
}
