// Package conformance is the one test harness every filter type of this module runs: no false
// negatives, Add's "definitely new" answer, a measured false-positive rate within an honest bound,
// union and intersection laws, encoding round trips and corruption detection, and concurrent use
// (meaningful under -race). A new filter type gets all of it by describing itself in an Impl.
package conformance
