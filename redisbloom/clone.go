package redisbloom

// Clone returns an independent copy of c: the same links, counts and bits, without c's Reserve
// hook (the caller accounts for the copy's Size). It reads c's bits with atomic loads, so it is
// safe while Adds go on; the copy is exact only if none is in flight. A server takes one while
// no command runs, for a snapshot that must be exact at one instant (one that Redis, which
// counts every add against the bits it has, loads).
func (c *Chain) Clone() *Chain {
	c.mu.Lock() // no link is appended meanwhile
	defer c.mu.Unlock()
	links := *c.links.Load()
	cl := make([]*link, len(links))
	for i, l := range links {
		n := &link{f: l.f.Clone(), capacity: l.capacity, errorRate: l.errorRate, bpe: l.bpe, n2: l.n2}
		n.size.Store(l.size.Load())
		cl[i] = n
	}
	d := &Chain{growth: c.growth, options: c.options}
	d.links.Store(&cl)
	return d
}
