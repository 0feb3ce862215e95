package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/procmem"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// The slow-reader tests run bloomd in this process, which is then what grows: its resident
// set (procmem, /proc/self/statm) is measured before and during the load, after the garbage of
// earlier tests was returned to the system. Every load is bounded: at most slowMessages
// messages of 1 MB, and a test stops early once it has seen the process grow past the bound.
const (
	slowMessages = 300
	slowMsgSize  = 1 << 20
	// slowCutBy is the most 1 MB messages after which a reader that never reads must be cut:
	// the limit (32mb for pubsub, 64mb for MONITOR), what the kernel's socket buffers take,
	// and the few messages sent while the connection closes. Redis 7.0.15 cuts a subscriber
	// after about 35.
	slowCutBy = 100
	// slowGrowth bounds what the process may grow by meanwhile: the waiting output (up to the
	// limit, in a buffer up to twice its length while appended to) and the garbage of the
	// messages copied on their way, which the Go runtime collects at twice the live heap
	// (measured: 140-160 MB with a subscriber, 260-290 MB with a monitor; without the limits,
	// the process passes any bound: 1.4 GB after 300 messages).
	slowGrowth = 512 << 20
)

// quietRSS returns the process's resident set once the garbage of earlier work is collected
// and returned to the system.
func quietRSS(t testing.TB) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	rss, err := procmem.RSS()
	if err != nil {
		t.Skipf("no resident set size on this system: %v", err)
	}
	return rss
}

// slowReader dials addr with a small receive buffer, so that the kernel keeps little of what
// the server sends it, and sends cmd, whose first reply it reads; then it never reads again.
func slowReader(t testing.TB, addr string, cmd ...string) *rawClient {
	t.Helper()
	c := dial(t, addr)
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(64 << 10)
	}
	if v := c.do(cmd...); v.IsError() {
		t.Fatalf("%s: %v", cmd[0], v)
	}
	return c
}

// A slowLoad is the load a slow reader faces: send sends message i to the server and returns
// how many clients it reached (PUBLISH's reply), or -1 when it cannot tell.
type slowLoad struct {
	name string
	// reader is the command of the client that never reads.
	reader []string
	send   func(c *rawClient, msg []byte) int
	// cut reports, from another connection, whether the reader is gone.
	cut func(c *rawClient) bool
}

var (
	pubsubLoad = slowLoad{
		name:   "subscriber",
		reader: []string{"SUBSCRIBE", "news"},
		send: func(c *rawClient, msg []byte) int {
			c.send([]byte("PUBLISH"), []byte("news"), msg)
			_, v := c.read()
			return int(v.Int)
		},
		cut: func(c *rawClient) bool { return c.do("PUBSUB", "NUMSUB", "news").Elems[1].Int == 0 },
	}
	monitorLoad = slowLoad{
		name:   "monitor",
		reader: []string{"MONITOR"},
		send: func(c *rawClient, msg []byte) int {
			c.send([]byte("SET"), []byte("k"), msg)
			c.read()
			return -1
		},
		cut: func(c *rawClient) bool { return !strings.Contains(c.do("CLIENT", "LIST").Text(), "flags=O") },
	}
)

// runSlowLoad sends up to slowMessages messages of 1 MB past a reader that never reads, and
// returns after how many the reader was cut (0 if never) and how much the process grew
// (rss measures it; nil for a server in another process). It stops at slowCutBy messages past
// the cut, or once the process grew past slowGrowth.
func runSlowLoad(t testing.TB, addr string, load slowLoad, rss func() int64) (cutAt int, growth int64) {
	t.Helper()
	reader := slowReader(t, addr, load.reader...)
	defer reader.nc.Close()
	c := dial(t, addr)
	defer c.nc.Close()
	msg := bytes.Repeat([]byte("m"), slowMsgSize)
	var base int64
	if rss != nil {
		base = rss()
	}
	for i := 1; i <= slowMessages; i++ {
		n := load.send(c, msg)
		if rss != nil {
			growth = max(growth, rss()-base)
			if growth > slowGrowth {
				return cutAt, growth
			}
		}
		if cutAt == 0 && (n == 0 || n < 0 && i%8 == 0 && load.cut(c)) {
			cutAt = i
		}
		if cutAt != 0 && i >= cutAt+slowCutBy/4 {
			break
		}
	}
	return cutAt, growth
}

// TestSlowReadersCut sends 1 MB messages past a subscriber and a MONITOR client that never
// read, in every I/O mode, and requires bloomd to cut each after a bounded number of messages
// (the subscriber by the pubsub class's default 32mb hard limit, the monitor by bloomd's 64mb
// bound), without growing by more than slowGrowth, to count the disconnections in INFO and to
// log them as Redis does. The subscriber's steps run against redis-server 7.0.15 too, which
// must cut it as well.
func TestSlowReadersCut(t *testing.T) {
	for _, load := range []slowLoad{pubsubLoad, monitorLoad} {
		t.Run(load.name, func(t *testing.T) {
			forEachIOMode(t, func(t *testing.T) {
				var log redistest.Buffer
				s := startServer(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
				cutAt, growth := runSlowLoad(t, s.addr(), load, func() int64 {
					if rss, err := procmem.RSS(); err == nil {
						return rss
					}
					return 0
				})
				quietRSS(t) // for the base of the next test
				t.Logf("cut after %d messages of 1 MB; the process grew by %d MB", cutAt, growth>>20)
				if growth > slowGrowth {
					t.Fatalf("the process grew by %d MB (more than %d MB) with a %s that does not read", growth>>20, slowGrowth>>20, load.name)
				}
				if cutAt == 0 || cutAt > slowCutBy {
					t.Fatalf("the %s was cut after %d messages, want at most %d", load.name, cutAt, slowCutBy)
				}
				c := dial(t, s.addr())
				if got := infoField(t, c, "stats", "client_output_buffer_limit_disconnections"); got != "1" {
					t.Errorf("client_output_buffer_limit_disconnections = %q, want 1", got)
				}
				if !strings.Contains(log.String(), "for overcoming of output buffer limits.") {
					t.Errorf("no log line for the disconnection:\n%s", log.String())
				}
			})
		})
	}
	t.Run("redis", func(t *testing.T) {
		rs := redistest.New(t, nil)
		cutAt, _ := runSlowLoad(t, rs.Addr, pubsubLoad, nil)
		t.Logf("redis-server cut the subscriber after %d messages", cutAt)
		if cutAt == 0 || cutAt > slowCutBy {
			t.Fatalf("redis-server cut the subscriber after %d messages, want at most %d", cutAt, slowCutBy)
		}
	})
}

// clientFields parses a CLIENT LIST line into its fields.
func clientFields(line string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// eventually polls cond every 20 ms for at most 15 s (a bound for a busy machine, not a
// timing claim) and reports whether it became true.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestClientListOutputMemory leaves 1 MB messages unread by a subscriber, under its limits, and
// requires CLIENT LIST to show them as omem (in oll buffers, within tot-mem), as redis-server
// shows them, and INFO's client_recent_max_output_buffer to have seen them.
func TestClientListOutputMemory(t *testing.T) {
	check := func(t *testing.T, addr string, bloomd bool) {
		sub := slowReader(t, addr, "SUBSCRIBE", "news")
		c := dial(t, addr)
		msg := bytes.Repeat([]byte("m"), slowMsgSize)
		for range 12 {
			pubsubLoad.send(c, msg)
		}
		var f map[string]string
		ok := eventually(func() bool {
			f = clientFields(c.do("CLIENT", "LIST", "TYPE", "pubsub").Text())
			omem, _ := strconv.ParseInt(f["omem"], 10, 64)
			return omem >= 2<<20
		})
		if !ok {
			t.Fatalf("CLIENT LIST shows the subscriber with omem=%s after 12 MB it did not read", f["omem"])
		}
		omem, _ := strconv.ParseInt(f["omem"], 10, 64)
		oll, _ := strconv.Atoi(f["oll"])
		tot, _ := strconv.ParseInt(f["tot-mem"], 10, 64)
		if oll < 1 || tot < omem || f["obl"] == "" {
			t.Errorf("CLIENT LIST fields: obl=%s oll=%s omem=%s tot-mem=%s", f["obl"], f["oll"], f["omem"], f["tot-mem"])
		}
		if bloomd {
			var peak int64
			eventually(func() bool {
				peak, _ = strconv.ParseInt(infoField(t, c, "clients", "client_recent_max_output_buffer"), 10, 64)
				return peak >= 2<<20
			})
			if peak < 2<<20 {
				t.Errorf("client_recent_max_output_buffer = %d with %d bytes waiting", peak, omem)
			}
		}
		sub.nc.Close()
	}
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr(), true) })
	t.Run("redis", func(t *testing.T) { check(t, redistest.New(t, nil).Addr, false) })
}

// TestSoftLimitAsRedis sets a pubsub soft limit alone (no hard limit) and leaves a subscriber
// over it: once the soft seconds have passed, with no more messages coming, the server's
// periodic check must cut it, on bloomd in every I/O mode as on redis-server.
func TestSoftLimitAsRedis(t *testing.T) {
	check := func(t *testing.T, addr string) {
		c := dial(t, addr)
		if v := c.do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 2mb 1"); v.Text() != "OK" {
			t.Fatal(v)
		}
		slowReader(t, addr, "SUBSCRIBE", "news")
		msg := bytes.Repeat([]byte("m"), slowMsgSize)
		for range 16 {
			pubsubLoad.send(c, msg)
		}
		if !eventually(func() bool { return pubsubLoad.cut(c) }) {
			t.Fatal("a subscriber over the soft limit for longer than its seconds was not cut")
		}
	}
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr()) })
	t.Run("redis", func(t *testing.T) { check(t, redistest.New(t, nil).Addr) })
}

// TestMonitorIsNormalClass checks that MONITOR clients are of the normal class, as in Redis 7.0:
// CLIENT LIST TYPE normal lists them, and a hard limit set for the normal class cuts one that
// does not read, on bloomd in every I/O mode as on redis-server.
func TestMonitorIsNormalClass(t *testing.T) {
	check := func(t *testing.T, addr string) {
		c := dial(t, addr)
		if v := c.do("CONFIG", "SET", "client-output-buffer-limit", "normal 4mb 0 0"); v.Text() != "OK" {
			t.Fatal(v)
		}
		slowReader(t, addr, "MONITOR")
		if l := c.do("CLIENT", "LIST", "TYPE", "normal").Text(); !strings.Contains(l, "flags=O") {
			t.Fatalf("CLIENT LIST TYPE normal does not list the monitor:\n%s", l)
		}
		msg := bytes.Repeat([]byte("m"), slowMsgSize)
		cut := 0
		for i := 1; i <= 40 && cut == 0; i++ {
			monitorLoad.send(c, msg)
			if monitorLoad.cut(c) {
				cut = i
			}
		}
		if cut == 0 {
			t.Fatal("a MONITOR client over the normal class's hard limit was not cut after 40 MB")
		}
	}
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr()) })
	t.Run("redis", func(t *testing.T) { check(t, redistest.New(t, nil).Addr) })
}

// TestClientOutputBufferLimitConfigAsRedis sends the same CONFIG SET values to bloomd and to
// redis-server and requires the same replies, errors included, and the same CONFIG GET after
// each.
func TestClientOutputBufferLimitConfigAsRedis(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	b, r := dial(t, s.addr()), dial(t, rs.Addr)
	get := func(c *rawClient) string { return c.do("CONFIG", "GET", "client-output-buffer-limit").String() }
	if gb, gr := get(b), get(r); gb != gr {
		t.Fatalf("defaults: bloomd %s, redis %s", gb, gr)
	}
	for _, v := range []string{
		"foo 1 2 3", "master 1 2 3", "normal 1 2", "normal 1x 2 3", "normal 1 2 -3", "normal -1 2 3",
		"normal 1kb 2K 3 pubsub mb '' ''", "normal 1 2 ' 5'", "normal 1 2 0x10", "normal 1 2 2147483648", "",
		"NORMAL 1kb 2K +4", "normal  0 0", "normal mb 5B 0", "normal 1 2 ", "normal 1 2 3 normal 4 5 6",
		"replica 1 2 3", "slave 1g 2gb 3 pubsub 1M 2mb -0", "pubsub 1 2 3 normal 1 2 x",
		"normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60",
	} {
		vb, vr := b.do("CONFIG", "SET", "client-output-buffer-limit", v), r.do("CONFIG", "SET", "client-output-buffer-limit", v)
		if vb.String() != vr.String() {
			t.Errorf("CONFIG SET client-output-buffer-limit %q: bloomd %s, redis %s", v, vb, vr)
		}
		if gb, gr := get(b), get(r); gb != gr {
			t.Errorf("after %q: CONFIG GET: bloomd %s, redis %s", v, gb, gr)
		}
	}
}

// TestClientOutputBufferLimitRewriteAsRedis starts bloomd and redis-server from the same config
// file, changes the setting, rewrites the file with CONFIG REWRITE, and requires the same
// client-output-buffer-limit lines in both files, in the same order.
func TestClientOutputBufferLimitRewriteAsRedis(t *testing.T) {
	redistest.Require(t)
	const conf = "client-output-buffer-limit pubsub 64mb 16mb 90\n"
	lines := func(path string) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for l := range strings.Lines(string(data)) {
			if strings.HasPrefix(l, "client-output-buffer-limit") {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return out
	}
	rs, err := redistest.StartProgram("redis-server", "", func(port int, dir string) []string {
		if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{filepath.Join(dir, "redis.conf"), "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	dir := t.TempDir()
	s := startServer(t, func(c *Config) {
		c.Dir = dir
		if err := ParseConfig(strings.NewReader(conf), "bloomd.conf", c); err != nil {
			t.Fatal(err)
		}
	})
	s.configFile = filepath.Join(dir, "bloomd.conf")
	if err := os.WriteFile(s.configFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	b, r := dial(t, s.addr()), dial(t, rs.Addr)
	for _, c := range []*rawClient{b, r} {
		for _, cmd := range [][]string{{"CONFIG", "SET", "client-output-buffer-limit", "replica 512mb 100000 30 normal 1gb 3kb 0"}, {"CONFIG", "REWRITE"}} {
			if v := c.do(cmd...); v.Text() != "OK" {
				t.Fatalf("%v: %v", cmd, v)
			}
		}
	}
	gb, gr := lines(s.configFile), lines(filepath.Join(rs.Dir, "redis.conf"))
	if strings.Join(gb, "\n") != strings.Join(gr, "\n") {
		t.Errorf("rewritten lines:\nbloomd: %q\nredis:  %q", gb, gr)
	}
	cfg := DefaultConfig()
	f, _ := os.Open(s.configFile)
	defer f.Close()
	if err := ParseConfig(f, s.configFile, &cfg); err != nil || cfg.ClientOutputBufferLimit != s.config().ClientOutputBufferLimit {
		t.Errorf("the rewritten file reads back as %v (%v), want %v", cfg.ClientOutputBufferLimit, err, s.config().ClientOutputBufferLimit)
	}
}

// TestClientOutputBufferLimitConfigFile reads the setting as a config file and the command line
// give it: one class per line or several on one, the classes not named keeping their defaults;
// a bad value stops the start with Redis's reason.
func TestClientOutputBufferLimitConfigFile(t *testing.T) {
	cfg := DefaultConfig()
	conf := "client-output-buffer-limit normal 1mb 512kb 10\nclient-output-buffer-limit pubsub 64mb 16mb 90 replica 1gb 0 0\n"
	if err := ParseConfig(strings.NewReader(conf), "test.conf", &cfg); err != nil {
		t.Fatal(err)
	}
	const want = "normal 1048576 524288 10 slave 1073741824 0 0 pubsub 67108864 16777216 90"
	if got := cfg.ClientOutputBufferLimit.String(); got != want {
		t.Errorf("from the file: %s, want %s", got, want)
	}
	cfg, _, err := ParseArgs([]string{"--client-output-buffer-limit", "pubsub", "1mb", "0", "0"})
	if err != nil || cfg.ClientOutputBufferLimit.String() != "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0" {
		t.Errorf("from the command line: %s, %v", cfg.ClientOutputBufferLimit, err)
	}
	err = ParseConfig(strings.NewReader("client-output-buffer-limit pubsub 1 2\n"), "test.conf", &cfg)
	if err == nil || !strings.Contains(err.Error(), "test.conf line 1: client-output-buffer-limit: Wrong number of arguments") {
		t.Errorf("a bad line: %v", err)
	}
}

// waitClients sends WAIT numreplicas 0 (no timeout) from n new connections to addr, which
// block since the server has no replica, and returns them.
func waitClients(t *testing.T, addr string, n int) []*rawClient {
	var cs []*rawClient
	for range n {
		c := dial(t, addr)
		c.send([]byte("WAIT"), []byte("1"), []byte("0"))
		cs = append(cs, c)
	}
	return cs
}

// TestWaitClientLeaves blocks clients in WAIT and closes them: bloomd must count them in INFO's
// blocked_clients while they wait, as redis-server does, and free each waiter, goroutine and
// all, when its client leaves, in every I/O mode.
func TestWaitClientLeaves(t *testing.T) {
	const n = 60
	check := func(t *testing.T, addr string, bloomd bool) {
		c := dial(t, addr)
		before := runtime.NumGoroutine()
		waiters := waitClients(t, addr, n)
		blocked := func(want string) bool {
			return eventually(func() bool { return infoField(t, c, "clients", "blocked_clients") == want })
		}
		if !blocked(strconv.Itoa(n)) {
			t.Errorf("blocked_clients = %s with %d clients in WAIT", infoField(t, c, "clients", "blocked_clients"), n)
		}
		for _, w := range waiters {
			w.nc.Close()
		}
		if !blocked("0") {
			t.Errorf("blocked_clients = %s after the waiting clients left", infoField(t, c, "clients", "blocked_clients"))
		}
		if bloomd && !eventually(func() bool { return runtime.NumGoroutine() <= before+2 }) {
			t.Errorf("%d goroutines after %d waiting clients left, %d before they came", runtime.NumGoroutine(), n, before)
		}
	}
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr(), true) })
	t.Run("redis", func(t *testing.T) { check(t, redistest.New(t, nil).Addr, false) })
}

// TestWaitWithoutReplicas runs WAIT on a primary that has no replica: it answers 0 when its
// timeout passes, and master_repl_offset stays where it was, on bloomd as on redis-server
// (there is no replica to send REPLCONF GETACK to).
func TestWaitWithoutReplicas(t *testing.T) {
	check := func(t *testing.T, addr string) {
		c := dial(t, addr)
		c.do("SET", "k", "v")
		before := infoField(t, c, "replication", "master_repl_offset")
		for _, args := range [][]string{{"WAIT", "1", "50"}, {"WAIT", "0", "0"}, {"WAIT", "2", "10"}} {
			if v := c.do(args...); v.Int != 0 || v.IsError() {
				t.Errorf("%v = %v, want 0", args, v)
			}
		}
		if after := infoField(t, c, "replication", "master_repl_offset"); after != before {
			t.Errorf("master_repl_offset went from %s to %s with WAIT and no replica", before, after)
		}
	}
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr()) })
	t.Run("redis", func(t *testing.T) { check(t, redistest.New(t, nil).Addr) })
}

// TestReplicaOutputLimit attaches a replica that stops reading after PSYNC's answer and writes
// past the replica class's hard limit (set with CONFIG SET): the primary must disconnect it,
// count it in INFO, and keep no more of the stream for it.
func TestReplicaOutputLimit(t *testing.T) {
	var log redistest.Buffer
	s := startServer(t, func(c *Config) {
		c.Dir = t.TempDir()
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	c := dial(t, s.addr())
	if v := c.do("CONFIG", "SET", "client-output-buffer-limit", "replica 2mb 0 0"); v.Text() != "OK" {
		t.Fatal(v)
	}
	replica := slowReader(t, s.addr(), "PING")
	replica.send([]byte("PSYNC"), []byte("?"), []byte("-1"))
	if line, err := readLineFrom(replica); err != nil || !strings.HasPrefix(line, "+FULLRESYNC") {
		t.Fatalf("PSYNC: %q, %v", line, err)
	}
	if !eventually(func() bool { return infoField(t, c, "replication", "connected_slaves") == "1" }) {
		t.Fatal("the replica did not attach")
	}
	value := bytes.Repeat([]byte("v"), 256<<10)
	for i := 0; i < 64 && infoField(t, c, "replication", "connected_slaves") == "1"; i++ {
		c.send([]byte("SET"), []byte("k"), value)
		c.read()
	}
	if !eventually(func() bool { return infoField(t, c, "replication", "connected_slaves") == "0" }) {
		t.Fatal("a replica 16 MB behind, over its 2mb hard limit, is still attached")
	}
	if got := infoField(t, c, "stats", "client_output_buffer_limit_disconnections"); got != "1" {
		t.Errorf("client_output_buffer_limit_disconnections = %q, want 1", got)
	}
	if !strings.Contains(log.String(), "flags=S") || !strings.Contains(log.String(), "for overcoming of output buffer limits.") {
		t.Errorf("no log line for the replica's disconnection:\n%s", log.String())
	}
}

// TestWaitPipelined sends requests behind a WAIT in the same write, which a connection with its
// own goroutine reads while it waits (to see its client leave): they must be answered after
// WAIT's reply, in order, in every I/O mode and over TLS.
func TestWaitPipelined(t *testing.T) {
	const in = "WAIT 1 100\r\nPING\r\nECHO after\r\nWAIT 1 50\r\nPING\r\n"
	const want = ":0\r\n+PONG\r\n$5\r\nafter\r\n:0\r\n+PONG\r\n"
	check := func(t *testing.T, nc net.Conn) {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(nc, in); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(nc, got); err != nil || string(got) != want {
			t.Fatalf("replies %q, %v; want %q", got, err, want)
		}
	}
	forEachIOMode(t, func(t *testing.T) { check(t, dial(t, startServer(t, nil).addr()).nc) })
	t.Run("tls", func(t *testing.T) {
		dir := t.TempDir()
		certFile, keyFile := selfSigned(t, dir)
		s := startServer(t, func(c *Config) { c.TLSCertFile, c.TLSKeyFile = certFile, keyFile })
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
		if err := s.addListener(ln); err != nil {
			t.Fatal(err)
		}
		go s.acceptLoop(ln)
		nc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		check(t, nc)
		// A TLS client that leaves while it waits frees its waiter too.
		c := dial(t, s.addr())
		io.WriteString(nc, "WAIT 1 0\r\n")
		if !eventually(func() bool { return infoField(t, c, "clients", "blocked_clients") == "1" }) {
			t.Fatal("the TLS client's WAIT is not counted in blocked_clients")
		}
		nc.Close()
		if !eventually(func() bool { return infoField(t, c, "clients", "blocked_clients") == "0" }) {
			t.Fatal("the TLS client left, but its WAIT still counts in blocked_clients")
		}
	})
}

// TestLargeReplyOverNormalLimit gives the normal class a 100kb hard limit and asks for a 200 KB
// reply: the client is closed rather than answered, and the request pipelined behind it is not
// run, on bloomd in every I/O mode as on redis-server.
func TestLargeReplyOverNormalLimit(t *testing.T) {
	check := func(t *testing.T, addr string) {
		admin := dial(t, addr)
		if v := admin.do("CONFIG", "SET", "client-output-buffer-limit", "normal 100kb 0 0"); v.Text() != "OK" {
			t.Fatal(v)
		}
		defer admin.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
		c := dial(t, addr)
		in := resp.AppendCommand(nil, []byte("ECHO"), bytes.Repeat([]byte("e"), 200<<10))
		in = resp.AppendCommand(in, []byte("SET"), []byte("after"), []byte("1"))
		c.nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.nc.Write(in); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c.nc) // until the server closes: EOF, or a reset for unread input
		if err != nil && !errors.Is(err, syscall.ECONNRESET) || len(got) >= 200<<10 {
			t.Fatalf("read %d bytes, %v; want the connection closed before the whole reply", len(got), err)
		}
		if v := admin.do("EXISTS", "after"); v.Int != 0 {
			t.Error("the request after the one whose reply passed the limit ran")
		}
	}
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr()) })
	t.Run("redis", func(t *testing.T) { check(t, redistest.New(t, nil).Addr) })
}
