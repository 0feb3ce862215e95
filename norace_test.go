//go:build !race

package bloom_test

const raceEnabled = false
