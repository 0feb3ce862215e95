package acl

import "unsafe"

// stringBytes returns s's bytes without copying, for the matcher, which only reads them: the
// check must not allocate.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
