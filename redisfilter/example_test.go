package redisfilter_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"

	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// User and the functions below stand in for an application's model and database.
type User struct{ ID string }

var errNotFound = errors.New("user not found")

func loadUserFromCacheOrDB(ctx context.Context, id string) (*User, error) { return &User{id}, nil }

func allUserIDs(ctx context.Context) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, id := range []string{"u1", "u2", "u3"} {
			if !yield([]byte(id)) {
				return
			}
		}
	}
}

// A cache-penetration guard shared by every instance of a service: requests for user IDs that
// were never created are answered "not found" from one Redis round trip, without reaching the
// cache or the database. Only the rate of false positives (0.1% here) of absent IDs gets through.
func Example_cachePenetrationGuard() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()

	// Every instance runs this; the first creates the filter, the others check that their
	// settings agree with it (ErrConfigMismatch otherwise).
	users, err := redisfilter.New(ctx, rdb, "users", 10_000_000, 0.001, nil)
	if err != nil {
		log.Fatal(err)
	}

	// Once, at deployment: preload the IDs that exist, gently.
	stats, err := redisfilter.Load(ctx, users, allUserIDs(ctx), &redisfilter.LoadOptions{
		Rate:     100_000, // keys per second
		Progress: func(s redisfilter.LoadStats) { log.Printf("preloaded %d IDs", s.Keys) },
	})
	if err != nil {
		log.Fatalf("preload stopped after %d IDs: %v", stats.Keys, err)
	}

	// On sign-up: add the new ID before the user can be looked up.
	if _, err := users.AddString(ctx, "u4"); err != nil {
		log.Fatal(err)
	}

	// On every lookup.
	getUser := func(ctx context.Context, id string) (*User, error) {
		maybe, err := users.TestString(ctx, id)
		if err != nil {
			// Redis is unavailable: fail open, and let the cache and database answer.
			return loadUserFromCacheOrDB(ctx, id)
		}
		if !maybe {
			return nil, errNotFound // definitely never created
		}
		return loadUserFromCacheOrDB(ctx, id)
	}
	u, err := getUser(ctx, "u2")
	fmt.Println(u, err)
}
