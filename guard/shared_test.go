package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guard"
	"github.com/bloomd/bloom/internal/pgtest"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// TestPostgres runs the guard over a real PostgreSQL server through pgx: the path of a Get,
// Added and a rebuild, and the race test (each on its own database).
func TestPostgres(t *testing.T) {
	s := pgtest.New(t)
	base := openPG(t, s, "postgres")
	for i, name := range []string{"path", "race"} {
		if _, err := base.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		db := openPG(t, s, name)
		t.Run(name, func(t *testing.T) {
			if i == 0 {
				createUsers(t, db, 3000)
				g := checkGuard(t, db, guard.Local(nil), 3000)
				checkAddedAndRebuild(t, db, g)
			} else {
				checkNoFalseAbsent(t, db, guard.Local(nil), 5000, 3)
			}
		})
	}
}

func openPG(t *testing.T, s *pgtest.Server, dbname string) testDB {
	t.Helper()
	db, err := sqlOpen("pgx", strings.Replace(s.DSN, "/postgres?", "/"+dbname+"?", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return testDB{db, "$1"}
}

// TestRedisStore runs the guard with its filter in a real redis-server: the path of a Get, the
// rebuild by RENAME (no staging keys left, no old keys left), a second instance attached to the
// shared filter that follows the swap, and the race test.
func TestRedisStore(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	name := uniqueName(t)
	db := openSQLite(t)
	createUsers(t, db, 3000)
	store := guard.Redis(c, name, nil)
	g := checkGuard(t, db, store, 3000)

	// Another instance attaches to the filter the first built.
	var queries countingInt
	other, err := guard.New(guard.Config[string]{Store: guard.Redis(c, name, nil), Source: db.source(), Load: db.loader(&queries), Logger: quietLogger(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Attach(ctx); err != nil {
		t.Fatal(err)
	}
	// Rows grow past the old capacity; the rebuild sizes the new filter from the new count, so
	// its parameters differ and the other instance's handle must follow the swap.
	checkAddedAndRebuild(t, db, g)
	if _, err := db.ExecContext(ctx, "INSERT INTO users SELECT 'more-' || id, name FROM users"); err != nil {
		t.Fatal(err)
	}
	if err := g.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, "more-user-5"); err != nil {
		t.Fatalf("attached instance: Get(more-user-5) after the rebuild: %v", err)
	}
	for i := range 200 {
		if _, err := other.Get(ctx, fmt.Sprintf("absent-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if st := other.Stats(ctx); st.FilterErrs != 0 || st.Absent < 180 {
		t.Errorf("attached instance after the swap: %d filter errors, %d of 200 absent ids stopped", st.FilterErrs, st.Absent)
	}
	f, err := redisfilter.Open(ctx, c, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows uint64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM users").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(ctx); st.Capacity != 2*rows || st.BuildKeys != rows {
		t.Errorf("rebuilt filter: capacity %d for %d keys read; want twice the %d rows", st.Capacity, st.BuildKeys, rows)
	} else if m, _, _ := bloom.GuavaSize(st.Capacity, 0.01); f.M() != m {
		t.Errorf("the filter in Redis has m=%d; want %d, sized for %d keys", f.M(), m, st.Capacity)
	}
	left, err := c.Keys(ctx, "*"+name+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		if !strings.HasPrefix(k, "{"+name+"}:") {
			t.Errorf("key %q left behind by the builds", k)
		}
	}

	t.Run("race", func(t *testing.T) {
		checkNoFalseAbsent(t, openSQLite(t), guard.Redis(c, uniqueName(t), nil), 3000, 2)
	})
}

// TestRedisDown: when the filter's server is gone, Get asks the database (never ErrNotFound
// from the filter alone) and counts the errors; Added reports them.
func TestRedisDown(t *testing.T) {
	srv := redistest.New(t, nil)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	db := openSQLite(t)
	createUsers(t, db, 100)
	var queries countingInt
	g, err := guard.New(guard.Config[string]{Store: guard.Redis(c, uniqueName(t), nil), Source: db.source(), Load: db.loader(&queries), Logger: quietLogger(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if v, err := g.Get(ctx, "user-7"); err != nil || v != "name 7" {
		t.Fatalf("Get(user-7) with the filter down = %q, %v", v, err)
	}
	if _, err := g.Get(ctx, "absent"); !errors.Is(err, guard.ErrNotFound) || queries.get() != 2 {
		t.Fatalf("Get(absent) with the filter down: err = %v after %d queries; want ErrNotFound from the database", err, queries.get())
	}
	if err := g.Added(ctx, "x"); err == nil {
		t.Error("Added with the filter down returned no error")
	}
	if st := g.Stats(ctx); st.FilterErrs != 3 || st.Unguarded != 2 || st.Absent != 0 {
		t.Errorf("stats with the filter down: %+v", st)
	}
	if err := g.Rebuild(ctx); err == nil {
		t.Error("Rebuild with the filter down returned no error")
	}
}

// TestModuleStore runs the guard with its filter in bloomd through the BF.* commands: the path of
// a Get, a rebuild by RENAME followed by an attached instance, and the race test.
func TestModuleStore(t *testing.T) {
	c := bloomdClient(t)
	ctx := context.Background()
	db := openSQLite(t)
	createUsers(t, db, 3000)
	store := guard.Module(c, "users", nil)
	var queries countingInt
	other, err := guard.New(guard.Config[string]{Store: guard.Module(c, "users", nil), Source: db.source(), Load: db.loader(&queries), Logger: quietLogger(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Attach(ctx); !errors.Is(err, guard.ErrNoFilter) {
		t.Fatalf("Attach before any build: err = %v; want ErrNoFilter", err)
	}
	g := checkGuard(t, db, store, 3000)
	if err := other.Attach(ctx); err != nil {
		t.Fatal(err)
	}
	checkAddedAndRebuild(t, db, g)
	if keys, _ := c.Keys(ctx, "*").Result(); len(keys) != 1 || keys[0] != "users" {
		t.Errorf("keys after the rebuild: %q; want only users", keys)
	}
	// The attached instance uses the rebuilt filter: deleted rows stop there too.
	stopped := 0
	for i := 1000; i < 1100; i++ {
		if _, err := other.Get(ctx, fmt.Sprintf("user-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatal(err)
		}
	}
	stopped = int(other.Stats(ctx).Absent)
	if stopped < 90 {
		t.Errorf("attached instance stopped %d of 100 deleted ids after the rebuild", stopped)
	}
	t.Run("race", func(t *testing.T) {
		checkNoFalseAbsent(t, openSQLite(t), guard.Module(c, "race", nil), 3000, 2)
	})
}

// TestRedisStoreCluster: on Redis Cluster the Redis store refuses to build (its swap could not be
// atomic), the guard stays unready and lets requests through, and nothing is written.
func TestRedisStoreCluster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { c.Close() })
	db := openSQLite(t)
	createUsers(t, db, 100)
	var queries countingInt
	name := uniqueName(t)
	g, err := guard.New(guard.Config[string]{Store: guard.Redis(c, name, nil), Source: db.source(), Load: db.loader(&queries), Logger: quietLogger(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Preload(ctx); !errors.Is(err, guard.ErrInvalid) {
		t.Fatalf("Preload on a cluster: err = %v; want ErrInvalid", err)
	}
	if _, err := g.Get(ctx, "user-3"); err != nil {
		t.Fatalf("Get on an unready guard: %v", err)
	}
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "*"+name+"*").Result()
		if err == nil && len(keys) > 0 {
			t.Errorf("keys written on a refused build: %q", keys)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
