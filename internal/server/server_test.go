package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomd/bloom/internal/resp"
)

func TestMaxClients(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxClients = 2 })
	a, b := dial(t, s.addr()), dial(t, s.addr())
	a.do("PING")
	b.do("PING")
	nc, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := readUntilClosed(t, nc); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client: %q", got)
	}
	if v := a.do("INFO", "stats"); !strings.Contains(string(v.Str), "rejected_connections:1\r\n") {
		t.Fatalf("INFO stats: %s", v.Str)
	}
	// CONFIG SET maxclients applies to new connections.
	a.do("CONFIG", "SET", "maxclients", "3")
	if v := dial(t, s.addr()).do("PING"); string(v.Str) != "PONG" {
		t.Fatalf("after raising maxclients: %v", v)
	}
}

func TestIdleTimeout(t *testing.T) { forEachIOMode(t, testIdleTimeout) }

func testIdleTimeout(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Timeout = 1 })
	nc, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	if got := readUntilClosed(t, nc); got != "" {
		t.Fatalf("idle client got %q", got)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 5*time.Second {
		t.Fatalf("idle client closed after %v, want about 1s", d)
	}
}

func TestClientCommands(t *testing.T) { forEachIOMode(t, testClientCommands) }

func testClientCommands(t *testing.T) {
	s := startServer(t, nil)
	a, b := dial(t, s.addr()), dial(t, s.addr())
	a.do("CLIENT", "SETNAME", "alpha")
	b.do("CLIENT", "SETINFO", "LIB-NAME", "mylib")
	idB := b.do("CLIENT", "ID").Int
	list := string(a.do("CLIENT", "LIST").Str)
	if strings.Count(list, "\n") != 2 || !strings.Contains(list, "name=alpha ") || !strings.Contains(list, fmt.Sprintf("id=%d ", idB)) ||
		!strings.Contains(list, "lib-name=mylib ") || !strings.Contains(list, "cmd=client|list") {
		t.Fatalf("CLIENT LIST:\n%s", list)
	}
	if v := a.do("CLIENT", "LIST", "ID", strconv.FormatInt(idB, 10)); strings.Count(string(v.Str), "\n") != 1 {
		t.Fatalf("CLIENT LIST ID: %s", v.Str)
	}
	if v := a.do("CLIENT", "INFO"); !strings.HasPrefix(string(v.Str), "id=") || !strings.Contains(string(v.Str), "name=alpha") {
		t.Fatalf("CLIENT INFO: %s", v.Str)
	}
	if v := a.do("CLIENT", "KILL", "ID", strconv.FormatInt(idB, 10)); v.Int != 1 {
		t.Fatalf("CLIENT KILL ID: %v", v)
	}
	b.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := b.rd.ReadReply(); err == nil {
		t.Fatal("the killed client's connection is still open")
	}
	if v := a.do("CLIENT", "KILL", "SKIPME", "no"); v.Int != 1 {
		t.Fatalf("CLIENT KILL SKIPME no: %v", v)
	}
}

func TestInfoAndCommand(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("BF.ADD", "k", "x")
	c.do("PEXPIRE", "k", "100000")
	info := string(c.do("INFO").Str)
	for _, want := range []string{"# Server\r\n", "redis_version:7.0.15\r\n", "# Clients\r\n", "connected_clients:1\r\n",
		"# Memory\r\n", "used_memory:", "maxmemory_policy:noeviction\r\n", "# Persistence\r\n", "loading:0\r\n",
		"# Stats\r\n", "total_commands_processed:", "# Keyspace\r\n", "db0:keys=1,expires=1,avg_ttl=", "module:name=bf,ver=20628"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	if v := string(c.do("INFO", "memory").Str); strings.Contains(v, "# Server") || !strings.Contains(v, "# Memory") {
		t.Errorf("INFO memory: %s", v)
	}
	n := c.do("COMMAND", "COUNT").Int
	if all := c.do("COMMAND"); int64(len(all.Elems)) != n || n < 40 {
		t.Errorf("COMMAND: %d entries, COMMAND COUNT %d", len(all.Elems), n)
	}
	docs := c.do("COMMAND", "DOCS", "bf.add", "nosuch", "client")
	if len(docs.Elems) != 4 || string(docs.Elems[0].Str) != "bf.add" || !strings.Contains(docs.Elems[1].String(), "Adds an item") ||
		!strings.Contains(docs.Elems[3].String(), "client|setname") {
		t.Errorf("COMMAND DOCS: %v", docs)
	}
	info1 := c.do("COMMAND", "INFO", "get", "nosuch")
	if len(info1.Elems) != 2 || info1.Elems[0].Elems[1].Int != 2 || !info1.Elems[1].Null {
		t.Errorf("COMMAND INFO get nosuch: %v", info1)
	}
	if v := c.do("MODULE", "LIST"); !strings.Contains(v.String(), `"bf"`) {
		t.Errorf("MODULE LIST: %v", v)
	}
	if v := c.do("TIME"); len(v.Elems) != 2 {
		t.Errorf("TIME: %v", v)
	}
}

// TestOneWritePerBatch checks over TCP that a pipelined batch is answered with one write.
func TestOneWritePerBatch(t *testing.T) {
	s := startServer(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	cl := &countingListener{Listener: ln, writes: &writes}
	s.addListener(cl)
	go s.acceptLoop(cl)
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var batch []byte
	for i := range 200 {
		batch = resp.AppendCommand(batch, []byte("BF.ADD"), []byte("k"), []byte(strconv.Itoa(i)))
	}
	if _, err := nc.Write(batch); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(nc, make([]byte, 200*4)); err != nil {
		t.Fatal(err)
	}
	// The batch may arrive in more than one read; each read's commands get one write.
	if w := writes.Load(); w < 1 || w > 3 {
		t.Fatalf("%d writes for a batch of 200 commands", w)
	}
}

type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) { c.writes.Add(1); return c.Conn.Write(p) }

// TestGracefulShutdown checks that Shutdown answers every command already received.
func TestGracefulShutdown(t *testing.T) { forEachIOMode(t, testGracefulShutdown) }

func testGracefulShutdown(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = discardLogger()
	cfg.EventLoops = testLoops
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	s.addListener(ln)
	go s.acceptLoop(ln)
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var batch []byte
	for i := range 5000 {
		batch = resp.AppendCommand(batch, []byte("BF.ADD"), []byte("k"), []byte(strconv.Itoa(i)))
	}
	nc.Write(batch)
	// Wait until the server has started on the batch, then shut down.
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	first := make([]byte, 4)
	if _, err := io.ReadFull(nc, first); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 4999*4 {
		t.Fatalf("after Shutdown the client got %d more bytes, want %d", len(rest), 4999*4)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Fatal("the server still accepts connections after Shutdown")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bloomd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestTLS serves TLS on tls-port next to plain TCP, and talks to it with go-redis and redis-cli.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	cfg := DefaultConfig()
	cfg.Logger = discardLogger()
	cfg.Port, cfg.TLSPort = freePort(t), freePort(t)
	cfg.TLSCertFile, cfg.TLSKeyFile = certFile, keyFile
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(pem)
	tlsAddr := fmt.Sprintf("127.0.0.1:%d", cfg.TLSPort)
	rdb := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	defer rdb.Close()
	ctx := context.Background()
	if ok, err := rdb.BFAdd(ctx, "tls", "x").Result(); err != nil || !ok {
		t.Fatalf("BF.ADD over TLS: %v %v", ok, err)
	}
	plain := dial(t, fmt.Sprintf("127.0.0.1:%d", cfg.Port))
	if v := plain.do("BF.EXISTS", "tls", "x"); v.Int != 1 {
		t.Fatalf("BF.EXISTS over plain TCP: %v", v)
	}
	cli := needProgram(t, "redis-cli")
	out := run(t, nil, cli, "--tls", "--cacert", certFile, "-h", "127.0.0.1", "-p", strconv.Itoa(cfg.TLSPort), "BF.EXISTS", "tls", "x")
	if out != "1\n" {
		t.Fatalf("redis-cli --tls: %q", out)
	}
}

func TestConfig(t *testing.T) {
	cfg, file, err := ParseArgs([]string{"--port", "7000", "--bind", "127.0.0.1", "::1", "--maxmemory=2gb", "--requirepass", "a b"})
	if err != nil || file != "" {
		t.Fatal(err)
	}
	if cfg.Port != 7000 || len(cfg.Bind) != 2 || cfg.MaxMemory != 2<<30 || cfg.Requirepass != "a b" {
		t.Fatalf("ParseArgs: %+v", cfg)
	}
	conf := filepath.Join(t.TempDir(), "bloomd.conf")
	os.WriteFile(conf, []byte("# comment\nport 7001\nmaxmemory 100mb\nrequirepass \"p w\"\ntimeout 30\nloglevel warning\n\nmaxclients 5\n"), 0o644)
	cfg, file, err = ParseArgs([]string{conf, "--port", "7002"})
	if err != nil || file != conf {
		t.Fatal(err)
	}
	if cfg.Port != 7002 || cfg.MaxMemory != 100<<20 || cfg.Requirepass != "p w" || cfg.Timeout != 30 || cfg.LogLevel != "warning" || cfg.MaxClients != 5 {
		t.Fatalf("config file then flags: %+v", cfg)
	}
	for _, args := range [][]string{
		{"--nosuch", "1"}, {"--port"}, {"--port", "99999"}, {"--maxmemory", "lots"}, {"--tls-port", "7003"},
		{"--port", "0"}, {"--loglevel", "chatty"}, {"stray", "file"},
	} {
		if _, _, err := ParseArgs(args); err == nil || !strings.HasPrefix(err.Error(), "server: ") {
			t.Errorf("ParseArgs(%q): %v", args, err)
		}
	}
	// save lines add up as in redis.conf: the first replaces the default, an empty one clears.
	os.WriteFile(conf, []byte("save 3600 1\nsave 300 100\nappendfsync always\ndbfilename f.bdb\n"), 0o644)
	cfg, _, err = ParseArgs([]string{conf})
	if got, _ := cfg.Get("save"); err != nil || got != "3600 1 300 100" || cfg.AppendFsync.String() != "always" || cfg.DBFilename != "f.bdb" {
		t.Errorf("durability settings from a config file: save %q, %+v, %v", got, cfg, err)
	}
	os.WriteFile(conf, []byte("save 3600 1\nsave \"\"\n"), 0o644)
	if cfg, _, err = ParseArgs([]string{conf}); err != nil || len(cfg.Save) != 0 {
		t.Errorf("save \"\" after a rule: %v, %v", cfg.Save, err)
	}
	for _, args := range [][]string{{"--dbfilename", "a/b"}, {"--appendfsync", "sometimes"}, {"--save", "60"}, {"--appendonly", "maybe"}} {
		if _, _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) accepted", args)
		}
	}
	os.WriteFile(conf, []byte("port 7001\nbogus 1\n"), 0o644)
	if _, _, err := ParseArgs([]string{conf}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad config line: %v", err)
	}
	for in, want := range map[string]int64{"0": 0, "100": 100, "1k": 1000, "1kb": 1024, "2mb": 2 << 20, "3GB": 3 << 30, "1g": 1e9} {
		if got, err := parseMemory(in); err != nil || got != want {
			t.Errorf("parseMemory(%q) = %d, %v", in, got, err)
		}
	}
}

// TestPortInUse checks that a taken port is reported naming --port.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := DefaultConfig()
	cfg.Logger = discardLogger()
	cfg.Port = ln.Addr().(*net.TCPAddr).Port
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	err = s.Listen()
	if err == nil || !strings.Contains(err.Error(), "--port") || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("Listen on a taken port: %v", err)
	}
}

// TestEntryMemory checks that a connection's memory of its last entry never outlives the entry:
// another client deletes and re-creates the key, or the key expires.
func TestEntryMemory(t *testing.T) {
	s := startServer(t, nil)
	a, b := dial(t, s.addr()), dial(t, s.addr())
	a.do("BF.RESERVE", "k", "0.01", "100")
	a.do("BF.ADD", "k", "x")
	b.do("DEL", "k")
	b.do("BF.RESERVE", "k", "0.1", "7")
	if v := a.do("BF.INFO", "k", "CAPACITY"); v.Elems[0].Int != 7 {
		t.Fatalf("after another client re-created k: %v", v)
	}
	if v := a.do("BF.EXISTS", "k", "x"); v.Int != 0 {
		t.Fatal("x found in the re-created filter")
	}
	a.do("BF.ADD", "k", "y")
	b.do("PEXPIRE", "k", "1")
	time.Sleep(5 * time.Millisecond)
	if v := a.do("BF.EXISTS", "k", "y"); v.Int != 0 {
		t.Fatal("y found in an expired filter")
	}
	if v := a.do("BF.CARD", "k"); v.Int != 0 {
		t.Fatalf("BF.CARD of an expired filter: %v", v)
	}
}

// TestLargeRepliesSlowReader pipelines BF.SCANDUMP of a 12 MB filter to a client that does not
// read for a while: the server keeps the replies until the socket takes them, runs no further
// commands for that client meanwhile, and serves other clients throughout.
func TestLargeRepliesSlowReader(t *testing.T) { forEachIOMode(t, testLargeRepliesSlowReader) }

func testLargeRepliesSlowReader(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "big", "0.01", "10000000", "NONSCALING")
	c.do("BF.ADD", "big", "x")
	var batch []byte
	for range 4 {
		batch = resp.AppendCommand(batch, []byte("BF.SCANDUMP"), []byte("big"), []byte("1"))
	}
	batch = resp.AppendCommand(batch, []byte("BF.EXISTS"), []byte("big"), []byte("x"))
	c.nc.Write(batch)
	other := dial(t, s.addr())
	time.Sleep(200 * time.Millisecond)
	if v := other.do("PING"); string(v.Str) != "PONG" {
		t.Fatalf("another client during a slow read: %v", v)
	}
	var size int64
	for range 4 {
		_, v := c.read()
		if len(v.Elems) != 2 || len(v.Elems[1].Str) < 11<<20 {
			t.Fatalf("SCANDUMP reply: %d elements", len(v.Elems))
		}
		size = int64(len(v.Elems[1].Str))
	}
	if _, v := c.read(); v.Int != 1 {
		t.Fatalf("BF.EXISTS after the dumps: %v", v)
	}
	t.Logf("4 chunks of %d bytes", size)
}

// failingJournal acknowledges nothing: every wait fails.
type failingJournal struct{}

func (failingJournal) Append([][]byte) func() error {
	return func() error { return fmt.Errorf("disk full") }
}

// TestJournalFailure checks that a write whose journal record cannot be made durable is never
// acknowledged: the client's connection closes without the reply; reads are still answered.
func TestJournalFailure(t *testing.T) { forEachIOMode(t, testJournalFailure) }

func testJournalFailure(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Journal = failingJournal{} })
	c := dial(t, s.addr())
	if v := c.do("BF.EXISTS", "k", "x"); v.Int != 0 {
		t.Fatal(v)
	}
	c.send([]byte("BF.ADD"), []byte("k"), []byte("x"))
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if v, err := c.rd.ReadReply(); err == nil {
		t.Fatalf("a write whose journal failed was answered: %v", v)
	}
}

// TestTimeoutSetAtRunTime checks that CONFIG SET timeout applies to connections already idle.
func TestTimeoutSetAtRunTime(t *testing.T) { forEachIOMode(t, testTimeoutSetAtRunTime) }

func testTimeoutSetAtRunTime(t *testing.T) {
	s := startServer(t, nil)
	idle, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.Write([]byte("PING\r\n"))
	buf := make([]byte, 7)
	if _, err := io.ReadFull(idle, buf); err != nil {
		t.Fatal(err)
	}
	dial(t, s.addr()).do("CONFIG", "SET", "timeout", "1")
	start := time.Now()
	if got := readUntilClosed(t, idle); got != "" {
		t.Fatalf("idle client got %q", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("idle client closed after %v", d)
	}
}

func TestMemoryUsage(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "f", "0.01", "1000")
	if v := c.do("MEMORY", "USAGE", "f"); v.Int != 1480+keyOverhead+1 {
		t.Fatalf("MEMORY USAGE of a filter of Size 1480: %v", v)
	}
	if v := c.do("MEMORY", "USAGE", "nope"); !v.Null {
		t.Fatalf("MEMORY USAGE of a missing key: %v", v)
	}
	if v := c.do("MEMORY", "USAGE", "f", "SAMPLES", "5"); v.Int == 0 {
		t.Fatalf("MEMORY USAGE SAMPLES: %v", v)
	}
}
