package guard_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/bloomd/bloom/guard"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/internal/servertest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// testDB is a users table in a real database, with the placeholder its driver uses.
type testDB struct {
	*sql.DB
	ph string // "?" for SQLite, "$1" for PostgreSQL
}

// openSQLite returns a fresh SQLite database in a temporary file, in WAL mode with a busy
// timeout so that concurrent writers wait instead of failing.
func openSQLite(t testing.TB) testDB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "users.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return testDB{db, "?"}
}

// createUsers makes the users table with ids "user-0" .. "user-(n-1)".
func createUsers(t testing.TB, db testDB, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 500
	for i := 0; i < n; i += chunk {
		var q bytes.Buffer
		q.WriteString("INSERT INTO users (id, name) VALUES ")
		for j := i; j < min(i+chunk, n); j++ {
			if j > i {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "('user-%d', 'name %d')", j, j)
		}
		if _, err := tx.ExecContext(ctx, q.String()); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// insert adds one user.
func (db testDB) insert(ctx context.Context, id string) error {
	q := "INSERT INTO users (id, name) VALUES (?, ?)"
	if db.ph != "?" {
		q = "INSERT INTO users (id, name) VALUES ($1, $2)"
	}
	_, err := db.ExecContext(ctx, q, id, "name of "+id)
	return err
}

// loader returns the guard's loader over db: the user's name, or sql.ErrNoRows. It counts its
// queries in *queries.
func (db testDB) loader(queries *countingInt) func(ctx context.Context, key string) (string, error) {
	q := "SELECT name FROM users WHERE id = " + db.ph
	return func(ctx context.Context, key string) (string, error) {
		queries.add()
		var name string
		err := db.QueryRowContext(ctx, q, key).Scan(&name)
		return name, err
	}
}

// source returns the guard's source over db's users table.
func (db testDB) source() guard.Source {
	return guard.SQL(db.DB, "SELECT count(*) FROM users", "SELECT id FROM users")
}

type countingInt struct {
	mu sync.Mutex
	n  int
}

func (c *countingInt) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *countingInt) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// quietLogger returns a logger that writes into buf (which may be nil to discard).
func quietLogger(buf *redistest.Buffer) *slog.Logger {
	if buf == nil {
		buf = &redistest.Buffer{}
	}
	return slog.New(slog.NewTextHandler(buf, nil))
}

// redisClient returns a client of the test binary's shared redis-server.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	s := redistest.Shared(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password})
	t.Cleanup(func() { c.Close() })
	return c
}

// bloomdClient runs bloomd (internal/server) in this process on a free loopback port, without
// persistence, and returns a client of it.
func bloomdClient(t testing.TB) *redis.Client {
	t.Helper()
	_, addr := servertest.Start(t, &servertest.Options{Config: func(cfg *server.Config) {
		cfg.Save = nil
		cfg.AppendOnly = false
	}})
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

var nameSeq struct {
	mu sync.Mutex
	n  int
}

// uniqueName returns a filter name no other test uses.
func uniqueName(t testing.TB) string {
	nameSeq.mu.Lock()
	defer nameSeq.mu.Unlock()
	nameSeq.n++
	return fmt.Sprintf("guardtest.%d.%d", time.Now().UnixNano()%1e9, nameSeq.n)
}

var sqlOpen = sql.Open
