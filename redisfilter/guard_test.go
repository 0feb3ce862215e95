package redisfilter

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestCacheGuard runs the package example's cache-penetration guard against Redis and bloomd: two
// service instances (two clients, two handles) share the filter; lookups of existing IDs always
// reach the database, lookups of absent IDs reach it only at the false-positive rate.
func TestCacheGuard(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		name := uniqueName(t)
		db := map[string]bool{}
		for i := range 5000 {
			db[fmt.Sprintf("user-%d", i)] = true
		}
		instanceA, err := New(ctx, c, name, 10000, 0.001, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids [][]byte
		for id := range db {
			ids = append(ids, []byte(id))
		}
		if _, err := Load(ctx, instanceA, seqOf(ids), nil); err != nil {
			t.Fatal(err)
		}
		instanceB, err := New(ctx, another(t, c), name, 10000, 0.001, nil)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2)) // fixed seed
		dbHits, absentHits, absent := 0, 0, 0
		for range 20000 {
			id := fmt.Sprintf("user-%d", rng.IntN(10000)) // half exist
			maybe, err := instanceB.TestString(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !db[id] {
				absent++
			}
			if !maybe {
				if db[id] {
					t.Fatalf("the guard blocked existing %s", id)
				}
				continue
			}
			dbHits++
			if !db[id] {
				absentHits++
			}
		}
		// About 10000 absent lookups over 5000 absent IDs at p = 0.1%: about 5 IDs pass, each looked
		// up twice on average; 60 leaves a wide margin and still proves the guard works.
		if absentHits > 60 {
			t.Errorf("%d of %d lookups of absent IDs reached the database", absentHits, absent)
		}
		t.Logf("%d lookups, %d reached the database, %d of them for absent IDs", 20000, dbHits, absentHits)
	})
}
