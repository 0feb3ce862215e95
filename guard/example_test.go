package guard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/bloomd/bloom/guard"
)

// The guard in front of a users table in SQLite, with the filter in this process: absent ids are
// answered without a query, present ones are loaded, and a new row is reported with Added.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	db.Exec("CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT)")
	db.Exec("INSERT INTO users VALUES ('u1', 'Ada'), ('u2', 'Grace')")

	queries := 0
	g, err := guard.New(guard.Config[string]{
		Store:  guard.Local(nil),
		Source: guard.SQL(db, "SELECT count(*) FROM users", "SELECT id FROM users"),
		Load: func(ctx context.Context, id string) (string, error) {
			queries++
			var name string
			err := db.QueryRowContext(ctx, "SELECT name FROM users WHERE id = ?", id).Scan(&name)
			return name, err // sql.ErrNoRows counts as guard.ErrNotFound
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := g.Preload(ctx); err != nil {
		log.Fatal(err)
	}

	name, err := g.Get(ctx, "u1")
	fmt.Println(name, err)
	_, err = g.Get(ctx, "u999")
	fmt.Println(errors.Is(err, guard.ErrNotFound), "after", queries, "queries")

	g.Added(ctx, "u3") // before the insert commits
	db.Exec("INSERT INTO users VALUES ('u3', 'Barbara')")
	name, err = g.Get(ctx, "u3")
	fmt.Println(name, err)
	// Output:
	// Ada <nil>
	// true after 1 queries
	// Barbara <nil>
}

// Figures of a guard: the filter's false-positive probability now, and how often the database
// said "no" to a key the filter let through.
func ExampleGuard_Stats() {
	ctx := context.Background()
	db, _ := sql.Open("sqlite", "file::memory:")
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	db.Exec("CREATE TABLE ids (id INTEGER PRIMARY KEY)")
	db.Exec("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 10000) INSERT INTO ids SELECT i FROM s")
	g, _ := guard.New(guard.Config[int]{
		Store:  guard.Local(nil),
		Source: guard.SQL(db, "SELECT count(*) FROM ids", "SELECT id FROM ids"), // integers as decimal text
		Load: func(ctx context.Context, id string) (int, error) {
			var n int
			return n, db.QueryRowContext(ctx, "SELECT id FROM ids WHERE id = ?", id).Scan(&n)
		},
		FPP:    0.01,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	g.Preload(ctx)
	for i := 20001; i <= 30000; i++ {
		g.Get(ctx, fmt.Sprint(i))
	}
	st := g.Stats(ctx)
	fmt.Printf("capacity %d, keys %d\n", st.Capacity, st.Keys)
	fmt.Printf("FPP now below 1%%: %v; observed below 1%%: %v\n", st.FPP < 0.01, st.MaybeNotFoundRate() < 0.01)
	fmt.Println("absent answered by the filter or the database:", st.Absent+st.MaybeNotFound)
	// Output:
	// capacity 20000, keys 10000
	// FPP now below 1%: true; observed below 1%: true
	// absent answered by the filter or the database: 10000
}
