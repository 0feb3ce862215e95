package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/guard"
	"github.com/bloomd/bloom/internal/redistest"
)

// checkGuard runs the path of a Get against a real database db holding rows users: before the
// preload every request reaches the database; after it, requests for absent ids stop at the
// filter except at its false-positive rate, and every present id is found.
func checkGuard(t *testing.T, db testDB, store guard.Store, rows int) *guard.Guard[string] {
	t.Helper()
	ctx := context.Background()
	var queries countingInt
	var logs redistest.Buffer
	var progress []guard.Progress
	g, err := guard.New(guard.Config[string]{
		Store:     store,
		Source:    db.source(),
		Load:      db.loader(&queries),
		FPP:       0.01,
		BatchSize: 256,
		Progress:  func(p guard.Progress) { progress = append(progress, p) },
		Logger:    quietLogger(&logs),
		LogEvery:  time.Nanosecond, // a line per batch, to see one
	})
	if err != nil {
		t.Fatal(err)
	}

	// Not ready: an absent id reaches the database, never ErrNotFound from the filter alone.
	select {
	case <-g.Ready():
		t.Fatal("Ready before the preload")
	default:
	}
	if _, err := g.Get(ctx, "nobody"); !errors.Is(err, guard.ErrNotFound) {
		t.Fatalf("Get(nobody) before preload: err = %v; want ErrNotFound from the database", err)
	}
	if queries.get() != 1 {
		t.Fatalf("before preload the database saw %d queries; want 1", queries.get())
	}
	if st := g.Stats(ctx); st.Ready || st.Unguarded != 1 || st.Absent != 0 {
		t.Fatalf("stats before preload: %+v", st)
	}

	if err := g.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Ready():
	default:
		t.Fatal("not Ready after the preload")
	}
	// Progress: one report per batch of 256, increasing, ending at the row count.
	if want := (rows + 255) / 256; len(progress) != want {
		t.Errorf("%d progress reports; want %d", len(progress), want)
	}
	for i, p := range progress {
		if p.Rebuild || p.Total != uint64(rows) || p.Keys != uint64(min((i+1)*256, rows)) {
			t.Fatalf("progress report %d = %+v", i, p)
		}
	}
	for _, want := range []string{"guard: build started", "guard: building", "guard: build done"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	// Every present id is found; absent ids mostly stop at the filter.
	queries = countingInt{}
	rng := rand.New(rand.NewPCG(7, 7)) // fixed seed
	for range 500 {
		id := fmt.Sprintf("user-%d", rng.IntN(rows))
		name, err := g.Get(ctx, id)
		if err != nil || name != "name "+strings.TrimPrefix(id, "user-") {
			t.Fatalf("Get(%s) = %q, %v", id, name, err)
		}
	}
	const absent = 5000
	for i := range absent {
		if _, err := g.Get(ctx, fmt.Sprintf("absent-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("Get(absent-%d): err = %v; want ErrNotFound", i, err)
		}
	}
	st := g.Stats(ctx)
	if st.Keys != uint64(rows) || st.BuildKeys != uint64(rows) || st.Builds != 1 {
		t.Errorf("stats: Keys %d, BuildKeys %d, Builds %d; want %d, %d, 1", st.Keys, st.BuildKeys, st.Builds, rows, rows)
	}
	if st.Capacity != max(uint64(2*rows), 1024) {
		t.Errorf("capacity %d; want twice the %d rows (and at least 1024)", st.Capacity, rows)
	}
	if st.Absent+st.MaybeNotFound != absent {
		t.Errorf("Absent %d + MaybeNotFound %d != %d absent ids asked", st.Absent, st.MaybeNotFound, absent)
	}
	// The database saw the 500 present ids and the false positives only.
	if q := queries.get(); q != 500+int(st.MaybeNotFound) {
		t.Errorf("database queries %d; want 500 + %d false positives", q, st.MaybeNotFound)
	}
	// Sized for twice the rows at p = 0.01, the filter holds half its capacity: its rate is
	// far below 1%. 5000 absent ids at under 1% is under 50 expected; 100 is a wide bound.
	if st.MaybeNotFound > 100 {
		t.Errorf("%d of %d absent ids passed the filter", st.MaybeNotFound, absent)
	}
	if st.FPP <= 0 || st.FPP > 0.01 {
		t.Errorf("estimated FPP %g; want in (0, 0.01] for a filter at half capacity", st.FPP)
	}
	if r := st.MaybeNotFoundRate(); r != float64(st.MaybeNotFound)/absent {
		t.Errorf("MaybeNotFoundRate %g", r)
	}
	t.Logf("%d rows: FPP now %.5f, observed %.5f (%d of %d absent ids reached the database)", rows, st.FPP, st.MaybeNotFoundRate(), st.MaybeNotFound, absent)
	return g
}

// TestSQLite runs the guard over a real SQLite database with an in-process filter, then checks
// that Added and Rebuild keep it right: added keys pass at once, deleted rows stop passing after
// a rebuild.
func TestSQLite(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 3000)
	g := checkGuard(t, db, guard.Local(nil), 3000)
	checkAddedAndRebuild(t, db, g)
}

// checkAddedAndRebuild: Added keys pass at once; after rows are deleted and a rebuild, the
// deleted ids stop at the filter.
func checkAddedAndRebuild(t *testing.T, db testDB, g *guard.Guard[string]) {
	t.Helper()
	ctx := context.Background()
	for i := range 100 {
		id := fmt.Sprintf("new-%d", i)
		if err := g.Added(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := db.insert(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Get(ctx, id); err != nil {
			t.Fatalf("Get(%s) after Added and insert: %v", id, err)
		}
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM users WHERE id LIKE 'user-1%'"); err != nil {
		t.Fatal(err)
	}
	before := g.Stats(ctx)
	if err := g.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	after := g.Stats(ctx)
	if after.Builds != before.Builds+1 {
		t.Fatalf("Builds %d after a rebuild; want %d", after.Builds, before.Builds+1)
	}
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM users").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if after.BuildKeys != uint64(rows) {
		t.Errorf("rebuild read %d keys; the table has %d", after.BuildKeys, rows)
	}
	passed := 0
	for i := 1000; i < 2000; i++ { // deleted: "user-1..." covers 1000..1999
		if _, err := g.Get(ctx, fmt.Sprintf("user-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatalf("Get(user-%d) of a deleted row: err = %v", i, err)
		}
	}
	passed = int(g.Stats(ctx).MaybeNotFound - after.MaybeNotFound)
	if passed > 50 { // 1000 deleted ids at about 0.5%: about 5 expected
		t.Errorf("%d of 1000 deleted ids passed the rebuilt filter", passed)
	}
	for i := range 100 {
		if _, err := g.Get(ctx, fmt.Sprintf("new-%d", i)); err != nil {
			t.Fatalf("Get(new-%d) after the rebuild: %v", i, err)
		}
	}
}

// TestSingleflight: concurrent Gets of one uncached key share one load; a Get whose context ends
// stops waiting without disturbing the others.
func TestSingleflight(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 10)
	release := make(chan struct{})
	var loads atomic.Int32
	g, err := guard.New(guard.Config[string]{
		Store:  guard.Local(nil),
		Source: db.source(),
		Load: func(ctx context.Context, key string) (string, error) {
			loads.Add(1)
			<-release
			var name string
			err := db.QueryRowContext(ctx, "SELECT name FROM users WHERE id = ?", key).Scan(&name)
			return name, err
		},
		Logger: quietLogger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	const callers = 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			name, err := g.Get(ctx, "user-3")
			if err == nil && name != "name 3" {
				err = fmt.Errorf("got %q", name)
			}
			errs <- err
		})
	}
	// One more caller gives up early.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := g.Get(short, "user-3"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get with an expiring context: err = %v; want DeadlineExceeded", err)
	}
	time.Sleep(20 * time.Millisecond) // let the callers reach the flight
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Callers that arrived after the flight landed start another; all 21 arrived before release
	// in practice, and the bound holds regardless of scheduling only as "far fewer than callers".
	if n := loads.Load(); n < 1 || n > 3 {
		t.Errorf("%d loads for %d concurrent Gets of one key; want 1 (at most 3 under odd scheduling)", n, callers+1)
	}
}

// mapCache is an in-process cache for the tests.
type mapCache struct {
	mu   sync.Mutex
	m    map[string]string
	gets int
}

func (c *mapCache) Get(_ context.Context, key string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	v, ok := c.m[key]
	return v, ok, nil
}

func (c *mapCache) Set(_ context.Context, key, v string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = v
	return nil
}

// TestCache: the cache is asked after the filter and before the loader, and filled by the
// loader; absent keys the filter stops touch neither.
func TestCache(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 100)
	cache := &mapCache{m: map[string]string{}}
	var queries countingInt
	g, err := guard.New(guard.Config[string]{
		Store: guard.Local(&guard.LocalOptions{Blocked: true}), Source: db.source(),
		Load: db.loader(&queries), Cache: cache, Logger: quietLogger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if v, err := g.Get(ctx, "user-5"); err != nil || v != "name 5" {
			t.Fatalf("Get(user-5) = %q, %v", v, err)
		}
	}
	st := g.Stats(ctx)
	if queries.get() != 1 || st.CacheHits != 2 || st.Loads != 1 {
		t.Errorf("3 Gets of one key: %d queries, %d cache hits, %d loads; want 1, 2, 1", queries.get(), st.CacheHits, st.Loads)
	}
	gets := cache.gets
	stopped := 0
	for i := range 200 {
		if _, err := g.Get(ctx, fmt.Sprintf("absent-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatal(err)
		}
	}
	stopped = int(g.Stats(ctx).Absent)
	if cache.gets-gets != 200-stopped {
		t.Errorf("cache asked %d times for 200 absent ids of which the filter stopped %d", cache.gets-gets, stopped)
	}
}

// TestConfig: configurations that cannot work are refused with ErrInvalid.
func TestConfig(t *testing.T) {
	db := openSQLite(t)
	load := func(context.Context, string) (int, error) { return 0, nil }
	for _, c := range []guard.Config[int]{
		{},
		{Store: guard.Local(nil), Source: db.source()},
		{Store: guard.Local(nil), Load: load},
		{Source: db.source(), Load: load},
		{Store: guard.Local(nil), Source: db.source(), Load: load, FPP: 1},
		{Store: guard.Local(nil), Source: db.source(), Load: load, FPP: -0.1},
		{Store: guard.Local(nil), Source: db.source(), Load: load, Headroom: 0.5},
		{Store: guard.Local(nil), Source: db.source(), Load: load, BatchSize: -1},
		{Store: guard.Local(nil), Source: db.source(), Load: load, RebuildEvery: -time.Second},
	} {
		if _, err := guard.New(c); !errors.Is(err, guard.ErrInvalid) {
			t.Errorf("New(%+v): err = %v; want ErrInvalid", c, err)
		}
	}
	g, err := guard.New(guard.Config[int]{Store: guard.Local(nil), Source: db.source(), Load: load})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Attach(context.Background()); !errors.Is(err, guard.ErrInvalid) {
		t.Errorf("Attach with a local store: err = %v; want ErrInvalid", err)
	}
}

// TestBadSource: a build whose source fails leaves the guard as it was (not ready, or serving
// the old filter) and reports the error.
func TestBadSource(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 50)
	var queries countingInt
	var logs redistest.Buffer
	bad := guard.SQL(db.DB, "SELECT count(*) FROM users", "SELECT id FROM no_such_table")
	g, err := guard.New(guard.Config[string]{Store: guard.Local(nil), Source: bad, Load: db.loader(&queries), Logger: quietLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Preload(ctx); err == nil || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("Preload from a missing table: err = %v", err)
	}
	if st := g.Stats(ctx); st.Ready || st.LastError == nil {
		t.Fatalf("after a failed preload: %+v", st)
	}
	if _, err := g.Get(ctx, "user-1"); err != nil {
		t.Fatalf("Get after a failed preload: %v", err)
	}
	if !strings.Contains(logs.String(), "build failed") {
		t.Errorf("no log line for the failed build:\n%s", logs.String())
	}
	// NULL keys are refused, not added as empty strings.
	if _, err := db.ExecContext(ctx, "CREATE TABLE k (id TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO k VALUES ('a'), (NULL)"); err != nil {
		t.Fatal(err)
	}
	nulls := guard.SQL(db.DB, "", "SELECT id FROM k")
	g2, _ := guard.New(guard.Config[string]{Store: guard.Local(nil), Source: nulls, Load: db.loader(&queries), Capacity: 10, Logger: quietLogger(nil)})
	if err := g2.Preload(ctx); err == nil || !strings.Contains(err.Error(), "NULL") {
		t.Fatalf("Preload with a NULL key: err = %v", err)
	}
}

// TestInterfaceValue: a loader of an interface type may return a nil value.
func TestInterfaceValue(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 10)
	g, err := guard.New(guard.Config[any]{
		Store: guard.Local(nil), Source: db.source(), Logger: quietLogger(nil),
		Load: func(context.Context, string) (any, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := g.Get(context.Background(), "user-1"); v != nil || err != nil {
		t.Fatalf("Get = %v, %v; want nil, nil", v, err)
	}
}

// TestRun: Run preloads, becomes ready, and rebuilds every RebuildEvery until its context ends;
// a periodic rebuild picks up deleted rows.
func TestRun(t *testing.T) {
	db := openSQLite(t)
	createUsers(t, db, 2000)
	var queries countingInt
	g, err := guard.New(guard.Config[string]{
		Store: guard.Local(nil), Source: db.source(), Load: db.loader(&queries),
		RebuildEvery: 50 * time.Millisecond, Logger: quietLogger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case <-g.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("not ready 30s after Run started")
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM users WHERE id = 'user-5'"); err != nil {
		t.Fatal(err)
	}
	builds := g.Stats(ctx).Builds
	deadline := time.Now().Add(30 * time.Second)
	for g.Stats(ctx).Builds < builds+2 { // a build that began after the delete has ended
		if time.Now().After(deadline) {
			t.Fatalf("no periodic rebuild within 30s: %+v", g.Stats(ctx))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := g.Stats(ctx); st.BuildKeys != 1999 {
		t.Errorf("periodic rebuild read %d keys; want 1999", st.BuildKeys)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v; want context.Canceled", err)
	}
}
