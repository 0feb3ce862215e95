//go:build !cgo || netgo

package memlimit

// CgoLinked reports whether this binary was built with cgo (see cgo.go): it was not, and its
// threads' stacks come from the Go heap.
const CgoLinked = false
