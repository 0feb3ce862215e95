package server

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"github.com/bloomd/bloom/internal/memlimit"
)

// This file is the server's side of the memory ceiling: what the keyspace may hold, found once
// at start from the limits the process runs under (internal/memlimit), and the refusal a
// command gets when an allocation would pass it.

// noLimit is the keyspace limit when no limit at all is known.
const noLimit = math.MaxInt64 / 2

// bigAlloc is the size from which a reservation first collects garbage if keys were removed
// since the last collection: under RLIMIT_AS or a cgroup limit the freed filters' memory must
// be reused, not added to, and Go reuses it only once a collection has found it free.
const bigAlloc = 64 << 20

// arenaBytes is the unit in which the Go runtime maps heap on 64-bit Linux (heapArenaBytes).
// Under a limit on address space (RLIMIT_AS, RLIMIT_DATA) what counts is what is mapped, not
// what is touched: a large allocation maps whole arenas, and while it aligns them the runtime
// briefly holds one arena more.
const arenaBytes = 64 << 20

// A ceiling is the most the keyspace may hold whatever maxmemory says: the free memory of the
// tightest limit at start, less a margin for what the process uses besides the keyspace
// (connection buffers, the log's buffers, the Go runtime).
type ceiling struct {
	bytes  int64
	bound  memlimit.Bound // the tightest limit; Source "" if none was found
	report memlimit.Report
	// mapped is set when the limit counts address space: an allocation then costs its size
	// rounded up to whole arenas, and is checked against the address space in use now.
	mapped bool
	probe  memlimit.Probe
}

// processMargin is the part of the free memory at start that the keyspace leaves to the rest
// of the process: an eighth, and at least 64 MiB; under a limit on address space one arena
// more, which the runtime maps briefly while it grows the heap.
func processMargin(free uint64, mapped bool) uint64 {
	m := max(64<<20, free/8)
	if mapped {
		m += arenaBytes
	}
	return m
}

func newCeiling(p memlimit.Probe) ceiling {
	r := p.Detect()
	c := ceiling{bytes: noLimit, report: r, probe: p}
	b, ok := r.Tightest()
	if !ok {
		return c
	}
	c.bound = b
	c.mapped = b.Source == memlimit.RlimitAS || b.Source == memlimit.RlimitData
	free := b.Free()
	if m := processMargin(free, c.mapped); free > m {
		c.bytes = int64(min(free-m, noLimit))
	} else {
		c.bytes = 0
	}
	return c
}

// source names what sets the ceiling, as INFO and the errors print it.
func (c *ceiling) source() string {
	if c.bound.Source == "" {
		return "none"
	}
	return string(c.bound.Source)
}

// memoryLimit returns the most bytes the keyspace may hold, and what sets that: maxmemory when
// set and lower, otherwise the ceiling. While the data files load, maxmemory does not apply
// (as in Redis) but the ceiling does.
func (s *Server) memoryLimit() (int64, string) {
	limit, src := s.ceiling.bytes, s.ceiling.source()
	if m := s.maxmemory.Load(); m > 0 && m < limit && !s.ks.loading.Load() {
		limit, src = m, "maxmemory"
	}
	return limit, src
}

// memLimitBytes returns memoryLimit's bytes.
func (s *Server) memLimitBytes() int64 {
	limit, _ := s.memoryLimit()
	return limit
}

// A memRefusal is the memory limit refusing an allocation. It matches errReserve.
type memRefusal struct {
	asked, used, limit int64
	source             string
}

func (e *memRefusal) Error() string {
	return fmt.Sprintf("%d bytes (%s) asked, limit %d bytes (%s, %s) with %d in use",
		e.asked, humanBytes(e.asked), e.limit, humanBytes(e.limit), e.source, e.used)
}

func (e *memRefusal) Is(target error) bool { return target == errReserve }

// reply returns the error reply for a refused creation ("create") or growth ("grow"), in
// RedisBloom's words, followed by the sizes.
func (e *memRefusal) reply(what string) string {
	return "ERR Insufficient memory to " + what + " filter: " + e.Error()
}

// reserveMem charges n bytes to the keyspace, or refuses them with a *memRefusal when they would
// pass the limit. Before a large reservation it collects garbage if keys were removed since the
// last collection, so that the memory they held is reused rather than added to the process.
func (s *Server) reserveMem(n int64) error {
	limit, src := s.memoryLimit()
	if n >= bigAlloc && s.ks.freed.Swap(0) > 0 {
		runtime.GC()
	}
	mapped := s.ceiling.mapped && limit == s.ceiling.bytes
	if r := s.ks.replUsed.Load(); r > 0 && limit > s.ceiling.bytes-r {
		limit, src = s.ceiling.bytes-r, s.ceiling.source()+", less replication's "+humanBytes(r)
	}
	refuse := n < 0 || n > limit
	if !refuse && n >= 1<<20 && mapped {
		if err := s.checkMapped(n, limit); err != nil {
			s.stats.oom.Add(1)
			return err
		}
	}
	if refuse || !s.ks.reserve(n, limit) {
		s.stats.oom.Add(1)
		if n < 0 {
			n = math.MaxInt64
		}
		return &memRefusal{asked: n, used: s.ks.used.Load(), limit: limit, source: src}
	}
	return nil
}

// chargeRepl charges n bytes that replication holds (the backlog's chunks, the copies of
// cuckoo filters a full sync sends) to the memory ceiling, or refuses them with a *memRefusal
// when they do not fit beside the keyspace; a negative n gives bytes back. maxmemory does not
// apply: it limits the keyspace, and the keyspace is charged less room under the ceiling while
// replication holds memory (reserveMem).
func (s *Server) chargeRepl(n int64) error {
	if n <= 0 {
		s.ks.replUsed.Add(n)
		return nil
	}
	limit := s.ceiling.bytes
	if n >= 1<<20 && s.ceiling.mapped {
		if err := s.checkMapped(n, limit-s.ks.replUsed.Load()); err != nil {
			return err
		}
	}
	for {
		cur, used := s.ks.replUsed.Load(), s.ks.used.Load()
		if n > limit-used-cur {
			return &memRefusal{asked: n, used: used + cur, limit: limit, source: s.ceiling.source()}
		}
		if s.ks.replUsed.CompareAndSwap(cur, cur+n) {
			return nil
		}
	}
}

// checkMapped checks a large allocation under a limit on address space. Such an allocation maps
// whole fresh arenas unless the heap has a free run of that size, which it cannot be relied on
// to have: memory of removed filters stays mapped, and small objects allocated since may split
// it. So the allocation must fit, rounded up to arenas and with one arena more for the
// runtime's alignment, in the address space left now (read again from /proc/self/status), less
// 64 MiB for the rest of the process; and the keyspace's own charge must stay under limit.
func (s *Server) checkMapped(n, limit int64) error {
	cost := (n + arenaBytes - 1) &^ (arenaBytes - 1) // n <= limit < 2^62: no overflow
	if cost > limit-s.ks.used.Load() {
		return &memRefusal{asked: n, used: s.ks.used.Load(), limit: limit, source: s.ceiling.source()}
	}
	src := s.ceiling.bound.Source
	b, ok := s.ceiling.probe.Refresh(s.ceiling.bound)
	if !ok {
		return nil
	}
	if uint64(cost)+arenaBytes+64<<20 > b.Free() {
		return &memRefusal{asked: n, used: int64(min(b.Used, math.MaxInt64)), limit: int64(min(b.Limit, math.MaxInt64)), source: string(src) + " address space"}
	}
	return nil
}

// logMemoryLimit logs, in one line, the limit the keyspace plans against and where it comes
// from, and warns about limit files that could not be read.
func (s *Server) logMemoryLimit() {
	c := &s.ceiling
	for _, err := range c.report.Problems {
		s.log.Warn("cannot read a memory limit; it is ignored", "err", err)
	}
	attrs := []any{"source", c.source(), "keyspace_limit", c.bytes}
	if c.bound.Source != "" {
		attrs = append(attrs, "limit", c.bound.Limit, "in_use", c.bound.Used, "from", c.bound.Where)
	}
	if m := s.maxmemory.Load(); m > 0 {
		attrs = append(attrs, "maxmemory", m)
	}
	s.log.Info("memory limit", attrs...)
}

// minFilterRoom is the least the keyspace must be able to hold, under a limit on address
// space or data, for bloomd to start: with less no filter of use fits, and the process is at
// the point where the Go runtime cannot map a new thread's stack or grow its heap, which kills it.
const minFilterRoom = 1 << 20

// checkRoom looks at the room a limit on address space or data (RLIMIT_AS, RLIMIT_DATA) leaves
// the keyspace. Such limits count what is reserved, not what is used: the Go runtime reserves
// about 1.2 GiB of address space at start on 64-bit Linux (indexes of its page allocator) and
// never touches most of it. With less than minFilterRoom left checkRoom returns an error of
// one line, and bloomd does not start; with less than half the limit it logs a warning. It
// warns too when this binary uses cgo under such a limit (see memlimit.CgoLinked).
func (s *Server) checkRoom() error {
	c := &s.ceiling
	if !c.mapped {
		return nil
	}
	b := c.bound
	what := b.Source.Describe()
	advice := "raise the limit, or limit memory with a cgroup instead (systemd MemoryMax=, docker --memory), which counts memory in use rather than address space reserved"
	if memlimit.CgoLinked {
		s.log.Warn("this bloomd was built with cgo: every thread reserves address space (its C stack, and a 64 MiB glibc malloc arena) that "+what+" counts, and a thread that cannot be made kills the process; build it with CGO_ENABLED=0",
			"limit", b.Limit, "in_use", b.Used)
	}
	if c.bytes < minFilterRoom {
		return fmt.Errorf("server: the %s of %d bytes leaves no memory for filters: bloomd has %d bytes of it in use at start, and keeps %d for itself; %s",
			what, b.Limit, b.Used, processMargin(b.Free(), true), advice)
	}
	if uint64(c.bytes) < b.Limit/2 {
		s.log.Warn("the "+what+" leaves little memory for filters: bloomd has much of it in use at start, most of it address space the Go runtime reserves and never touches; "+advice,
			"limit", b.Limit, "in_use", b.Used, "keyspace_limit", c.bytes)
	}
	return nil
}

// limitRuntime sets the Go runtime's soft memory limit (as GOMEMLIMIT would) under the tightest
// limit the process runs under, unless GOMEMLIMIT is set: the collector then works harder as
// the process nears the limit instead of letting garbage take the process past it. It changes
// the whole process, so only Run calls it.
func (s *Server) limitRuntime() {
	b := s.ceiling.bound
	if b.Source == "" || b.Source == memlimit.GoMemLimit || b.Source == memlimit.Machine {
		return
	}
	if _, set := s.ceiling.report.Find(memlimit.GoMemLimit); set {
		return
	}
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	var goUsed uint64
	if sample[0].Value.Kind() == metrics.KindUint64 && sample[1].Value.Kind() == metrics.KindUint64 {
		goUsed = sample[0].Value.Uint64() - sample[1].Value.Uint64()
	}
	free, margin := b.Free(), processMargin(b.Free(), s.ceiling.mapped)
	limit := goUsed + free - margin/2
	if limit > math.MaxInt64 || free <= margin/2 {
		return
	}
	debug.SetMemoryLimit(int64(limit))
	s.log.Debug("Go runtime memory limit set", slog.Uint64("bytes", limit), "source", string(b.Source))
}

// systemMemory returns the machine's memory in bytes, or 0 if unknown.
func (s *Server) systemMemory() int64 {
	if b, ok := s.ceiling.report.Find(memlimit.Machine); ok {
		return int64(min(b.Limit, math.MaxInt64))
	}
	return 0
}
