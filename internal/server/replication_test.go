package server

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/resp"
)

// infoField returns one field of an INFO reply.
func infoField(t testing.TB, c *rawClient, section, name string) string {
	t.Helper()
	v := c.do("INFO", section)
	for _, l := range strings.Split(v.Text(), "\r\n") {
		if k, val, ok := strings.Cut(l, ":"); ok && k == name {
			return val
		}
	}
	return ""
}

func startReplServer(t testing.TB) (*Server, *rawClient) {
	t.Helper()
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	return s, dial(t, s.addr())
}

func portOf(s *Server) string {
	_, p, _ := net.SplitHostPort(s.addr())
	return p
}

// scandump returns a filter's whole BF.SCANDUMP, chunk after chunk.
func scandump(t testing.TB, c *rawClient, key string) []byte {
	t.Helper()
	var out []byte
	for it := int64(0); ; {
		v := c.do("BF.SCANDUMP", key, strconv.FormatInt(it, 10))
		if len(v.Elems) != 2 {
			t.Fatalf("BF.SCANDUMP: %v", v)
		}
		it = v.Elems[0].Int
		if it == 0 {
			return out
		}
		out = append(out, v.Elems[1].Str...)
	}
}

func waitSynced(t testing.TB, primary, replica *rawClient) {
	t.Helper()
	waitFor(t, func() bool {
		return infoField(t, replica, "replication", "master_link_status") == "up" &&
			infoField(t, replica, "replication", "slave_repl_offset") == infoField(t, primary, "replication", "master_repl_offset")
	})
}

// TestReplication follows a primary with a replica: full sync, the stream, WAIT, READONLY, ROLE
// and INFO; a cut link continues with a partial sync; a promotion keeps the history, so the old
// primary, made a replica of the promoted one, continues without a full sync.
func TestReplication(t *testing.T) { forEachIOMode(t, testReplication) }

func testReplication(t *testing.T) {
	ps, p := startReplServer(t)
	rs, r := startReplServer(t)
	for i := range 100 {
		p.do("BF.ADD", "f", fmt.Sprint("before", i))
	}
	p.do("SET", "s", "v")
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatalf("REPLICAOF: %v", v)
	}
	// While the replica loads the primary's snapshot, REPLICAOF gets -LOADING, as in Redis
	// (the command is not allowed during loading): ask again until the load is over.
	var again resp.Value
	waitFor(t, func() bool {
		again = r.do("REPLICAOF", "127.0.0.1", portOf(ps))
		return !strings.HasPrefix(again.Text(), "LOADING")
	})
	if again.Text() != "OK Already connected to specified master" {
		t.Errorf("REPLICAOF again: %v", again)
	}
	waitSynced(t, p, r)
	if v := r.do("BF.EXISTS", "f", "before7"); v.Int != 1 {
		t.Errorf("replica after full sync: BF.EXISTS = %v", v)
	}
	if v := r.do("GET", "s"); v.Text() != "v" {
		t.Errorf("replica after full sync: GET = %v", v)
	}
	for i := range 100 {
		p.do("BF.MADD", "f", fmt.Sprint("after", i), fmt.Sprint("other", i))
	}
	if v := p.do("WAIT", "1", "5000"); v.Int != 1 {
		t.Fatalf("WAIT 1 5000 = %v", v)
	}
	if v := r.do("BF.EXISTS", "f", "after99"); v.Int != 1 {
		t.Errorf("replica after WAIT: BF.EXISTS = %v", v)
	}
	if v := r.do("BF.ADD", "f", "x"); v.Text() != "READONLY You can't write against a read only replica." {
		t.Errorf("write on the replica: %v", v)
	}
	if v := r.do("WAIT", "1", "0"); !v.IsError() {
		t.Errorf("WAIT on a replica: %v", v)
	}
	if v := r.do("ROLE"); len(v.Elems) != 5 || v.Elems[0].Text() != "slave" || v.Elems[3].Text() != "connected" {
		t.Errorf("replica's ROLE: %v", v)
	}
	if v := p.do("ROLE"); len(v.Elems) != 3 || v.Elems[0].Text() != "master" || len(v.Elems[2].Elems) != 1 {
		t.Errorf("primary's ROLE: %v", v)
	}
	if got := infoField(t, p, "replication", "slave0"); !strings.HasPrefix(got, "ip=127.0.0.1,port="+portOf(rs)+",state=online,offset=") {
		t.Errorf("primary's slave0: %q", got)
	}
	if v := p.do("INFO"); !strings.Contains(v.Text(), "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n") {
		t.Errorf("default INFO lacks the replication section: %q", v.Text())
	}
	if !bytes.Equal(scandump(t, p, "f"), scandump(t, r, "f")) {
		t.Error("replica's filter differs from the primary's")
	}
	if a, b := p.do("BF.INFO", "f", "ITEMS"), r.do("BF.INFO", "f", "ITEMS"); a.Int != b.Int {
		t.Errorf("items: primary %v, replica %v", a, b)
	}

	// A cut link continues from the backlog.
	if v := r.do("CLIENT", "KILL", "TYPE", "master"); v.Int != 1 {
		t.Errorf("CLIENT KILL TYPE master = %v", v)
	}
	p.do("BF.ADD", "f", "during-cut")
	waitSynced(t, p, r)
	if got := infoField(t, p, "stats", "sync_partial_ok"); got != "1" {
		t.Errorf("sync_partial_ok after a cut link = %s", got)
	}
	if got := infoField(t, p, "stats", "sync_full"); got != "1" {
		t.Errorf("sync_full after a cut link = %s, want 1 (the first sync only)", got)
	}
	if v := r.do("BF.EXISTS", "f", "during-cut"); v.Int != 1 {
		t.Errorf("after the partial sync: BF.EXISTS = %v", v)
	}

	// Promotion, then the old primary follows the promoted replica with a partial sync.
	oldID := infoField(t, r, "replication", "master_replid")
	if v := r.do("REPLICAOF", "NO", "ONE"); v.Text() != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %v", v)
	}
	if got := infoField(t, r, "replication", "master_replid2"); got != oldID {
		t.Errorf("promoted replica's master_replid2 = %s, want %s", got, oldID)
	}
	if v := r.do("BF.ADD", "f", "on-new-primary"); v.Int != 1 {
		t.Errorf("write on the promoted replica: %v", v)
	}
	if v := p.do("SLAVEOF", "127.0.0.1", portOf(rs)); v.Text() != "OK" {
		t.Fatalf("SLAVEOF: %v", v)
	}
	waitSynced(t, r, p)
	if got := infoField(t, r, "stats", "sync_full"); got != "0" {
		t.Errorf("the promoted replica made %s full syncs, want 0", got)
	}
	if v := p.do("BF.EXISTS", "f", "on-new-primary"); v.Int != 1 {
		t.Errorf("old primary after following the new one: BF.EXISTS = %v", v)
	}
	if !bytes.Equal(scandump(t, p, "f"), scandump(t, r, "f")) {
		t.Error("filters differ after the switch-over")
	}
}

// TestReplicationHostileInput sends a primary garbage on a replica link and absurd PSYNC
// offsets, and makes a replica load a snapshot cut short: clear errors, no crash, nothing lost.
func TestReplicationHostileInput(t *testing.T) {
	ps, p := startReplServer(t)
	p.do("BF.ADD", "f", "a")

	for _, off := range []string{"-5", "99999999999999", "x", "9223372036854775807"} {
		c := dial(t, ps.addr())
		c.do("REPLCONF", "listening-port", "1")
		c.send([]byte("PSYNC"), []byte("?"), []byte(off))
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := readLineFrom(c)
		if off == "x" {
			if err != nil || line != "-ERR value is not an integer or out of range" {
				t.Errorf("PSYNC ? x: %q %v", line, err)
			}
			continue
		}
		if err != nil || !strings.HasPrefix(line, "+FULLRESYNC ") {
			t.Errorf("PSYNC ? %s: %q %v", off, line, err)
		}
		c.nc.Close()
	}
	// A known ID with an offset beyond the stream gets a full sync, not a crash.
	id := infoField(t, p, "replication", "master_replid")
	c := dial(t, ps.addr())
	c.send([]byte("PSYNC"), []byte(id), []byte("99999999999"))
	if line, err := readLineFrom(c); err != nil || !strings.HasPrefix(line, "+FULLRESYNC ") {
		t.Errorf("PSYNC with an offset past the end: %q %v", line, err)
	}
	// Garbage on the link after the sync drops that link only.
	c.nc.Write([]byte("*1\r\n$-7\r\n\x00\xffgarbage\r\n"))
	waitFor(t, func() bool { return infoField(t, p, "replication", "connected_slaves") == "0" })
	if v := p.do("BF.EXISTS", "f", "a"); v.Int != 1 {
		t.Errorf("primary after hostile replicas: %v", v)
	}

	// A fake primary that cuts its snapshot short: the replica keeps its data and retries.
	port, attempts := hostilePrimary(t, fmt.Appendf(nil, "+FULLRESYNC %s 0\r\n$1000\r\n\x89BDSNAP\n", strings.Repeat("a", 40)))
	_, r := startReplServer(t)
	r.do("BF.ADD", "mine", "x")
	r.do("REPLICAOF", "127.0.0.1", port)
	for range 2 {
		select {
		case <-attempts:
		case <-time.After(10 * time.Second):
			t.Fatal("the replica did not retry the sync")
		}
	}
	time.Sleep(100 * time.Millisecond)
	if v := r.do("BF.EXISTS", "mine", "x"); v.Int != 1 {
		t.Errorf("replica lost its data on a truncated snapshot: %v", v)
	}
	if got := infoField(t, r, "replication", "master_link_status"); got != "down" {
		t.Errorf("master_link_status = %q", got)
	}
}

// readLineFrom reads one CRLF line from a raw connection, skipping keep-alive newlines.
func readLineFrom(c *rawClient) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := c.nc.Read(b); err != nil {
			return string(line), err
		}
		if b[0] == '\n' {
			if s := strings.TrimRight(string(line), "\r"); s != "" {
				return s, nil
			}
			line = line[:0]
			continue
		}
		line = append(line, b[0])
	}
}

// TestConfigRewrite checks that CONFIG REWRITE keeps the file's comments, blank lines and
// order, rewrites the settings it holds in place (a setting given on several lines, like save,
// on its first line), appends the changed settings it lacks, drops a replicaof line once the
// server is a primary, and writes a file that reads back to the same settings.
func TestConfigRewrite(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *Config) { c.Dir = dir })
	path := filepath.Join(dir, "bloomd.conf")
	orig := "# top comment\nport 6379\n\n# memory\nmaxmemory 0\nsave 3600 1\nsave 300 100\nreplicaof 127.0.0.1 1\n  # indented comment\nloglevel notice\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	s.configFile = path
	c := dial(t, s.addr())
	for _, kv := range [][2]string{{"maxmemory", "100mb"}, {"save", "60 5"}, {"replica-priority", "7"}} {
		if v := c.do("CONFIG", "SET", kv[0], kv[1]); v.Text() != "OK" {
			t.Fatalf("CONFIG SET %s: %v", kv[0], v)
		}
	}
	if v := c.do("CONFIG", "REWRITE"); v.Text() != "OK" {
		t.Fatalf("CONFIG REWRITE: %v", v)
	}
	got, _ := os.ReadFile(path)
	want := "# top comment\nport 6379\n\n# memory\nmaxmemory 104857600\nsave 60 5\n  # indented comment\nloglevel notice\n" +
		"# Generated by CONFIG REWRITE\ndir " + dir + "\nreplica-priority 7\n"
	if string(got) != want {
		t.Errorf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
	cfg := DefaultConfig()
	if err := ParseConfig(strings.NewReader(string(got)), path, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxMemory != 100<<20 || cfg.Replication.ReplicaPriority != 7 || persist.FormatSave(cfg.Save) != "60 5" || cfg.Dir != dir {
		t.Errorf("the rewritten file reads back as %+v", cfg)
	}
	// Rewriting again changes nothing.
	c.do("CONFIG", "REWRITE")
	if again, _ := os.ReadFile(path); string(again) != string(got) {
		t.Errorf("a second rewrite changed the file:\n%s", again)
	}
}
