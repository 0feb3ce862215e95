package redisbloom

import "github.com/bloomd/bloom"

// AddNew adds item as an Add that found it new: to the newest link, appending a link first if
// the newest one holds its capacity, and counted there, whether or not the item already tests
// present. It returns the errors of Add (ErrFull, ErrCannotGrow, the Reserve hook's error) and
// then changes nothing.
//
// AddNew replays a journal that records only the adds that were new when they were made. Such
// a replay on a chain whose counts and links are those of the moment the journal starts gives
// exactly the counts and links of the original, even when the chain's bits already hold some of
// the journaled items (as a snapshot copied while adds went on does): counting and growth then
// follow the journal, not the bits, while setting bits that are already set changes nothing.
func (c *Chain) AddNew(item []byte) error {
	h1, h2 := bloom.RedisBloom64.Hash(item)
	for {
		links := *c.links.Load()
		cur := links[len(links)-1]
		if cur.tryReserve() {
			cur.f.AddHashed(h1, h2)
			return nil
		}
		if c.options&optNoScaling != 0 {
			return ErrFull
		}
		if err := c.grow(cur); err != nil {
			return err
		}
	}
}
