package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/memlimit"
	"github.com/bloomd/bloom/internal/redistest"
)

// fakeRlimitAS writes a tree where RLIMIT_AS is limit and the process's address space vmSize,
// on a machine of 64 GiB, and returns a probe of it.
func fakeRlimitAS(t *testing.T, limit, vmSize uint64) *memlimit.Probe {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{
		"proc/self/limits": fmt.Sprintf("Max data size             unlimited            unlimited            bytes\nMax address space         %d %d bytes\n", limit, limit),
		"proc/self/status": fmt.Sprintf("VmSize:\t %d kB\nVmData:\t 100000 kB\nVmRSS:\t 10000 kB\n", vmSize/1024),
		"proc/meminfo":     "MemTotal:       67108864 kB\nMemAvailable:   60000000 kB\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &memlimit.Probe{Root: root, Getenv: func(string) string { return "" }}
}

// TestAddressSpaceRoom: under an address-space limit that leaves no room for filters bloomd
// does not start, saying why in one line; one that leaves less than half the limit is warned
// about; one that leaves more is not.
func TestAddressSpaceRoom(t *testing.T) {
	for _, tc := range []struct {
		limit, vmSize uint64
		fail, warn    bool
	}{
		{1400 << 20, 1300 << 20, true, false},
		{1700 << 20, 1300 << 20, false, true},
		{8 << 30, 1300 << 20, false, false},
	} {
		var logs redistest.Buffer
		cfg := DefaultConfig()
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.MemoryProbe = fakeRlimitAS(t, tc.limit, tc.vmSize)
		cfg.EventLoops = -1
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = s.checkRoom()
		s.Shutdown(t.Context())
		if tc.fail != (err != nil) {
			t.Errorf("limit %d, %d in use: %v", tc.limit, tc.vmSize, err)
		}
		if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "address-space limit (RLIMIT_AS: ulimit -v, prlimit --as) of 1468006400 bytes leaves no memory for filters") ||
			!strings.Contains(err.Error(), "cgroup")) {
			t.Errorf("the refusal: %q", err)
		}
		if warned := strings.Contains(logs.String(), "leaves little memory for filters"); warned != tc.warn {
			t.Errorf("limit %d, %d in use: warned %v\n%s", tc.limit, tc.vmSize, warned, logs.String())
		}
		if cgo := strings.Contains(logs.String(), "built with cgo"); cgo != memlimit.CgoLinked {
			t.Errorf("the cgo warning is %v in a build whose CgoLinked is %v", cgo, memlimit.CgoLinked)
		}
	}
}
