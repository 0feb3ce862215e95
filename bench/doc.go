// Package bench compares this module's filters with other Go Bloom filter libraries, in the same
// process and the same run, so that the ratios do not depend on the machine's mood. It is a
// separate module so that its peers never enter the main go.mod.
//
// The benchmarks are in bench_test.go; bench/run.sh runs them (and the servers' benchmarks
// elsewhere in the repository) section by section, keeps the raw output in bench/results/ and
// rewrites the tables of BENCHMARKS.md at the repository root. go test without -bench runs only
// quick checks of the adapters.
package bench
