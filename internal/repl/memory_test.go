package repl_test

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// residentBytes returns the resident memory of the server s (VmRSS of the process INFO names).
func residentBytes(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	pid := info(s, "process_id")
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatalf("reading the resident memory of process %q: %v", pid, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%s/status", pid)
	return 0
}

// replicaStates returns the state of each replica the primary's INFO replication lists.
func replicaStates(s *redistest.Server) []string {
	out, err := s.Do("INFO", "replication")
	if err != nil {
		return nil
	}
	var states []string
	for _, l := range strings.Split(out, "\r\n") {
		if i := strings.Index(l, ",state="); strings.HasPrefix(l, "slave") && i > 0 {
			st := l[i+7:]
			states = append(states, st[:strings.IndexByte(st, ',')])
		}
	}
	return states
}

// TestStalledFullSyncsShareOneCopy sends six PSYNCs to a bloomd holding a 64 MiB cuckoo filter,
// on connections that never read: the six full syncs share one snapshot, so the process grows
// by one copy of the filter, not six (before, each PSYNC copied every cuckoo filter: six stalled
// PSYNCs of a 256 MiB filter took a process from 170 MB to 1 GB). Bounded by 30 s.
func TestStalledFullSyncsShareOneCopy(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	redistest.Require(t)
	const filter = 64 << 20
	p := startBloomd(t, "appendonly no")
	if _, err := p.Do("CF.RESERVE", "big", strconv.Itoa(filter)); err != nil {
		t.Fatal(err)
	}
	p.Do("CF.ADD", "big", "x")
	before := residentBytes(t, p)
	for range 6 {
		nc, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write([]byte("PSYNC ? -1\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "six replicas being sent a snapshot", func() bool {
		s := replicaStates(p)
		return len(s) == 6 && !strings.Contains(strings.Join(s, " "), "wait_bgsave")
	})
	time.Sleep(500 * time.Millisecond) // let the writers fill the sockets
	grew := residentBytes(t, p) - before
	t.Logf("resident memory: %d MiB before, grew by %d MiB with six stalled full syncs of a %d MiB filter",
		before>>20, grew>>20, filter>>20)
	if grew > 2*filter {
		t.Errorf("six full syncs grew the process by %d MiB: more than one copy of the %d MiB filter", grew>>20, filter>>20)
	}
	if n := info(p, "connected_slaves"); n != "6" {
		t.Errorf("connected_slaves %s, want 6", n)
	}
}
