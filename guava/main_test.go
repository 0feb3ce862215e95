package guava

import (
	"testing"

	"github.com/bloomd/bloom/internal/skipped"
)

func TestMain(m *testing.M) { skipped.Main(m) }
