//go:build !linux

package procmem

import "errors"

// RSS returns the resident set size of this process in bytes; it is known on Linux only.
func RSS() (int64, error) { return 0, errors.New("procmem: resident size is known on Linux only") }
