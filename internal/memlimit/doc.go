// Package memlimit finds how much memory this process may really use: the limits it runs under,
// not the machine's RAM alone.
//
// Go aborts the whole process when an allocation fails ("fatal error: out of memory"), and the
// kernel kills a process that passes its cgroup's limit. A server that sizes allocations from
// its clients' arguments must therefore refuse, before allocating, anything that would not fit
// under the tightest of:
//
//   - RLIMIT_AS, the address space ("ulimit -v", prlimit --as), against VmSize;
//   - RLIMIT_DATA, the data segment ("ulimit -d"), against VmData;
//   - the memory cgroup: memory.max (cgroup v2) or memory.limit_in_bytes (v1) of the process's
//     cgroup and of every cgroup above it, against the cgroup's working set (its usage less
//     inactive file cache, as container tools count it);
//   - GOMEMLIMIT, the Go runtime's soft limit, against the resident set (VmRSS);
//   - the machine's memory (MemTotal), against what the machine uses (MemTotal - MemAvailable).
//
// Probe.Detect reads them all from the files the kernel exposes (/proc/self/limits,
// /proc/self/status, /proc/self/cgroup, /proc/self/mountinfo, /proc/meminfo and the cgroup
// files), under a root directory that tests point at a fake tree. The cgroup is found as the Go
// runtime and container tools find it: the process's path in /proc/self/cgroup, joined to the
// mount point that /proc/self/mountinfo gives for that hierarchy, less the mount's own root
// (inside a container the mount's root is the container's cgroup).
//
// It is hand-written rather than taken from a cgroup library because it must also read rlimits,
// report what each limit already has in use, and read everything below an injectable root; the
// files involved are few and stable kernel interfaces.
//
// On systems without these files Detect finds no limit and reports none.
//
// CgoLinked says whether this binary's threads come from the C library, whose stacks and
// per-thread malloc arenas take address space that RLIMIT_AS counts; bloomd is built without
// cgo (CGO_ENABLED=0), and says so at start when it was not.
package memlimit
