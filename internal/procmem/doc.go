// Package procmem reports the memory this process holds as the operating system counts it, for
// INFO memory's used_memory_rss: the resident set, not what the Go runtime has mapped (which
// counts address space reserved and never touched, and memory returned to the system).
package procmem
