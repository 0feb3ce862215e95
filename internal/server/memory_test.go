package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/memlimit"
	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/redistest"
)

// refusal is the reply expected when the limit refuses asked bytes with used bytes charged.
func refusal(s *Server, what string, asked uint64, used int) string {
	limit, src := s.memoryLimit()
	return fmt.Sprintf("ERR Insufficient memory to %s filter: %d bytes (%s) asked, limit %d bytes (%s, %s) with %d in use",
		what, asked, humanBytes(int64(asked)), limit, humanBytes(limit), src, used)
}

// fakeCgroup writes a cgroup v2 tree whose memory.max is limit with used bytes in use, on a
// machine of 64 GiB with no rlimit, and returns a probe of it.
func fakeCgroup(t *testing.T, limit, used int64) *memlimit.Probe {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{
		"proc/self/limits":                            "Max data size             unlimited            unlimited            bytes\nMax address space         unlimited            unlimited            bytes\n",
		"proc/self/status":                            "VmSize:\t 1000000 kB\nVmData:\t 100000 kB\nVmRSS:\t 10000 kB\n",
		"proc/meminfo":                                "MemTotal:       67108864 kB\nMemAvailable:   60000000 kB\n",
		"proc/self/cgroup":                            "0::/bloomd.service\n",
		"proc/self/mountinfo":                         "30 22 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/bloomd.service/memory.max":     fmt.Sprintln(limit),
		"sys/fs/cgroup/bloomd.service/memory.current": fmt.Sprintln(used),
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &memlimit.Probe{Root: root, Getenv: func(string) string { return "" }}
}

// TestCgroupCeiling runs a server under a fake 160 MiB cgroup: the keyspace may hold what the
// cgroup leaves free less the margin (80 MiB), INFO says so and names the source, a filter past
// it is refused with the sizes, and maxmemory takes over when it is lower.
func TestCgroupCeiling(t *testing.T) {
	const limit, used = 160 << 20, 16 << 20
	s := startServer(t, func(c *Config) { c.MemoryProbe = fakeCgroup(t, limit, used) })
	c := dial(t, s.addr())
	want := int64(limit - used - max(64<<20, (limit-used)/8))
	info := string(c.do("INFO", "memory").Str)
	for _, f := range []string{
		fmt.Sprintf("memory_limit:%d\r\n", want),
		"memory_limit_source:cgroup_v2\r\n",
		fmt.Sprintf("total_system_memory:%d\r\n", int64(64)<<30),
		"maxmemory:0\r\n",
	} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO memory lacks %q:\n%s", f, info)
		}
	}
	// 120 MB of bits: within the machine's memory, past the cgroup's.
	v := c.do("BF.RESERVE", "big", "0.01", "100000000")
	if !strings.HasPrefix(string(v.Str), "ERR Insufficient memory to create filter: ") || !strings.Contains(string(v.Str), fmt.Sprintf("limit %d bytes (%s, cgroup_v2) with 99 in use", want, humanBytes(want))) {
		t.Fatalf("BF.RESERVE past the cgroup: %v", v)
	}
	// A filter that fits (60 MB), then a second that does not.
	if v := c.do("BF.RESERVE", "g", "0.01", "50000000"); string(v.Str) != "OK" {
		t.Fatalf("BF.RESERVE within the cgroup: %v", v)
	}
	if v := c.do("BF.RESERVE", "k", "0.01", "50000000"); !strings.HasPrefix(string(v.Str), "ERR Insufficient memory to create filter: ") {
		t.Fatalf("a second 60 MB filter: %v", v)
	}
	if v := c.do("BF.INFO", "g", "SIZE"); v.Elems[0].Int > want {
		t.Fatalf("filter of %d bytes admitted under a limit of %d", v.Elems[0].Int, want)
	}
	// maxmemory below the ceiling is the limit then.
	c.do("CONFIG", "SET", "maxmemory", "1000000000")
	if info := string(c.do("INFO", "memory").Str); !strings.Contains(info, "memory_limit_source:cgroup_v2\r\n") {
		t.Errorf("maxmemory above the ceiling became the limit:\n%s", info)
	}
	c.do("CONFIG", "SET", "maxmemory", "50mb")
	if info := string(c.do("INFO", "memory").Str); !strings.Contains(info, "memory_limit_source:maxmemory\r\n") || !strings.Contains(info, "memory_limit:52428800\r\n") {
		t.Errorf("maxmemory below the ceiling is not the limit:\n%s", info)
	}
}

// TestNoLimitKnown: with no file to read, the keyspace has no limit but maxmemory.
func TestNoLimitKnown(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MemoryProbe = &memlimit.Probe{Root: t.TempDir()} })
	c := dial(t, s.addr())
	info := string(c.do("INFO", "memory").Str)
	if !strings.Contains(info, "memory_limit_source:none\r\n") || !strings.Contains(info, "total_system_memory:0\r\n") {
		t.Fatalf("INFO memory:\n%s", info)
	}
	c.do("CONFIG", "SET", "maxmemory", "1mb")
	m, _, _, _ := bloom.RedisBloomSize(1000000, 0.01/2)
	if v := c.do("BF.RESERVE", "k", "0.01", "1000000"); string(v.Str) != refusal(s, "create", 32+64+m/8, keyOverhead+1) {
		t.Fatalf("past maxmemory: %v", v)
	}
}

// loadUnder loads dir into a new server whose ceiling is ceil bytes (a fake cgroup) and returns
// the load's error.
func loadUnder(t *testing.T, dir string, ceil int64) error {
	t.Helper()
	const used = 1 << 20
	cfg := DefaultConfig()
	cfg.Logger, cfg.Dir, cfg.Save, cfg.EventLoops = discardLogger(), dir, nil, testLoops
	cfg.MemoryProbe = fakeCgroup(t, used+64<<20+ceil, used) // the margin is 64 MiB here
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(context.Background()); s.closeData(false) }()
	if got, _ := s.memoryLimit(); got != ceil {
		t.Fatalf("ceiling %d, want %d", got, ceil)
	}
	if err := s.openStore(); err != nil {
		t.Fatal(err)
	}
	return s.loadData()
}

// TestLoadPastCeiling loads data files that do not fit under the ceiling: from the log (a
// filter's creation, then a filter's growth in BF.MADD) and from a snapshot. Each load fails
// with persist.ErrNoMemory naming the sizes, the files are left byte for byte, and the same
// files load once the ceiling allows.
func TestLoadPastCeiling(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, nil)
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "small", "0.01", "1000")                 // 1 KiB or so
	c.do("BF.RESERVE", "g", "0.01", "100", "EXPANSION", "2000") // grows to 200,000 items: 240 KB
	args := []string{"BF.MADD", "g"}
	for i := range 101 {
		args = append(args, fmt.Sprint(i))
	}
	c.do(args...)
	if v := c.do("BF.INFO", "g", "FILTERS"); v.Elems[0].Int != 2 {
		t.Fatalf("g did not grow: %v", v)
	}
	if v := c.do("BF.RESERVE", "big", "0.01", "1000000"); string(v.Str) != "OK" { // 1.4 MB
		t.Fatal(v)
	}
	stopDurable(t, s, false)

	for _, tt := range []struct {
		ceil int64
		want string
	}{
		{1 << 20, `"BF.RESERVE" "big"`}, // g grows, then big does not fit
		{100 << 10, `"BF.MADD" "g"`},    // g's growth does not fit
	} {
		before := redistest.FileDigests(t, dir)
		err := loadUnder(t, dir, tt.ceil)
		if !errors.Is(err, persist.ErrNoMemory) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "Insufficient memory to") || !strings.Contains(err.Error(), "cgroup_v2") {
			t.Fatalf("loading past a ceiling of %d: %v", tt.ceil, err)
		}
		if after := redistest.FileDigests(t, dir); !maps.Equal(before, after) {
			t.Fatalf("a failed load changed the files: %v", slices.Collect(maps.Keys(after)))
		}
	}
	if err := loadUnder(t, dir, 4<<20); err != nil {
		t.Fatalf("loading within the ceiling: %v", err)
	}

	// The same from a snapshot.
	s = startDurable(t, dir, nil)
	c = dial(t, s.addr())
	if v := c.do("SAVE"); string(v.Str) != "OK" {
		t.Fatal(v)
	}
	stopDurable(t, s, false)
	before := redistest.FileDigests(t, dir)
	err := loadUnder(t, dir, 1<<20)
	if !errors.Is(err, persist.ErrNoMemory) || !strings.Contains(err.Error(), `filter "big"`) || !strings.Contains(err.Error(), "dump.bdb") {
		t.Fatalf("loading a snapshot past the ceiling: %v", err)
	}
	if after := redistest.FileDigests(t, dir); !maps.Equal(before, after) {
		t.Fatal("a failed snapshot load changed the files")
	}
}

// TestAddressSpaceCeiling runs a server under a fake RLIMIT_AS of 4 GiB: the ceiling leaves
// an arena more for the runtime, and a large allocation is checked against the address space in
// use when it is made (the fake VmSize is raised under the running server), rounded up to
// whole arenas.
func TestAddressSpaceCeiling(t *testing.T) {
	root := t.TempDir()
	status := filepath.Join(root, "proc/self/status")
	write := func(name, content string) {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/self/limits", "Max data size             unlimited            unlimited            bytes\nMax address space         4294967296           unlimited            bytes\n")
	write("proc/self/status", "VmSize:\t 1048576 kB\nVmData:\t 100000 kB\nVmRSS:\t 10000 kB\n")
	write("proc/meminfo", "MemTotal:       67108864 kB\nMemAvailable:   60000000 kB\n")
	s := startServer(t, func(c *Config) {
		c.MemoryProbe = &memlimit.Probe{Root: root, Getenv: func(string) string { return "" }}
	})
	c := dial(t, s.addr())
	free := int64(3 << 30)
	want := free - free/8 - 64<<20
	if limit, src := s.memoryLimit(); limit != want || src != "rlimit_as" {
		t.Fatalf("ceiling %d %s, want %d rlimit_as", limit, src, want)
	}
	// 2 MB counts as a 64 MiB arena, plus one for alignment, plus 64 MiB: fits in 3 GiB.
	if v := c.do("BF.RESERVE", "a", "0.01", "1500000"); string(v.Str) != "OK" {
		t.Fatalf("2 MB under 3 GiB free: %v", v)
	}
	// Now only 150 MiB of address space is left: 2 MB no longer fits; small filters still do.
	if err := os.WriteFile(status, []byte(fmt.Sprintf("VmSize:\t %d kB\n", (4<<30-150<<20)/1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _, _, _ := bloom.RedisBloomSize(1500000, 0.01/2)
	want2 := fmt.Sprintf("ERR Insufficient memory to create filter: %d bytes (%s) asked, limit 4294967296 bytes (4.00G, rlimit_as address space) with %d in use",
		32+64+m/8, humanBytes(int64(32+64+m/8)), int64(4<<30-150<<20))
	if v := c.do("BF.RESERVE", "b", "0.01", "1500000"); string(v.Str) != want2 {
		t.Fatalf("2 MB with 150 MiB of address space left: %v, want %q", v, want2)
	}
	if v := c.do("BF.RESERVE", "c", "0.01", "1000"); string(v.Str) != "OK" {
		t.Fatalf("a small filter: %v", v)
	}
}
