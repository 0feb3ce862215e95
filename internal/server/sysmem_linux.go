package server

import (
	"sync"
	"syscall"
)

// systemMemory returns the machine's physical memory in bytes, or 0 if unknown.
var systemMemory = sync.OnceValue(func() int64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	return int64(info.Totalram) * int64(info.Unit)
})
