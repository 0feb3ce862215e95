package skipped

import (
	"testing"
)

func TestSummary(t *testing.T) {
	if got := Summary("example.com/p"); got != "" {
		t.Fatalf("summary with nothing skipped: %q", got)
	}
	t.Run("A", func(t *testing.T) { Missing(t, "redis-server", "redis-server is not installed") })
	t.Run("B", func(t *testing.T) { Missing(t, "redis-server", "redis-server is not installed") })
	t.Run("C", func(t *testing.T) { Missing(t, "java", "java is not installed") })
	want := "example.com/p: 3 tests skipped, not run: java missing (1 test), redis-server missing (2 tests)\n"
	if got := Summary("example.com/p"); got != want {
		t.Fatalf("Summary = %q, want %q", got, want)
	}
	mu.Lock()
	clear(missing)
	mu.Unlock()
}
