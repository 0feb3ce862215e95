package cli

import (
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

// TestMain stops the redis-servers the tests share and prints which tests skipped for a
// missing program (internal/skipped).
func TestMain(m *testing.M) { redistest.Main(m) }
