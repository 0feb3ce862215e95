package redistest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestStandaloneRequiresPassword(t *testing.T) {
	s := Shared(t)
	if got, err := s.Do("PING"); err != nil || got != "PONG" {
		t.Fatalf("PING with password = %q, %v; want PONG", got, err)
	}
	anon := &Server{Addr: s.Addr}
	if _, err := anon.Do("PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without password: err = %v; want NOAUTH", err)
	}
}

func TestClusterCoversAllSlots(t *testing.T) {
	c := SharedCluster(t)
	if len(c.Addrs) != 3 {
		t.Fatalf("cluster has %d nodes, want 3", len(c.Addrs))
	}
	for _, s := range c.Servers {
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:3", "cluster_size:3"} {
			if !strings.Contains(info, want) {
				t.Errorf("%s: CLUSTER INFO lacks %q:\n%s", s.Addr, want, info)
			}
		}
	}
}

func TestKillAndClose(t *testing.T) {
	s := New(t, nil)
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("PING after Kill succeeded")
	}
	dir := s.Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("directory %s still exists after Close", dir)
	}
}

// TestStartProgram runs redis-server through the generic path other RESP servers (bloomd) use.
func TestStartProgram(t *testing.T) {
	Require(t)
	s, err := StartProgram("redis-server", "pw", func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--requirepass", "pw"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Do("PING"); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if _, err := StartProgram("/nonexistent/server", "", func(int, string) []string { return nil }); err == nil {
		t.Fatal("StartProgram of a missing binary succeeded")
	}
}
