package guard

import (
	"context"
	"database/sql"
	"fmt"
)

// A Source yields the keys that exist, for the guard's preload and rebuilds.
type Source interface {
	// Count returns the number of keys Keys will yield, or an estimate; the guard sizes a new
	// filter from it when Config.Capacity is zero.
	Count(ctx context.Context) (uint64, error)

	// Keys calls fn with each key, one at a time; fn must not keep key after it returns. Keys
	// stops and returns the error if fn or the source fails.
	Keys(ctx context.Context, fn func(key []byte) error) error
}

// SQL returns a Source that reads keys from a database/sql database: countQuery returns one row
// with one integer column (such as "SELECT count(*) FROM users"), and keysQuery returns the keys
// in its first column (such as "SELECT id FROM users"); args are passed to both. A key is the
// column's bytes as the driver gives them: text and bytes as they are, integers as decimal text
// (so the loader receives "42"; ExampleGuard_Stats shows it). Rows are streamed: the keys are never all in memory at once (with drivers that stream
// result sets, as pgx and modernc.org/sqlite do). A NULL key is an error.
//
// countQuery may be empty if Config.Capacity is set; Count then returns 0.
func SQL(db *sql.DB, countQuery, keysQuery string, args ...any) Source {
	return sqlSource{db, countQuery, keysQuery, args}
}

type sqlSource struct {
	db                    *sql.DB
	countQuery, keysQuery string
	args                  []any
}

func (s sqlSource) Count(ctx context.Context) (uint64, error) {
	if s.countQuery == "" {
		return 0, nil
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, s.countQuery, s.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("guard: counting keys (%s): %w", s.countQuery, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("guard: counting keys (%s): negative count %d", s.countQuery, n)
	}
	return uint64(n), nil
}

func (s sqlSource) Keys(ctx context.Context, fn func(key []byte) error) error {
	rows, err := s.db.QueryContext(ctx, s.keysQuery, s.args...)
	if err != nil {
		return fmt.Errorf("guard: reading keys (%s): %w", s.keysQuery, err)
	}
	defer rows.Close()
	var key sql.RawBytes // valid until the next call to Next: no copy per row
	for rows.Next() {
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("guard: reading keys (%s): %w", s.keysQuery, err)
		}
		if key == nil {
			return fmt.Errorf("guard: reading keys (%s): NULL key", s.keysQuery)
		}
		if err := fn(key); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("guard: reading keys (%s): %w", s.keysQuery, err)
	}
	return nil
}
