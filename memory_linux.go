package bloom

import "syscall"

// totalMemory returns the machine's physical memory in bytes, or 0 if it cannot be read.
func totalMemory() uint64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	return uint64(info.Totalram) * uint64(info.Unit)
}
