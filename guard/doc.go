// Package guard is a cache-penetration guard: a Bloom filter of the keys that exist, asked before
// the cache and the database, so that requests for keys that were never written (an attacker's
// random ids, a crawler's stale links) are answered "not found" without touching either.
//
//	g, err := guard.New(guard.Config[User]{
//		Store:  guard.Local(nil), // or guard.Redis(client, "users", nil), guard.Module(client, "users", nil)
//		Source: guard.SQL(db, "SELECT count(*) FROM users", "SELECT id FROM users"),
//		Load:   loadUser, // returns guard.ErrNotFound (or sql.ErrNoRows) for a missing row
//		RebuildEvery: time.Hour,
//	})
//	go g.Run(ctx) // preload, then rebuild every hour
//	...
//	u, err := g.Get(ctx, id) // errors.Is(err, guard.ErrNotFound): no such user
//	...
//	g.Added(ctx, newID) // before the insert commits
//
// # The path of a Get
//
// The filter is asked first: "definitely absent" returns ErrNotFound at once. A "maybe" goes to
// the Cache (optional) and then to the loader, with concurrent loads of one key collapsed into
// one (golang.org/x/sync/singleflight). A filter never forgets a key, so the only wrong answer it
// can give is "maybe" for an absent key (a false positive, at the rate it was sized for), which
// costs one database query and is counted in Stats.MaybeNotFound.
//
// # Where the filter lives
//
// A Store makes the filters: Local keeps them in this process (bloom.Filter or bloom.Blocked),
// Redis keeps them in Redis as redisfilter filters shared by every instance of a service, and
// Module keeps them in a server with the BF.* commands (bloomd, or Redis with RedisBloom). The
// guard only needs Filter (Add, Test, AddMany), which the redisfilter kinds satisfy as they are
// and InProcess adapts from any bloom.AnyFilter.
//
// # Never a wrong "absent"
//
// Until its first filter is built (Preload, Run) or found (Attach), the guard lets every request
// through: Ready is closed when the filter goes into service. Preload reads the keys that exist
// from a Source (SQL streams them from any database/sql query), in batches, with progress
// reported through Config.Progress and a log line, into a filter sized from the source's count
// times Config.Headroom.
//
// Rows added later are reported with Added. Rebuild (and Run, periodically) builds a new filter
// from the source while the old one keeps serving, and swaps it in atomically: a pointer swap in
// process, a RENAME inside MULTI/EXEC in Redis. This heals what a Bloom filter cannot do by
// itself: deleted rows stop passing, and a filter grown past its capacity is resized. A build's
// read of the source may miss rows inserted while it runs, so the guard records the keys Added
// reports during a build (and within Config.InsertWindow before it, for inserts that commit
// after their Added) and adds them to the new filter before the swap, the last of them with the
// swap's lock held. A key whose Added has returned is therefore never answered absent by this
// guard, before, during or after a rebuild.
//
// # Figures
//
// Stats gives the counters (requests, answered absent, let through, loads, cache hits), the
// filter's false-positive probability now (Stats.FPP: from the filter's fill where it can report
// it, else estimated from the keys added) and the rate at which the database answered "no" for
// keys the filter let through (Stats.MaybeNotFoundRate), which is the false-positive rate
// observed on the traffic: when it climbs above the configured rate, the filter is due a rebuild.
// Guard.Collector exports the same figures as Prometheus metrics (bloom_guard_*, labelled with
// the guard's name), read from Stats when scraped.
//
// # Examples
//
// Example builds a guard over a database/sql query and asks it for present and absent keys;
// ExampleGuard_Stats reads its figures. examples/cache-guard in the repository is a whole HTTP
// service behind a guard.
package guard
