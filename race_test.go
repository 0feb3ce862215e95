//go:build race

package bloom_test

// raceEnabled shrinks the statistical tests that are too slow under the race detector.
const raceEnabled = true
