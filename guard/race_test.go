package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/guard"
)

// checkNoFalseAbsent proves that the guard never answers absent for a key in the database, with
// rows inserted while the preload and rebuilds run. Writers report each new id with Added and
// then insert it; readers ask for ids whose insert has committed and fail on any ErrNotFound.
// The builds are slowed (a pause per batch, through the progress callback) so that many inserts
// land inside them; the test checks that they did.
func checkNoFalseAbsent(t *testing.T, db testDB, store guard.Store, seedRows, rebuilds int) {
	t.Helper()
	createUsers(t, db, seedRows)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var queries countingInt
	g, err := guard.New(guard.Config[string]{
		Store:     store,
		Source:    db.source(),
		Load:      db.loader(&queries),
		BatchSize: 100,
		Progress:  func(guard.Progress) { time.Sleep(2 * time.Millisecond) },
		Logger:    quietLogger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu        sync.Mutex
		committed []string
		inBuild   atomic.Bool
		during    atomic.Int64 // inserts that committed while a build ran
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		failures  = make(chan error, 10)
	)
	fail := func(err error) {
		select {
		case failures <- err:
		default:
		}
	}
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := g.Added(ctx, id); err != nil {
					fail(err)
					return
				}
				building := inBuild.Load()
				if err := db.insert(ctx, id); err != nil {
					fail(err)
					return
				}
				if building && inBuild.Load() {
					during.Add(1)
				}
				mu.Lock()
				committed = append(committed, id)
				mu.Unlock()
			}
		})
	}
	for r := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 99)) // fixed seed
			for {
				select {
				case <-stop:
					return
				default:
				}
				var id string
				mu.Lock()
				if n := len(committed); n > 0 && rng.IntN(2) == 0 {
					id = committed[n-1-rng.IntN(min(n, 50))] // mostly the newest
				}
				mu.Unlock()
				if id == "" {
					id = fmt.Sprintf("user-%d", rng.IntN(seedRows))
				}
				if _, err := g.Get(ctx, id); err != nil {
					fail(fmt.Errorf("Get(%s) of a committed row: %w", id, err))
					return
				}
			}
		})
	}

	time.Sleep(20 * time.Millisecond) // inserts before the preload too
	for i := range 1 + rebuilds {
		inBuild.Store(true)
		err := g.Rebuild(ctx) // the first is the preload
		inBuild.Store(false)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("build %d: %v", i, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if during.Load() < 10 {
		t.Fatalf("only %d inserts committed during the builds; the test did not exercise the race", during.Load())
	}
	// Afterwards every committed id passes the filter, and absent ids still stop at it.
	before := g.Stats(ctx)
	for _, id := range committed {
		if _, err := g.Get(ctx, id); err != nil {
			t.Fatalf("Get(%s) after the builds: %v", id, err)
		}
	}
	for i := range 1000 {
		if _, err := g.Get(ctx, fmt.Sprintf("absent-%d", i)); !errors.Is(err, guard.ErrNotFound) {
			t.Fatal(err)
		}
	}
	st := g.Stats(ctx)
	if st.Absent-before.Absent < 900 {
		t.Errorf("the filter stopped %d of 1000 absent ids", st.Absent-before.Absent)
	}
	t.Logf("%d inserts, %d committed during %d builds; %d Gets, none answered absent", len(committed), during.Load(), 1+rebuilds, st.Requests)
}

// TestNoFalseAbsentSQLite: the race test over SQLite with an in-process filter.
func TestNoFalseAbsentSQLite(t *testing.T) {
	checkNoFalseAbsent(t, openSQLite(t), guard.Local(nil), 5000, 3)
}
