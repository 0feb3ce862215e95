package server

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// cfDigest hashes a cuckoo filter's whole CF.SCANDUMP.
func cfDigest(t testing.TB, c *rawClient, key string) string {
	t.Helper()
	h := sha256.New()
	for pos := int64(0); ; {
		v := c.do("CF.SCANDUMP", key, strconv.FormatInt(pos, 10))
		if len(v.Elems) != 2 {
			t.Fatalf("CF.SCANDUMP: %v", v)
		}
		pos = v.Elems[0].Int
		if pos == 0 {
			return fmt.Sprintf("%x", h.Sum(nil))
		}
		h.Write(v.Elems[1].Str)
	}
}

// stalledPSYNC asks addr for a full sync as a bloomd replica (bloomd's snapshot format, plain
// pieces) and never reads the snapshot: its writer blocks, and the snapshot stays alive (for
// repl-timeout) once the socket buffers are full.
func stalledPSYNC(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write([]byte("REPLCONF capa bloomd\r\nPSYNC ? -1\r\n")); err != nil {
		t.Fatal(err)
	}
	return nc
}

// replicaStates returns the states INFO replication lists for the attached replicas.
func replicaStates(t testing.TB, c *rawClient) []string {
	var states []string
	for _, l := range strings.Split(c.do("INFO", "replication").Text(), "\r\n") {
		if strings.HasPrefix(l, "slave") && strings.Contains(l, ",state=") {
			st := l[strings.Index(l, ",state=")+7:]
			states = append(states, st[:strings.IndexByte(st, ',')])
		}
	}
	return states
}

// TestFullSyncSharesSnapshot has a replica ask for a full sync while the snapshot taken for
// another (a connection that sent PSYNC and reads nothing) is still being sent: the late one
// attaches to that snapshot, taking the stream written since its instant from the backlog, and
// ends with the primary's data bit for bit. With a backlog too small to hold that stream, a
// late replica waits (wait_bgsave, kept alive by newlines) and gets the next snapshot once the
// first is released.
func TestFullSyncSharesSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backlog string
		attach  bool
	}{{"attach", "16mb", true}, {"wait-for-next", "16kb", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var log redistest.Buffer
			dir := t.TempDir()
			ps := startServer(t, func(c *Config) {
				c.Dir = dir
				c.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			p := dial(t, ps.addr())
			p.do("CONFIG", "SET", "repl-backlog-size", tc.backlog)
			// 32 MiB of slots: far more than the socket buffers take from a reader that stalls.
			if v := p.do("CF.RESERVE", "cf", "33554432"); v.Text() != "OK" {
				t.Fatalf("CF.RESERVE: %v", v)
			}
			for i := range 200 {
				p.do("CF.ADD", "cf", fmt.Sprint("before", i))
				p.do("BF.ADD", "bf", fmt.Sprint("before", i))
			}
			stalled := stalledPSYNC(t, ps.addr())
			waitFor(t, func() bool { s := replicaStates(t, p); return len(s) == 1 && s[0] == "send_bulk" })
			for i := range 300 { // about 20 KB of stream since the snapshot's instant
				p.do("CF.ADD", "cf", fmt.Sprint("during", i))
				p.do("BF.ADD", "bf", fmt.Sprint("during-item-with-a-longer-name", i))
			}

			var rlog redistest.Buffer
			rs := startServer(t, func(c *Config) {
				c.Dir = t.TempDir()
				c.Logger = slog.New(slog.NewTextHandler(&rlog, nil))
			})
			r := dial(t, rs.addr())
			// A short repl-timeout: the primary's newlines must keep a waiting replica's link.
			r.do("CONFIG", "SET", "repl-timeout", "2")
			r.do("REPLICAOF", "127.0.0.1", portOf(ps))
			if tc.attach {
				waitSynced(t, p, r)
				if !strings.Contains(log.String(), "a replica attaches to the snapshot being sent to others") {
					t.Error("the late replica did not attach to the snapshot being sent")
				}
			} else {
				waitFor(t, func() bool { return strings.Contains(strings.Join(replicaStates(t, p), " "), "wait_bgsave") })
				time.Sleep(4500 * time.Millisecond) // twice the replica's repl-timeout
				if got := infoField(t, r, "replication", "master_link_status"); got != "down" {
					t.Fatalf("a replica waiting for the next snapshot: link %s", got)
				}
				if strings.Contains(rlog.String(), "retrying") {
					t.Fatalf("the waiting replica gave up its link:\n%s", rlog.String())
				}
				if s := replicaStates(t, p); !strings.Contains(strings.Join(s, " "), "wait_bgsave") {
					t.Fatalf("the waiting replica left the primary's list: %v", s)
				}
				stalled.Close() // the first snapshot is released; the next is taken
				waitSynced(t, p, r)
				if strings.Contains(log.String(), "a replica attaches") {
					t.Error("a replica attached although the backlog no longer held the snapshot's stream")
				}
			}
			for _, k := range []string{"cf"} {
				if a, b := cfDigest(t, p, k), cfDigest(t, r, k); a != b {
					t.Errorf("cuckoo filter %s differs on the replica", k)
				}
			}
			if a, b := scandump(t, p, "bf"), scandump(t, r, "bf"); string(a) != string(b) {
				t.Error("Bloom filter differs on the replica")
			}
			if got := infoField(t, p, "stats", "sync_full"); got != "2" {
				t.Errorf("sync_full %s, want 2", got)
			}
		})
	}
}

// TestFullSyncChargedToCeiling runs a primary under a fake cgroup whose ceiling leaves no room
// for a copy of its 64 MiB cuckoo filter: PSYNC is refused with an error reply (Redis's words
// for a BGSAVE that failed, and why), the log says why, and the server goes on. A filter whose
// copy fits is sent, and once its sync is done the copy's charge is given back.
func TestFullSyncChargedToCeiling(t *testing.T) {
	const used, ceil = 1 << 20, 96 << 20
	var log redistest.Buffer
	s := startServer(t, func(c *Config) {
		c.Dir = t.TempDir()
		c.MemoryProbe = fakeCgroup(t, used+64<<20+ceil, used) // the margin is 64 MiB here
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	c := dial(t, s.addr())
	if v := c.do("CF.RESERVE", "big", "67108864"); v.Text() != "OK" {
		t.Fatalf("CF.RESERVE: %v", v)
	}
	c.do("CF.ADD", "big", "x")
	psync := func() string {
		nc, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write([]byte("REPLCONF capa bloomd\r\nPSYNC ? -1\r\n"))
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(nc)
		if line, _ := br.ReadString('\n'); line != "+OK\r\n" {
			t.Fatalf("REPLCONF capa bloomd: %q", line)
		}
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the answer to PSYNC: %v", err)
			}
			if line = strings.TrimSpace(line); line != "" {
				if strings.HasPrefix(line, "+FULLRESYNC") {
					br.ReadString('\n') // the snapshot's length; the rest is dropped with the link
				}
				return line
			}
		}
	}
	got := psync()
	if !strings.HasPrefix(got, "-ERR BGSAVE failed, replication can't continue: ") || !strings.Contains(got, "cuckoo") {
		t.Fatalf("PSYNC with no room for the copy: %q", got)
	}
	if !strings.Contains(log.String(), "full sync refused") {
		t.Errorf("the log does not say why the full sync was refused:\n%s", log.String())
	}
	if v := c.do("CF.EXISTS", "big", "x"); v.Int != 1 {
		t.Fatalf("after the refusal: CF.EXISTS %v", v)
	}
	if n := s.ks.replUsed.Load(); n > 4*chunkBytes {
		t.Errorf("a refused snapshot left %d bytes charged", n)
	}

	c.do("DEL", "big")
	c.do("CF.RESERVE", "small", "16777216")
	if got := psync(); !strings.HasPrefix(got, "+FULLRESYNC ") {
		t.Fatalf("PSYNC with room for the copy: %q", got)
	}
	waitFor(t, func() bool { return s.ks.replUsed.Load() <= 4*chunkBytes })
}

// chunkBytes is the unit of the backlog's charges (internal/repl's chunkSize).
const chunkBytes = 16 << 10

// TestSnapshotChargedToCeiling: a snapshot of the data files charges its copies of the cuckoo
// filters to the memory ceiling, as a full sync does, until it is written: SAVE with no room for
// them fails with the sizes, leaves the files as they were, and charges nothing afterwards; with
// room it saves, and gives the memory back.
func TestSnapshotChargedToCeiling(t *testing.T) {
	const used, ceil = 1 << 20, 96 << 20
	dir := t.TempDir()
	s := startDurable(t, dir, func(c *Config) {
		c.AppendOnly = true
		c.MemoryProbe = fakeCgroup(t, used+64<<20+ceil, used) // the margin is 64 MiB here
	})
	c := dial(t, s.addr())
	if v := c.do("CF.RESERVE", "big", "67108864"); v.Text() != "OK" {
		t.Fatalf("CF.RESERVE: %v", v)
	}
	c.do("CF.ADD", "big", "x")
	before := redistest.FileDigests(t, dir)
	base := s.ks.replUsed.Load()
	if v := c.do("SAVE"); !strings.HasPrefix(v.Text(), "ERR ") || !strings.Contains(v.Text(), "cuckoo") || !strings.Contains(v.Text(), "bytes") {
		t.Fatalf("SAVE with no room for the copy: %v", v)
	}
	if after := redistest.FileDigests(t, dir); !maps.Equal(before, after) {
		t.Errorf("a refused snapshot changed the data files:\n%v\n%v", before, after)
	}
	if n := s.ks.replUsed.Load(); n != base {
		t.Errorf("a refused snapshot left %d bytes charged (was %d)", n, base)
	}
	if v := c.do("CF.ADD", "big", "y"); v.Int != 1 {
		t.Fatalf("after the refusal: CF.ADD %v", v)
	}
	c.do("DEL", "big")
	if v := c.do("CF.RESERVE", "small", "1048576"); v.Text() != "OK" {
		t.Fatalf("CF.RESERVE: %v", v)
	}
	if v := c.do("SAVE"); v.Text() != "OK" {
		t.Fatalf("SAVE with room: %v", v)
	}
	if n := s.ks.replUsed.Load(); n != base {
		t.Errorf("a snapshot left %d bytes charged (was %d)", n, base)
	}
}
