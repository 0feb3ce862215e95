// Package skipper is the package TestWhereTheLineGoes runs with go test: one test that skips
// for a missing program, one that passes.
package skipper

import (
	"testing"

	"github.com/bloomd/bloom/internal/skipped"
)

func TestMain(m *testing.M) { skipped.Main(m) }

func TestNeedsFrobnicator(t *testing.T) {
	skipped.Missing(t, "frobnicator", "frobnicator is not installed; skipping")
}

func TestPasses(t *testing.T) {}
