//go:build cgo && !netgo

package memlimit

// CgoLinked reports whether this binary was built with cgo, so that its threads are made by
// the C library (runtime/cgo). In bloomd only the net package's C resolver brings cgo in; a
// build with CGO_ENABLED=0 (or the netgo tag) has none. Under cgo every thread reserves a stack
// of RLIMIT_STACK (8 MiB by default) and, once it frees C memory, glibc gives it a malloc arena
// of 64 MiB of address space: a limit on address space counts all of it, and a thread that
// cannot be made kills the process.
const CgoLinked = true
