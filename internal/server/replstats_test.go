package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// TestReplicaCountsStreamCommands checks that a replica counts the commands of its primary's
// stream as Redis's replicas do: in total_commands_processed, commandstats and latencystats
// alike. (Before, they reached latencystats only, so the page showed percentiles for commands
// that commandstats said were never called.) The same steps run against a real redis-server
// pair when one is installed.
func TestReplicaCountsStreamCommands(t *testing.T) {
	t.Run("bloomd", func(t *testing.T) {
		ps, p := startReplServer(t)
		_, r := startReplServer(t)
		if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
			t.Fatalf("REPLICAOF: %v", v)
		}
		waitSynced(t, p, r)
		r.do("CONFIG", "RESETSTAT")
		for i := range 50 {
			p.do("SET", fmt.Sprint("k", i), "v")
		}
		waitSynced(t, p, r)
		// Give the replica's publishing of quiet connections time to run, had it anything to show.
		time.Sleep(400 * time.Millisecond)
		checkReplicaStats(t, func(section string) string { return r.do("INFO", section).Text() })
	})
	t.Run("redis", func(t *testing.T) {
		if err := redistest.Available(); err != nil {
			redistest.Require(t)
			t.Skip(err)
		}
		p := redistest.New(t, nil)
		r := redistest.New(t, nil)
		_, port, _ := strings.Cut(p.Addr, ":")
		if _, err := r.Do("REPLICAOF", "127.0.0.1", port); err != nil {
			t.Fatal(err)
		}
		info := func(s *redistest.Server, section string) string {
			v, err := s.Do("INFO", section)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		field := func(s *redistest.Server, name string) string {
			for _, l := range strings.Split(info(s, "replication"), "\r\n") {
				if k, v, ok := strings.Cut(l, ":"); ok && k == name {
					return v
				}
			}
			return ""
		}
		synced := func() bool {
			return field(r, "master_link_status") == "up" && field(r, "slave_repl_offset") == field(p, "master_repl_offset")
		}
		deadline := time.Now().Add(10 * time.Second)
		for !synced() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		r.Do("CONFIG", "RESETSTAT")
		for i := range 50 {
			if _, err := p.Do("SET", fmt.Sprint("k", i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		for !synced() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !synced() {
			t.Fatal("the Redis replica did not catch up")
		}
		checkReplicaStats(t, func(section string) string { return info(r, section) })
	})
}

func checkReplicaStats(t *testing.T, info func(section string) string) {
	t.Helper()
	if s := info("commandstats"); !strings.Contains(s, "cmdstat_set:calls=50,") {
		t.Errorf("the replica's commandstats do not count the primary's 50 SETs:\n%s", s)
	}
	if s := info("latencystats"); !strings.Contains(s, "latency_percentiles_usec_set:") {
		t.Errorf("the replica's latencystats do not time the primary's SETs:\n%s", s)
	}
	for _, l := range strings.Split(info("stats"), "\r\n") {
		if v, ok := strings.CutPrefix(l, "total_commands_processed:"); ok {
			if n, err := strconv.Atoi(v); err != nil || n < 50 {
				t.Errorf("the replica's total_commands_processed does not count the stream: %s", v)
			}
		}
	}
}
