//go:build !linux

package server

// systemMemory returns 0: the machine's memory is not known here, and only maxmemory limits
// the keyspace.
func systemMemory() int64 { return 0 }
