// Command cache-guard runs a small HTTP service over SQLite, GET /users/{id}, with a cache in
// front of the database, and attacks it with requests for ids that do not exist (cache
// penetration: every such request misses the cache and reaches the database). It measures the
// attack twice, without and with the guard (package guard) in front of the cache, and prints the
// database queries and the request latency of each.
//
//	go run ./examples/cache-guard
//	go run ./examples/cache-guard -rows 1000000 -attack 100000 -concurrency 32
//
// The database is a SQLite file (modernc.org/sqlite, no cgo) in a temporary directory, filled
// with -rows users; the service listens on a free loopback port.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/guard"
	_ "modernc.org/sqlite"
)

func main() {
	if _, err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h or -help: the flag package has printed the usage; asking is no error
		}
		log.Fatal(err)
	}
}

// result is one attack's measurement.
type result struct {
	mode      string
	requests  int
	notFound  int   // 404 answers
	queries   int64 // database queries during the attack
	p50, p99  time.Duration
	perSecond float64
}

func run(args []string, out io.Writer) ([]result, error) {
	fs := flag.NewFlagSet("cache-guard", flag.ContinueOnError)
	rows := fs.Int("rows", 200_000, "users in the database")
	attack := fs.Int("attack", 20_000, "requests for absent ids per run")
	conc := fs.Int("concurrency", 16, "concurrent clients")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *rows <= 0 || *attack <= 0 || *conc <= 0 {
		return nil, errors.New("cache-guard: -rows, -attack and -concurrency must be positive")
	}
	dir, err := os.MkdirTemp("", "cache-guard-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "users.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	start := time.Now()
	if err := fill(db, *rows); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%d users in SQLite (%s); attack: %d requests for absent ids, %d clients\n",
		*rows, time.Since(start).Round(time.Millisecond), *attack, *conc)

	var results []result
	for _, guarded := range []bool{false, true} {
		r, err := measure(db, *rows, *attack, *conc, guarded, out)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	fmt.Fprintf(out, "%-14s %9s %9s %10s %10s %10s\n", "mode", "requests", "db queries", "p50", "p99", "req/s")
	for _, r := range results {
		fmt.Fprintf(out, "%-14s %9d %9d %10s %10s %10.0f\n", r.mode, r.requests, r.queries,
			r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.perSecond)
	}
	return results, nil
}

// fill creates the users table with ids user-0 .. user-(rows-1).
func fill(db *sql.DB, rows int) error {
	if _, err := db.Exec("CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL)"); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.Prepare("INSERT INTO users (id, name) VALUES (?, ?)")
	if err != nil {
		return err
	}
	for i := range rows {
		if _, err := st.Exec(fmt.Sprintf("user-%d", i), fmt.Sprintf("User %d", i)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// mapCache is the service's cache: a map, as an in-process cache or Redis would be used.
type mapCache struct{ m sync.Map }

func (c *mapCache) Get(_ context.Context, k string) (string, bool, error) {
	v, ok := c.m.Load(k)
	if !ok {
		return "", false, nil
	}
	return v.(string), true, nil
}

func (c *mapCache) Set(_ context.Context, k, v string) error { c.m.Store(k, v); return nil }

// measure starts the service (with or without the guard), attacks it, and stops it.
func measure(db *sql.DB, rows, attack, conc int, guarded bool, out io.Writer) (result, error) {
	ctx := context.Background()
	var queries atomic.Int64
	load := func(ctx context.Context, id string) (string, error) {
		queries.Add(1)
		var name string
		err := db.QueryRowContext(ctx, "SELECT name FROM users WHERE id = ?", id).Scan(&name)
		return name, err
	}
	cache := &mapCache{}
	var get func(ctx context.Context, id string) (string, error)
	mode := "cache only"
	if guarded {
		mode = "guard + cache"
		g, err := guard.New(guard.Config[string]{
			Store:  guard.Local(nil),
			Source: guard.SQL(db, "SELECT count(*) FROM users", "SELECT id FROM users"),
			Load:   load,
			Cache:  cache,
			FPP:    0.01,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			return result{}, err
		}
		start := time.Now()
		if err := g.Preload(ctx); err != nil {
			return result{}, err
		}
		fmt.Fprintf(out, "guard preloaded %d ids in %s\n", rows, time.Since(start).Round(time.Millisecond))
		get = g.Get
		defer func() {
			st := g.Stats(ctx)
			fmt.Fprintf(out, "guard: %d answered absent by the filter, %d let through and not found (%.3f%%; filter FPP now %.3f%%)\n",
				st.Absent, st.MaybeNotFound, 100*st.MaybeNotFoundRate(), 100*st.FPP)
		}()
	} else {
		get = func(ctx context.Context, id string) (string, error) { // cache-aside, no guard
			if v, ok, _ := cache.Get(ctx, id); ok {
				return v, nil
			}
			v, err := load(ctx, id)
			if errors.Is(err, sql.ErrNoRows) {
				return "", guard.ErrNotFound
			}
			if err == nil {
				cache.Set(ctx, id, v)
			}
			return v, err
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		name, err := get(r.Context(), r.PathValue("id"))
		switch {
		case errors.Is(err, guard.ErrNotFound):
			http.NotFound(w, r)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			io.WriteString(w, name)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/users/"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}, Timeout: 30 * time.Second}

	// A present id answers 200 in both modes.
	if code, err := fetch(client, base+"user-1"); err != nil || code != http.StatusOK {
		return result{}, fmt.Errorf("GET user-1: %d, %v", code, err)
	}

	ids := absentIDs(rows, attack)
	queries.Store(0)
	lat := make([]time.Duration, attack)
	var next, notFound atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(attack) {
					return
				}
				t := time.Now()
				code, err := fetch(client, base+ids[i])
				lat[i] = time.Since(t)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if code == http.StatusNotFound {
					notFound.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, firstErr
	}
	slices.Sort(lat)
	return result{
		mode:      mode,
		requests:  attack,
		notFound:  int(notFound.Load()),
		queries:   queries.Load(),
		p50:       lat[len(lat)/2],
		p99:       lat[len(lat)*99/100],
		perSecond: float64(attack) / elapsed.Seconds(),
	}, nil
}

// absentIDs returns n distinct ids that are not in the table, drawn from a fixed seed: both
// runs, and every run, ask for the same ids whichever client sends which, so the counts they
// print are the same from run to run (only the timings differ).
func absentIDs(rows, n int) []string {
	rng := rand.New(rand.NewPCG(42, 42))
	seen := make(map[int]bool, n)
	ids := make([]string, 0, n)
	for len(ids) < n {
		if i := rows + rng.IntN(1<<30); !seen[i] {
			seen[i] = true
			ids = append(ids, fmt.Sprintf("user-%d", i))
		}
	}
	return ids
}

func fetch(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
